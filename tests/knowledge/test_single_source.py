"""Facts live once, in envforge/knowledge/*.toml (and the packs' own): no library name,
cuDNN version rule or reference release is written in code elsewhere.

A string literal (not a docstring; comments are not code) outside ``envforge/knowledge/``
that names a CUDA/cuDNN/loader library fails this test, and so does code that compares a
cuDNN version code or major with a number, or writes the reference Theano release. Prose
may name libraries; code must ask the knowledge base.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from envforge.packs.theano.flags import FIELD_FLAGS
from envforge.packs.theano.knowledge import blog_errata, reference_theano, theano_rules

PACKAGE = Path(__file__).resolve().parents[2] / "envforge"

LIBRARY = re.compile(r"libcudnn|cudnn64_|libnvrtc|nvrtc64_|libcublas|cublas64_|cudart64_|"
                     r"libcudart|nvcuda\.dll|libcuda\.so")
# Version rules written as code: a cuDNN code or major compared with a number; a release
# told by its prefix.
SUBJECT = re.compile(r"cudnn|major", re.IGNORECASE)
PREFIX = re.compile(r"startswith\(\s*[\"']\d+\.\d+\.")
RELEASE = re.compile(r"^1\.0\.5$")  # the reference Theano-PyMC release: reference_theano()

# (file relative to envforge/, why it may): the probe runs inside the target environment's
# own Python (3.7-3.11) with the standard library only and cannot import envforge.
ALLOWED: dict[str, str] = {
    "packs/theano/probe_gemm.py": "part of the probe run by the environment's Python; "
                                  "cannot import envforge.knowledge",
}


def _code_files() -> list[Path]:
    return [p for p in sorted(PACKAGE.rglob("*.py"))
            if p.relative_to(PACKAGE).parts[0] != "knowledge"
            and p.relative_to(PACKAGE).as_posix() not in ALLOWED]


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) \
                and node.body and isinstance(node.body[0], ast.Expr) \
                and isinstance(node.body[0].value, ast.Constant):
            found.add(id(node.body[0].value))
    return found


def _wrong_flags() -> frozenset[str]:
    """Dotted flags that are not flags (removed ones, the blog's): only knowledge names them."""
    rules = theano_rules(reference_theano())
    names = {row.flag for row in rules.removed if not row.prefix}
    names |= {row.flag for row in blog_errata() if row.flag and "." in row.flag}
    return frozenset(names)


def literal_offences(source: str) -> list[tuple[int, str]]:
    """(line, literal) of string literals naming a library, a flag that is not one, or the
    reference release."""
    tree = ast.parse(source)
    docs = _docstrings(tree)
    wrong = _wrong_flags()
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and id(node) not in docs
            and (LIBRARY.search(node.value) or RELEASE.match(node.value)
                 or node.value in wrong)]


def rule_offences(source: str) -> list[tuple[int, str]]:
    """(line, code) of comparisons of a cuDNN version or major with a number literal, and of
    release-prefix tests (``theano.startswith("1.0.")``)."""
    tree = ast.parse(source)
    lines = source.splitlines()
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            operands = (node.left, *node.comparators)
            numbers = [o for o in operands if isinstance(o, ast.Constant)
                       and isinstance(o.value, int) and not isinstance(o.value, bool)]
            if numbers and SUBJECT.search(ast.unparse(node)):
                found.append((node.lineno, lines[node.lineno - 1].strip()))
        elif isinstance(node, ast.Call) and PREFIX.search(ast.unparse(node)):
            found.append((node.lineno, lines[node.lineno - 1].strip()))
    return found


@pytest.mark.parametrize("path", _code_files(), ids=lambda p: p.relative_to(PACKAGE).as_posix())
def test_no_fact_is_written_in_code(path: Path) -> None:
    source = path.read_text(encoding="utf-8")
    assert literal_offences(source) == [], "read it from envforge.knowledge instead"
    assert rule_offences(source) == [], "a version rule belongs in envforge/knowledge/*.toml"


@pytest.mark.parametrize("code", [
    'NAMES = ("libcuda.so", "libnvrtc.so")',
    'name = f"cudnn64_{major}.dll"',
    'if theano.startswith("1.0.") and major >= 8:\n    pass',
    'if cudnn_version_code(wanted) >= 8000:\n    pass',
    'ASSUMED = "1.0.5"',
    'if name == "lib.cnmem":\n    pass',
])
def test_the_scan_catches_what_it_is_for(code: str) -> None:
    """Every shape the old code had (host/platform.py's tables, verify.py's cuDNN >= 8 rule,
    doctor's 8000, the assumed release) is found."""
    assert literal_offences(code) or rule_offences(code)


def test_prose_is_not_code() -> None:
    assert literal_offences('"""Links libcuda.so and nvrtc64_102.dll."""\n# libcublas.so\n') == []


def test_the_allow_list_is_small_and_real() -> None:
    assert len(ALLOWED) <= 2
    assert all((PACKAGE / name).is_file() for name in ALLOWED)


def test_flags_code_sets_are_flags_the_knowledge_base_defines() -> None:
    """The spec-field -> flag map is code; every flag it names must be a row's flag."""
    rules = theano_rules(reference_theano())
    assert set(FIELD_FLAGS) <= rules.known_flags
    assert _wrong_flags() >= {"lib.cnmem", "cudnn.enable", "pycuda.init"}
