"""modules.toml: the requirement that keeps a module (or what it does) is written once,
and the packs' rows that name the module alone (Theano's ``[[undeclared]]``, torch 1.10's
pitfall cap, the TensorFlow and Keras h5py caps) take it from there."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from pydantic import ValidationError

from envforge.knowledge import kept_module, knowledge
from envforge.knowledge.models import UndeclaredImport
from envforge.packs.pitfalls import PitfallRow, outside
from tests.testing.packs import REGISTRY

PACKS = Path(__file__).resolve().parents[2] / "envforge" / "packs"


def test_each_packs_row_for_pkg_resources_takes_the_cores_requirement() -> None:
    row = kept_module("pkg_resources")
    assert row is not None and row.requirement == "setuptools<80.9"
    theano = next(iter(REGISTRY.get("theano").undeclared_imports({"theano-pymc": "1.0.5"})))
    torch = next(iter(REGISTRY.get("torch").undeclared_imports({"torch": "1.10.2"})))
    assert theano.requirement == torch.requirement == row.requirement


def test_the_tf_keras_and_keras_caps_take_h5pys_bound_from_the_core() -> None:
    """h5py 3's str strings break tf.keras before 2.4 and Keras before 2.4: one bound, read
    by both packs' pitfalls, their h5py part and their fix."""
    row = kept_module("h5py")
    assert row is not None and row.requirement == "h5py<3"
    for pack, versions in (("tensorflow", {"tensorflow": "1.15.5"}), ("keras", {"keras": "2.3.1"})):
        (cap,) = REGISTRY.get(pack).undeclared_imports(versions)
        assert (cap.requirement, cap.module) == ("h5py<3", "h5py")
    from envforge.packs.keras.knowledge import keras_knowledge

    (pitfall,) = [p for p in keras_knowledge().pitfalls if p.id == "keras2-h5py3"]
    assert pitfall.when == {"keras": "<2.4", "h5py": ">=3"}
    assert pitfall.fix == 'pin "h5py<3" in [pypi] packages'


def test_no_packs_knowledge_restates_a_requirement_the_core_holds() -> None:
    """A bound written in a pack beside modules.toml's would drift from it."""
    held = {row.requirement for row in knowledge().modules.kept_module}
    for path in sorted(PACKS.glob("*/*.toml")):
        text = path.read_text(encoding="utf-8")
        tomllib.loads(text)
        assert not [r for r in held if r in text], path


def test_a_cap_from_the_core_makes_the_pitfalls_part_and_its_fix() -> None:
    row = PitfallRow.model_validate({
        "id": "t", "when": {"torch": ">=1.10,<1.11"}, "effect": "e", "seen": "s",
        "fix": 'pin "{cap}"', "source": "s",
        "cap": {"module": "pkg_resources", "imported_at": "torch/torch_version.py:3"}})
    assert row.when == {"torch": ">=1.10,<1.11", "setuptools": ">=80.9"}
    assert row.cap is not None and row.cap.requirement == "setuptools<80.9"
    assert row.fix == 'pin "setuptools<80.9"'


@pytest.mark.parametrize(("requirement", "left_out"), [
    ("setuptools<80.9", ">=80.9"), ("pillow<=6.2.2", ">6.2.2"), ("numpy>=1.14", "<1.14")])
def test_outside_flips_one_bound(requirement: str, left_out: str) -> None:
    assert outside(requirement) == left_out


def test_a_cap_of_two_bounds_or_a_module_the_core_lacks_is_refused() -> None:
    with pytest.raises(ValueError, match="one bound"):
        outside("setuptools>=40,<80.9")
    with pytest.raises(ValidationError, match=r"no requirement given for imp, and modules\.toml"):
        UndeclaredImport.model_validate({"module": "imp", "imported_at": "x.py:1",
                                         "needed_by": "x", "source": "s"})
