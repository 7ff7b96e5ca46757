"""The one verdict on a pack's pitfall rows: a row fires only when every part it names is
known and lies wholly in its range, whether the parts come from pins or exact versions."""

from __future__ import annotations

from pathlib import Path

import pytest

from envforge.compat import spec_pins
from envforge.packs.pitfalls import (
    PitfallRow,
    error_hints,
    exact_parts,
    fired,
    message,
    spec_parts,
)
from envforge.spec import parse_spec
from tests.testing.packs import REGISTRY

REPO = Path(__file__).resolve().parents[2]
ROW = PitfallRow(id="x-y", when={"xlib": ">=1.15,<1.16", "ylib": ">=4"}, effect="boom",
                 seen="Error: boom", fix="pin ylib<4", source="a test")
SPEC = (REPO / "specs" / "theano-cpu.toml").read_text(encoding="utf-8")


@pytest.mark.parametrize(("versions", "fires"), [
    ({"xlib": "1.15.5", "ylib": "4.24.4"}, True),
    ({"xlib": "1.15.5", "ylib": "3.20.3"}, False),
    ({"xlib": "1.14.0", "ylib": "4.24.4"}, False),
    ({"xlib": "1.15.5"}, False),  # a part not known never fires
])
def test_exact_versions(versions: dict[str, str], fires: bool) -> None:
    assert (fired([ROW], exact_parts(versions)) == [ROW]) is fires


@pytest.mark.parametrize(("packages", "fires"), [
    ('"xlib==1.15.5", "ylib>=4"', True),
    ('"xlib==1.15.5", "ylib>=4", "ylib<5"', True),
    ('"xlib==1.15.5", "ylib>=3"', False),  # 3.x allowed: not every release fails
    ('"xlib==1.15.5", "ylib"', False),  # unpinned: judged again once resolved
    ('"xlib>=1.15", "ylib>=4"', False),
])
def test_spec_pins(packages: str, fires: bool) -> None:
    text = SPEC.replace('packages = ["numpy==1.19.5"', f'packages = [{packages}, "numpy==1.19.5"')
    pspec = parse_spec(text, source="t.toml", registry=REGISTRY).for_platform("linux-64")
    parts = spec_parts(pspec, spec_pins(pspec))
    assert (fired([ROW], parts) == [ROW]) is fires


def test_aliases_and_sections_become_parts() -> None:
    text = SPEC.replace('packages = ["numpy==1.19.5"', 'packages = ["xlib-gpu==1.15.5"') + \
        '\n[cuda]\nversion = "10.2"\n'
    pspec = parse_spec(text, source="t.toml", registry=REGISTRY).for_platform("linux-64")
    parts = spec_parts(pspec, spec_pins(pspec), {"xlib-gpu": "xlib"})
    row = ROW.model_copy(update={"when": {"xlib": ">=1.15,<1.16", "cuda": ">=10.1"}})
    assert fired([row], parts) == [row]
    assert fired([row], exact_parts({"xlib-gpu": "1.15.5", "cuda": "10.0"},
                                    {"xlib-gpu": "xlib"})) == []


def test_message_names_the_parts_as_written() -> None:
    assert message(ROW, {"xlib": "pypi xlib==1.15.5", "ylib": "pypi ylib>=4"}) == \
        "pypi xlib==1.15.5 with pypi ylib>=4: boom; at run time: Error: boom"


def test_error_hints_come_from_rows_naming_their_error() -> None:
    named = ROW.model_copy(update={"error": "Error: boom"})
    assert error_hints([ROW, named]) == (("Error: boom", "pin ylib<4 (source: a test)"),)
