"""What a repository's own code (its .py files, and its notebooks' code cells) tells init, read
as text and never run.

Whether it is Python 3: envforge provisions Python 3 only, and Python 2 code (DeepMoji's
``ur'[0-9]+'``, a ``print x`` statement) fails when it is imported, whatever the environment
holds; what does not parse for the proposed Python is said, so the user learns it before the
first run. And what it imports (a file that does not parse, line by line: Python 2 code
still needs what it imports), and which file names it has: the test runner its tests need
(``import pytest``, a ``conftest.py``) where no requirement names it."""

from __future__ import annotations

import ast
import functools
import os
import re
import stat
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeGuard

from envforge.importers import Imported
from envforge.importers.installcmds import read_install_commands
from envforge.importers.notebooks import (
    Cells,
    NotebookSource,
    code_cells,
    notebook_source,
    shell_commands,
)
from envforge.inputfile import DEPENDENCY_LIMIT, NOTEBOOK_LIMIT

MAX_FILES = 500  # a repository's own modules; more is vendored code or data
_SKIPPED_FOLDERS = {"node_modules", "site-packages", "__pycache__"}


@dataclass(frozen=True)
class CodeScan:
    files: int  # .py files and notebooks read
    failing: tuple[tuple[str, int, str], ...]  # (path, line, message) that do not parse
    # each top-level module imported (absolute imports) -> where: "path:line"
    imports: Mapping[str, str] = field(default_factory=dict)
    named: Mapping[str, str] = field(default_factory=dict)  # file name -> its first path
    # each watched dotted name the code uses (``scipy.misc.imread``, however imported or
    # aliased: ``from scipy import misc; misc.imread``) -> where first: "path:line"
    uses: Mapping[str, str] = field(default_factory=dict)
    # top-level module names the repository defines itself: a .py file's stem outside a
    # package (a script's folder is on sys.path), a package whose folder is in no package
    local: frozenset[str] = frozenset()
    # "path:line" of each ``raise StopIteration`` a generator's own body makes (PEP 479)
    generator_stops: tuple[str, ...] = ()
    # each module imported only inside functions nothing in the repository names (a
    # library's hook for a framework it does not need: tensorboardX's ``prepare_theano``)
    # -> "path:line, in FUNCTION"
    uncalled: Mapping[str, str] = field(default_factory=dict)
    # each module imported only inside functions, under an ``if`` there: a feature the code
    # turns on when asked (NVlabs/SPADE's ``if self.tf_log: import tensorflow``, its
    # TensorBoard logging flag) -> "path:line, under `if TEST:`"
    optional: Mapping[str, str] = field(default_factory=dict)
    notebooks: tuple[str, ...] = ()  # of ``files``, the Jupyter notebooks read: their paths
    # top-level folders holding .py files and no __init__.py: run from the root, the code
    # imports them as namespace packages (PEP 420: clovaai's ``from modules.transformation``)
    namespaces: frozenset[str] = frozenset()
    # each module of the repository's own packages that the code imports and the repository
    # lacks (a git submodule, or code its README copies in by hand: NVlabs/SPADE's
    # ``models.networks.sync_batchnorm``) -> "path:line"
    absent: Mapping[str, str] = field(default_factory=dict)

    def first_imported(self, modules: Iterable[str]) -> str | None:
        """The first of ``modules`` the code imports that is none of its own."""
        return next((m for m in modules if m in self.imports and m not in self.local), None)

    def summary(self, python: str) -> str | None:
        """One line for the spec's comment and init's report; None when all parse."""
        if not self.failing:
            return None
        path, line, message = self.failing[0]
        kinds = ".py files and notebooks" if self.notebooks else ".py files"
        return (f"{len(self.failing)} of {self.files} {kinds} do not parse as Python "
                f"{python} (first: {path}:{line}: {message}): Python 2 code? envforge "
                "provisions Python 3 only; port it (2to3) before it runs")


def scan_code(root: Path, python: tuple[int, int],
              watch: frozenset[str] = frozenset()) -> CodeScan:
    """The repository's ``.py`` files and notebooks (its own: hidden folders, installed
    packages and links are not followed; at most MAX_FILES, each of at most DEPENDENCY_LIMIT
    as a dependency file, a notebook NOTEBOOK_LIMIT) parsed for ``python``; the uses of each
    ``watch`` name found."""
    failing: list[tuple[str, int, str]] = []
    imports: dict[str, str] = {}
    named: dict[str, str] = {}
    uses: dict[str, str] = {}
    local: set[str] = set()
    namespaces: set[str] = set()
    stops: list[str] = []
    # module -> (where, its function, the test of the ``if`` around it in that function)
    sites: dict[str, list[tuple[str, str | None, str | None]]] = {}
    # (module, the importing file's folder) -> where first: each checked once for ``absent``
    dotted_imports: dict[tuple[str, Path], str] = {}
    names: set[str] = set()  # every identifier the code names (Name ids, attributes)
    read = 0
    notebooks: list[str] = []
    for path in _modules(root):
        where = path.relative_to(root).as_posix()
        notebook = None
        if path.suffix == ".ipynb":  # no module: its code is read, its name is no import
            cells = _notebook_cells(path)
            if cells is None:
                continue
            notebook = notebook_source(cells)
            source = notebook.source
            notebooks.append(where)
        else:
            local.update(_top_level(root, path))  # the repository's module, read or not
            parts = path.relative_to(root).parts
            if len(parts) > 1 and not (root / parts[0] / "__init__.py").is_file():
                namespaces.add(parts[0])
            read_source = _read(path)
            if read_source is None:
                continue
            source = read_source
            named.setdefault(path.name, where)
        read += 1
        at = _placer(where, notebook)
        tree = _parsed(source, python, where, failing)
        if tree is None:
            if notebook is not None:  # the cell and its line, as the notebook shows them
                _, line, message = failing[-1]
                cell, line = notebook.where(line)
                failing[-1] = (f"{where}:cell {cell}", line, message)
            names.update(w.decode("ascii") for w in _WORD.findall(source))
            for dotted, line in _imported_by_line(source):
                imports.setdefault(dotted.partition(".")[0], at(line))
                sites.setdefault(dotted.partition(".")[0], []).append((at(line), None, None))
                name = _watched(dotted, watch)
                if name is not None:
                    uses.setdefault(name, at(line))
            continue
        for dotted, line, function, guard in _import_sites(tree):
            module = dotted.partition(".")[0]
            imports.setdefault(module, at(line))
            sites.setdefault(module, []).append((at(line), function, guard))
            if "." in dotted:
                dotted_imports.setdefault((dotted, path.parent), at(line))
        names.update(_named_identifiers(tree))
        for name, line in _used(tree, watch) if watch else ():
            uses.setdefault(name, at(line))
        stops += (at(line) for line in generator_stops(tree))
    uncalled = {module: f"{found[0][0]}, in {found[0][1]}"
                for module, found in sites.items()
                if all(function is not None and function not in names
                       and not _special(function) for _, function, _ in found)}
    optional = {module: f"{found[0][0]}, under `if {found[0][2]}:`"
                for module, found in sites.items()
                if all(function is not None and guard is not None
                       for _, function, guard in found)}
    absent: dict[str, str] = {}
    for (dotted, folder), where in dotted_imports.items():
        top = dotted.partition(".")[0]
        bases = [base for base in {root, folder} if _own_folder(base / top)]
        if top in local and dotted not in absent and bases \
                and not any(_holds(base, dotted) for base in bases):
            absent[dotted] = where
    return CodeScan(read, tuple(failing), imports, named, uses, frozenset(local),
                    tuple(stops), uncalled, optional, tuple(notebooks), frozenset(namespaces),
                    absent)


def _placer(where: str, notebook: NotebookSource | None) -> Callable[[int], str]:
    """A line's place as the reader finds it: ``path:line``, a notebook's ``path:cell N,
    line M``."""
    if notebook is None:
        return lambda line: f"{where}:{line}"

    def place(line: int) -> str:
        cell, in_cell = notebook.where(line)
        return f"{where}:cell {cell}, line {in_cell}"
    return place


_WORD = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")


ImportSite = tuple[str, int, str | None, str | None]


def _import_sites(tree: ast.Module) -> Iterator[ImportSite]:
    """(module, line, the outermost function around it or None, the test of the innermost
    ``if`` around it inside that function or None) of each absolute import, nested ones too
    (a test's own), in the file's order: ``import a.b.c`` and ``from a.b.c import x`` name
    ``a.b.c`` (``from a.b import c`` may import a name, not a module: ``a.b``)."""
    def walk(node: ast.AST, function: str | None, guard: str | None) -> Iterator[ImportSite]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import):
                for alias in child.names:
                    yield alias.name, child.lineno, function, guard
            elif isinstance(child, ast.ImportFrom) and child.level == 0 and child.module:
                yield child.module, child.lineno, function, guard
            inner = child.name if function is None and isinstance(
                child, (ast.FunctionDef, ast.AsyncFunctionDef)) else function
            within = guard
            if inner is not None and isinstance(child, ast.If):
                within = _shown(child.test)
            yield from walk(child, inner, within)
    return walk(tree, None, None)


def _holds(base: Path, dotted: str) -> bool:
    """Whether ``base``, whose folder is the module's top-level package, holds the module:
    each part a folder or, for the last, any file of its name (``x.py``, an extension's
    ``x.pyx`` or ``x.c`` not built yet, a built ``x.*.so``)."""
    parts = dotted.split(".")
    folder = base / parts[0]
    for part in parts[1:]:
        if (folder / part).is_symlink():
            return True  # a link out of the repository is not followed: not judged
        if (folder / part).is_dir():
            folder = folder / part
            continue
        return any(p.name.partition(".")[0] == part for p in folder.glob(f"{part}.*"))
    return True


def _own_folder(path: Path) -> bool:
    """A folder of the repository's own: a link is not followed (it may lead out of it)."""
    return path.is_dir() and not path.is_symlink()


def _special(function: str) -> bool:
    """A dunder method (``__init__``, ``__call__``): Python calls it, no code names it."""
    return function.startswith("__") and function.endswith("__") and len(function) > 4


def _shown(test: ast.expr) -> str:
    """An ``if``'s test as the report quotes it: its source, cut at 60 characters."""
    text = ast.unparse(test)
    return text if len(text) <= 60 else text[:57] + "..."


def _named_identifiers(tree: ast.Module) -> Iterator[str]:
    """Every name the code refers to: a call, a reference, an attribute, a string (a
    registry or ``__all__`` that names a function), but not a definition's own name."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            yield node.id
        elif isinstance(node, ast.Attribute):
            yield node.attr
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and node.value.isidentifier():
            yield node.value


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def generator_stops(tree: ast.Module) -> Iterator[int]:
    """The line of each ``raise StopIteration`` (outside any ``try``, which may catch it) in
    a generator's own body, or in a function of the module a generator calls by its name
    (``self._load_random_shard()``): from Python 3.7 it ends the generator with RuntimeError
    ("generator raised StopIteration", PEP 479), where before it ended the iteration
    (allenai/bilm-tf's data.py:358, in a method its generator ``get_sentence`` calls: four
    of its tests). An iterator's ``__next__`` (Python 2's ``next``) raises it by protocol; a
    module that imports ``generator_stop`` from ``__future__`` already runs so, and is not
    read."""
    if any(isinstance(node, ast.ImportFrom) and node.module == "__future__"
           and any(a.name == "generator_stop" for a in node.names) for node in tree.body):
        return
    generators: list[list[ast.AST]] = []
    raisers: dict[str, list[int]] = {}  # a function that is no generator -> its raises
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            own = list(_own_nodes(node))
            raised = [n.lineno for n in own if _raises_stop(n)]
            if any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in own):
                generators.append(own)
                found.update(raised)
            elif raised and node.name not in ("__next__", "next"):
                raisers.setdefault(node.name, []).extend(raised)
    for own in generators:
        for node in own:
            if isinstance(node, ast.Call):
                called = node.func.attr if isinstance(node.func, ast.Attribute) else \
                    node.func.id if isinstance(node.func, ast.Name) else ""
                found.update(raisers.get(called, ()) if called else ())
    yield from sorted(found)


def _own_nodes(function: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[ast.AST]:
    """The nodes of a function's own body: not of the functions, lambdas and classes it
    defines, nor under a ``try`` statement."""
    todo: list[ast.AST] = list(function.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (*_SCOPES, ast.Try)):
            continue
        yield node
        todo.extend(ast.iter_child_nodes(node))


def _raises_stop(node: ast.AST) -> TypeGuard[ast.Raise]:
    if not isinstance(node, ast.Raise) or node.exc is None:
        return False
    exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
    return isinstance(exc, ast.Name) and exc.id == "StopIteration"


def _parsed(source: bytes, python: tuple[int, int], where: str,
            failing: list[tuple[str, int, str]]) -> ast.Module | None:
    """The file's tree, or None with why it does not parse added to ``failing``."""
    tree: ast.Module | None
    try:
        tree = _parse(source, python)
    except SyntaxError as exc:
        # CPython's own check of the form below is wrong both ways from one release to the
        # next: the tree without the proposed grammar, and the form checked here instead
        tree = _parse_or_none(source) if exc.msg.startswith(_PARENTHESIZED) else None
        if tree is None:
            failing.append((where, exc.lineno or 0, exc.msg))
            return None
    except (ValueError, RecursionError, MemoryError) as exc:  # a NUL byte; nesting deeper
        # than the parser goes (a 1 MiB file can make it raise either)
        failing.append((where, 0, str(exc) or type(exc).__name__))
        return None
    line = _parenthesized_managers(tree, source) if python < (3, 9) else None
    if line is not None:
        failing.append((where, line, f"{_PARENTHESIZED} in Python 3.9 and greater"))
        return None
    return tree


def _parse(source: bytes, python: tuple[int, int] | None) -> ast.Module:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # old code's invalid escapes: SyntaxWarning
        return ast.parse(source, feature_version=python)


def _parse_or_none(source: bytes) -> ast.Module | None:
    try:
        return _parse(source, None)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


# Parenthesized context managers (`with (open(a) as f, open(b) as g):`) are Python 3.9's.
# CPython's feature_version check of them came in 3.10.6 and 3.11 after 3.11.0 (gh-94949:
# Windows' CPython 3.11.0 accepts them for 3.7), and until 3.12.3 it also refused a context
# manager that is only a parenthesized expression (`with (self.assertRaises(E)):`, valid
# since Python 2; gh-115881: google/dopamine's tests were named Python 2 code).
_PARENTHESIZED = "Parenthesized context managers are only supported"


def _parenthesized_managers(tree: ast.Module, source: bytes) -> int | None:
    """The line of the first ``with`` whose items parentheses enclose, 3.9's form: one whose
    last item's target (or a second item's expression) a ``)`` or ``,`` closes. ``with
    (expr):`` and ``with (expr) as x:`` are an expression in parentheses, any Python's."""
    if b"with" not in source:
        return None
    lines = source.splitlines()  # ast's columns count UTF-8 bytes
    for node in ast.walk(tree):
        if not isinstance(node, (ast.With, ast.AsyncWith)):
            continue
        last = node.items[-1]
        if len(node.items) == 1 and last.optional_vars is None:
            continue
        end = last.optional_vars or last.context_expr
        rest = lines[(end.end_lineno or 1) - 1][end.end_col_offset or 0:].lstrip()
        if rest[:1] in (b")", b","):
            return node.lineno
    return None


def _top_level(root: Path, path: Path) -> list[str]:
    """The top-level module ``path`` makes importable: its stem where its folder is no
    package, else the outermost package holding it (``utils/gym/prng.py`` in the package
    ``utils``: ``utils``, not ``gym``)."""
    folder = path.parent
    if not (folder / "__init__.py").is_file():
        return [path.stem]
    while folder != root and (folder.parent / "__init__.py").is_file():
        folder = folder.parent
    return [folder.name]


def _watched(dotted: str, watch: frozenset[str]) -> str | None:
    """The watched name ``dotted`` is or lies in (``sklearn.cross_validation`` for
    ``sklearn.cross_validation.train_test_split``: a removed module's names went with it)."""
    parts = dotted.split(".")
    return next((name for name in (".".join(parts[:n]) for n in range(1, len(parts) + 1))
                 if name in watch), None)


def _used(tree: ast.Module, watch: frozenset[str]) -> Iterator[tuple[str, int]]:
    """(watched dotted name, line) of each use: imported by name (or from a watched
    module), or reached as an attribute of a name the file's imports bind (aliases
    followed, not assignments). A watched name written ``NAME()`` is used only where it is
    called: Keras 1's ``merge([...])`` function, where ``keras.layers.merge`` is a module
    later releases still have."""
    bound: dict[str, str] = {}  # a local name -> the dotted name it stands for
    guarded = _with_alternative(tree)
    for node in ast.walk(tree):
        imported: list[str] = []
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Import):
            for alias in node.names:
                imported.append(alias.name)
                if alias.asname:
                    bound[alias.asname] = alias.name
                else:
                    root = alias.name.partition(".")[0]
                    bound[root] = root
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                bound[alias.asname or alias.name] = full
                imported.append(full)
        if id(node) in guarded:
            continue  # bound, but no use: the other branch imports the name from elsewhere
        for full in imported:
            name = _watched(full, watch)
            if name is not None:
                yield name, line
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            dotted = _dotted(node, bound)
            name = _watched(dotted, watch) if dotted is not None else None
        elif isinstance(node, ast.Call):
            called = _dotted(node.func, bound)
            name = f"{called}()" if called is not None and f"{called}()" in watch else None
        else:
            continue
        if name is not None:
            yield name, node.lineno


def _with_alternative(tree: ast.Module) -> set[int]:
    """The imports (by ``id``) that have an alternative: an ``if``/``else`` or a ``try`` and
    its ``except`` whose other branch imports the same name, of which only one runs (Python's
    reference, "The if statement" and "The try statement"). segmentation_models v0.2.1's
    ``if StrictVersion(keras.__version__) < StrictVersion('2.2.0'): from
    keras.applications.imagenet_utils import _obtain_input_shape`` ``else: from
    keras_applications...``: counted as a use, it capped Keras below 2.2.1, which its
    ``keras_applications>=1.0.7`` rules out, and the draft did not resolve."""
    guarded: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            branches = [node.body, node.orelse]
        elif isinstance(node, ast.Try):
            branches = [node.body, *(handler.body for handler in node.handlers)]
        else:
            continue
        binding = [{id(i): _bound_names(i) for i in branch
                    if isinstance(i, (ast.Import, ast.ImportFrom))} for branch in branches]
        for k, imports in enumerate(binding):
            elsewhere = {name for j, other in enumerate(binding) if j != k
                         for names in other.values() for name in names}
            guarded |= {key for key, names in imports.items() if names & elsewhere}
    return guarded


def _bound_names(node: ast.Import | ast.ImportFrom) -> set[str]:
    return {alias.asname or alias.name.partition(".")[0] for alias in node.names}


def _dotted(expr: ast.expr, bound: dict[str, str]) -> str | None:
    """The dotted name an expression of names and attributes stands for, through the
    file's import bindings; None for anything else."""
    attributes: list[str] = []
    while isinstance(expr, ast.Attribute):
        attributes.append(expr.attr)
        expr = expr.value
    if not isinstance(expr, ast.Name) or expr.id not in bound:
        return None
    return ".".join([bound[expr.id], *reversed(attributes)])


_IMPORT_LINE = re.compile(
    rb"^[ \t]*(?:import[ \t]+([\w. \t,]+)|from[ \t]+([\w.]+)[ \t]+import\b)", re.MULTILINE)


def _imported_by_line(source: bytes) -> Iterator[tuple[str, int]]:
    """(dotted name, line) of each absolute import statement of a file that does not parse
    (Python 2 code: ``print x`` beside its imports), read line by line as the parser
    cannot: what Python 2 code needs installed is still what it imports, and the names it
    imports (``from theano.tensor.signal import downsample``: ``…signal.downsample``) are
    what a port of it will use."""
    line, at = 1, 0
    for match in _IMPORT_LINE.finditer(source):
        line += source.count(b"\n", at, match.start())
        at = match.start()
        if match[1] is not None:
            names = [w.split()[0] for w in match[1].split(b",") if w.split()]  # ``a.b as c``
        else:
            module = match[2]
            rest = source[match.end():].split(b"\n", 1)[0].split(b"#", 1)[0]
            items = [w.split()[0] for w in rest.strip(b" \t()\\\r").split(b",") if w.split()]
            names = [module + b"." + item for item in items if item != b"*"] or [module]
        for name in names:
            dotted = name.decode("ascii", "replace")
            if all(part.isidentifier() for part in dotted.split(".")):
                yield dotted, line


def notebook_installs(root: Path) -> tuple[Imported, tuple[str, ...]]:
    """What the repository's notebooks install with ``!pip install`` (or ``%pip``), each from
    its cell and line (a Colab notebook's only record of its stack), and the notebooks that
    do; read, never run."""
    out = Imported()
    named: list[str] = []
    for path in _modules(root):
        cells = _notebook_cells(path) if path.suffix == ".ipynb" else None
        if cells is None:
            continue
        where = path.relative_to(root).as_posix()
        before = len(out.requirements)
        for command, cell, line in shell_commands(cells):
            read_install_commands(command, f"{where}:cell {cell}, line {line}", out)
        if len(out.requirements) > before:
            named.append(where)
    return out, tuple(named)


def _read(path: Path) -> bytes | None:
    """A file's bytes where it is a regular file (a link is not followed; a FIFO would block
    the read) within its limit: a module's as a dependency file's, a notebook's, which
    carries its outputs, larger."""
    limit = NOTEBOOK_LIMIT if path.suffix == ".ipynb" else DEPENDENCY_LIMIT
    try:
        st = path.lstat()
        if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
            return None
        return path.read_bytes()
    except OSError:
        return None


def _notebook_cells(path: Path) -> Cells | None:
    """A notebook's code cells, read and parsed once for each version of the file: init
    reads a notebook for what it installs and for what it imports, once or twice (a Python
    proposed, then another)."""
    try:
        st = path.lstat()
    except OSError:
        return None
    return _cells_of(path, st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=256)
def _cells_of(path: Path, _mtime_ns: int, _size: int) -> Cells | None:
    data = _read(path)
    return None if data is None else code_cells(data)


def _modules(root: Path) -> list[Path]:
    """The first MAX_FILES ``.py`` and ``.ipynb`` paths, folder by folder."""
    found: list[Path] = []
    for folder, subfolders, names in os.walk(root):  # links to folders are not followed
        subfolders[:] = sorted(d for d in subfolders
                               if not d.startswith(".") and d not in _SKIPPED_FOLDERS)
        found += [Path(folder) / n for n in sorted(names) if n.endswith((".py", ".ipynb"))]
        if len(found) >= MAX_FILES:
            break
    return found[:MAX_FILES]
