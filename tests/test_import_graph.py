"""envforge's import graph has no cycle (issue 26), counting every import: at module level,
inside functions and under TYPE_CHECKING, relative ones resolved, and a package's
``__init__`` as imported with any of its modules. import-linter's contracts say which layer
may import which; this says that no module reaches itself, however the imports are hidden.

A module's own packages are not counted as its imports: Python starts them before it runs a
line of the module, so they cannot wait on it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "envforge"

Graph = dict[str, set[str]]


def modules(root: Path) -> dict[str, tuple[Path, bool]]:
    """Dotted name -> (file, whether it is a package's ``__init__``), for the package at
    ``root``."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        found[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return found


def _imported(node: ast.AST, package: str) -> Iterator[str]:
    """The names one import statement may load: ``from a import b`` is ``a`` or ``a.b``."""
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
    elif isinstance(node, ast.ImportFrom):
        if node.level:
            base = package.split(".")[:len(package.split(".")) - node.level + 1]
            module = ".".join([*base, *([node.module] if node.module else [])])
        else:
            module = node.module or ""
        yield module
        yield from (f"{module}.{alias.name}" for alias in node.names)


def import_graph(root: Path) -> Graph:
    """Each module -> the modules of the package it imports (and their packages)."""
    found = modules(root)
    graph: Graph = {name: set() for name in found}
    for name, (path, is_package) in found.items():
        package = name if is_package else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            for target in _imported(node, package):
                while target and target not in found:  # a name inside a module: the module
                    target = target.rpartition(".")[0]
                parts = target.split(".") if target else []
                for depth in range(1, len(parts) + 1):
                    module = ".".join(parts[:depth])
                    if module in found and module != name and not name.startswith(module + "."):
                        graph[name].add(module)
    return graph


def cycles(graph: Graph) -> list[list[str]]:
    """One cycle (a -> b -> ... -> a) per strongly connected component of more than one
    module or a module importing itself, by Tarjan's algorithm without recursion."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            child = next(edges, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1 or node in graph[node]:
                    components.append(component)
    return [_path_in(graph, component) for component in components]


def _path_in(graph: Graph, component: set[str]) -> list[str]:
    """The shortest cycle through the component's first module, by breadth-first search."""
    first = min(component)
    came_from: dict[str, str] = {}
    frontier = [first]
    while frontier:
        following = []
        for node in frontier:
            for child in sorted(graph[node] & component):
                if child == first:
                    path = [node]
                    while path[-1] != first:
                        path.append(came_from[path[-1]])
                    return [*reversed(path), first]
                if child not in came_from:
                    came_from[child] = node
                    following.append(child)
        frontier = following
    raise AssertionError(f"no cycle in {sorted(component)}")


def test_envforge_imports_no_module_back() -> None:
    found = cycles(import_graph(PACKAGE))
    assert found == [], "import cycles: " + "; ".join(" -> ".join(c) for c in found)


def _package(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / "pkg" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root / "pkg"


def test_a_cycle_hidden_in_a_function_or_under_type_checking_is_named(tmp_path: Path) -> None:
    root = _package(tmp_path, {
        "__init__.py": "",
        "a.py": "def f():\n    from pkg.b import g\n",
        "b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .c import C\n",
        "c.py": "import pkg.a\n",
        "d.py": "from pkg import a\n",
    })
    assert cycles(import_graph(root)) == [["pkg.a", "pkg.b", "pkg.c", "pkg.a"]]


def test_a_package_counts_as_imported_with_its_modules(tmp_path: Path) -> None:
    """``pkg.sub.leaf`` runs ``pkg/sub/__init__.py`` first: an import back from there is a
    cycle; the module's own package, started before it, is not."""
    root = _package(tmp_path, {
        "__init__.py": "",
        "sub/__init__.py": "from pkg.sub.leaf import X\n",
        "sub/leaf.py": "from pkg.sub.other import Y\nX = 1\n",
        "sub/other.py": "Y = 2\n",
        "top.py": "from pkg.sub.leaf import X\n",
    })
    assert cycles(import_graph(root)) == []
    (root / "sub" / "other.py").write_text("from pkg.top import X\nY = 2\n", encoding="utf-8")
    assert cycles(import_graph(root)) == [["pkg.sub", "pkg.sub.leaf", "pkg.sub.other",
                                            "pkg.top", "pkg.sub"]]
