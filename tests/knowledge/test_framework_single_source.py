"""A framework lives in its pack: no registered pack's name (``theano``) is written in core
code, anywhere outside envforge/packs/.

Code is what the interpreter reads: identifiers (names, attributes, functions, classes,
arguments, keywords, imported modules) and string literals that are not docstrings, f-string
pieces included. Docstrings and comments are prose and may name a framework as an example.
The core asks the registry (``envforge.packs``) and the pack's hooks instead
(``FrameworkPack`` in envforge/packs/protocol.py); a new framework then touches no core file.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.testing.packs import REGISTRY

PACKAGE = Path(__file__).resolve().parents[2] / "envforge"
PACKS_DIR = PACKAGE / "packs"

# (file relative to envforge/, why it names a framework for good). Small on purpose.
ALLOWED: dict[str, str] = {
    "specdoc.py": "the spec reference's examples are this repository's own specs "
                  "(specs/theano-cpu.toml, `Theano-PyMC 1.0.5`): documentation, printed as is",
}

# Issue 12, not moved yet: file -> how many of its lines name a framework today. A count
# may only go down: lower it (delete the line at 0) when a use moves behind a hook; a file
# or a line more fails. What each still needs is said beside it.
NOT_YET_MOVED: dict[str, int] = {
    "envlayout.py": 1,  # COMPILEDIR_IN_ENV's value, in every lock's flags (noop.py reads it)
}


def _names() -> re.Pattern[str]:
    return re.compile("|".join(map(re.escape, sorted(REGISTRY.names))), re.IGNORECASE)


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) \
                and node.body and isinstance(node.body[0], ast.Expr) \
                and isinstance(node.body[0].value, ast.Constant):
            found.add(id(node.body[0].value))
    return found


def _words(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, text) of every identifier and non-docstring string literal."""
    docs = _docstrings(tree)
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        match node:
            case ast.Constant(value=str(text)) if id(node) not in docs:
                found.append((node.lineno, text))
            case ast.Name(id=text) | ast.Attribute(attr=text) | ast.arg(arg=text):
                found.append((node.lineno, text))
            case ast.FunctionDef(name=text) | ast.AsyncFunctionDef(name=text) | \
                    ast.ClassDef(name=text):
                found.append((node.lineno, text))
            case ast.keyword(arg=str(text)):
                found.append((node.lineno, text))
            case ast.ImportFrom(module=str(text), names=aliases):
                found += [(node.lineno, text), *((node.lineno, a.name) for a in aliases)]
            case ast.Import(names=aliases):
                found += [(node.lineno, alias.name) for alias in aliases]
    return found


def offences(source: str, names: re.Pattern[str] | None = None) -> list[tuple[int, str]]:
    """(line, code) of every line whose code names a registered pack (or matches ``names``)."""
    names = names or _names()
    lines = source.splitlines()
    found = sorted({n for n, text in _words(ast.parse(source)) if names.search(text)})
    return [(n, lines[n - 1].strip()) for n in found]


def _core_files() -> list[Path]:
    return [p for p in sorted(PACKAGE.rglob("*.py")) if PACKS_DIR not in p.parents]


@pytest.mark.parametrize("path", _core_files(), ids=lambda p: p.relative_to(PACKAGE).as_posix())
def test_no_framework_is_named_in_core_code(path: Path) -> None:
    name = path.relative_to(PACKAGE).as_posix()
    if name in ALLOWED:
        return
    found = offences(path.read_text(encoding="utf-8"))
    budget = NOT_YET_MOVED.get(name, 0)
    assert len(found) <= budget, (
        f"{name} names a framework on {len(found)} line(s), {budget} allowed: ask the pack "
        f"(envforge.packs, FrameworkPack) instead: {found}")
    assert len(found) == budget, f"{name}: {len(found)} now; lower NOT_YET_MOVED to it"


# Theano's GPU back-end, pygpu and its C library libgpuarray, is the Theano pack's too (its
# libgpuarray.toml, links step, doctor rules, gpu_intended): no core file names it.
BACKEND = re.compile(r"gpuarray|pygpu", re.IGNORECASE)


@pytest.mark.parametrize("path", _core_files(), ids=lambda p: p.relative_to(PACKAGE).as_posix())
def test_no_gpu_backend_of_a_framework_is_named_in_core_code(path: Path) -> None:
    found = offences(path.read_text(encoding="utf-8"), BACKEND)
    assert not found, (
        f"{path.relative_to(PACKAGE).as_posix()} names pygpu or libgpuarray: the Theano pack "
        f"knows them (a hook of FrameworkPack asks it): {found}")


def test_the_lists_are_real_and_the_allow_list_small() -> None:
    assert len(ALLOWED) <= 2
    for name in (*ALLOWED, *NOT_YET_MOVED):
        path = PACKAGE / name
        assert path.is_file() and PACKS_DIR not in path.parents, name
    assert all(offences((PACKAGE / name).read_text(encoding="utf-8")) for name in ALLOWED)
    assert all(count > 0 for count in NOT_YET_MOVED.values())


@pytest.mark.parametrize("code", [
    "from envforge.packs.theano.section import theano_section\n",
    "import envforge.packs.theano\n",
    'flags = environ.get("THEANO_FLAGS")\n',
    "root = facts.theano_cuda_root\n",
    "def theanorc_paths(platform):\n    pass\n",
    "class TheanoRules:\n    pass\n",
    "observe(theano_flags=None)\n",
    "def run(theano: str) -> None:\n    pass\n",
    'title = f"Theano {version} has no flag {name}"\n',
])
def test_the_scan_catches_a_framework_in_code(code: str) -> None:
    assert offences(code), code


@pytest.mark.parametrize("code", [
    "from envforge.knowledge import libgpuarray_names\n",
    'if "pygpu" in lock.expect.versions:\n    pass\n',
    "class LibgpuarrayLinksStep:\n    pass\n",
])
def test_the_scan_catches_a_gpu_backend_in_code(code: str) -> None:
    assert offences(code, BACKEND), code


def test_prose_is_not_code() -> None:
    code = ('"""Theano\'s pack brings .theanorc; the core asks it."""\n'
            "# THEANO_FLAGS is the pack's\n"
            "def observe() -> None:\n"
            '    """Each pack (Theano: its .theanorc files) observes its own."""\n')
    assert offences(code) == []


def test_the_scan_catches_one_planted_in_real_code() -> None:
    """A Theano wire slipped back into a clean core module is found on its line."""
    source = (PACKAGE / "doctor" / "rules" / "cudnn.py").read_text(encoding="utf-8")
    assert offences(source) == []
    planted = source + '\n\ndef _root(facts: HostFacts) -> str:\n' \
                       '    return facts.environ.get("THEANO_FLAGS", "")\n'
    assert offences(planted) == [(len(planted.splitlines()),
                                  'return facts.environ.get("THEANO_FLAGS", "")')]
