"""Theano's wiring lives in envforge/packs/theano/: the core reaches it through the registry
(envforge/packs/__init__.py) only, and the few modules that still import it say why.

Grep-level, like tests/knowledge/test_single_source.py: an import of the Theano pack, or a
name of its section, lock table or step, in any other module fails here.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "envforge"
PACK = PACKAGE / "packs" / "theano"

# (module relative to envforge/, why it still imports the Theano pack): the next moves.
ALLOWED: dict[str, str] = {
    "packs/__init__.py": "the registry: where a pack is registered",
}
# What moved into the pack, as the core used to spell it.
MOVED = re.compile(r"\b(TheanoSection|TheanorcStep|TheanoExpect|theano_flag_spelling|"
                   r"(pspec|spec|lock\.expect|expect)\.theano(_flags)?)\b")


def _core_files() -> list[Path]:
    return [p for p in sorted(PACKAGE.rglob("*.py")) if PACK not in p.parents]


def _imports_pack(source: str) -> bool:
    for node in ast.walk(ast.parse(source)):
        names = ([node.module or ""] if isinstance(node, ast.ImportFrom)
                 else [a.name for a in node.names] if isinstance(node, ast.Import) else [])
        if any(n == "envforge.packs.theano" or n.startswith("envforge.packs.theano.")
               for n in names):
            return True
    return False


@pytest.mark.parametrize("path", _core_files(), ids=lambda p: p.relative_to(PACKAGE).as_posix())
def test_the_core_does_not_reach_into_the_theano_pack(path: Path) -> None:
    source = path.read_text(encoding="utf-8")
    name = path.relative_to(PACKAGE).as_posix()
    if name not in ALLOWED:
        assert not _imports_pack(source), "ask the registry (envforge.packs) instead"
    code = [line for line in source.splitlines() if not line.lstrip().startswith("#")]
    moved = [line.strip() for line in code if MOVED.search(line)]
    assert moved == [], "this lives in envforge/packs/theano/ now"


def test_each_allowed_module_still_needs_it() -> None:
    for name in ALLOWED:
        assert _imports_pack((PACKAGE / name).read_text(encoding="utf-8")), name


def test_the_check_finds_an_import_and_a_moved_name() -> None:
    assert _imports_pack("from envforge.packs.theano.section import theano_section\n")
    assert _imports_pack("import envforge.packs.theano\n")
    assert not _imports_pack("from envforge.packs import active_packs\n")
    assert MOVED.search("flags = ctx.lock.expect.theano_flags")
    assert MOVED.search("device = pspec.theano.device")
    assert not MOVED.search("release = knowledge().theano.flags")
