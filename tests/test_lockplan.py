"""Pure parts of locking: what Theano imports without declaring it joins the lock."""

from __future__ import annotations

from pathlib import Path

import pytest

from envforge.lockfile import LockedPypiFile, load_lock
from envforge.lockplan import undeclared_missing
from tests.testing.packs import REGISTRY


def _file(name: str, version: str) -> LockedPypiFile:
    return LockedPypiFile(name=name, version=version, kind="wheel",
                          filename=f"{name}-{version}-py3-none-any.whl",
                          url=f"https://example.invalid/{name}.whl", sha256="0" * 64)


def test_theano_105_without_setuptools_needs_it_with_its_source() -> None:
    (row,) = undeclared_missing([_file("theano-pymc", "1.0.5"), _file("numpy", "1.19.5")], REGISTRY)
    assert (row.module, row.requirement) == ("pkg_resources", "setuptools<80.9")
    assert row.imported_at == "theano/gpuarray/linalg.py:3"
    assert "Theano-PyMC-1.0.5" in row.source


@pytest.mark.parametrize("setuptools", ["68.0.0", "69.5.1", "80.8.0"])
def test_a_setuptools_the_spec_pins_that_has_pkg_resources_is_enough(setuptools: str) -> None:
    assert undeclared_missing([_file("Theano-PyMC", "1.0.5"),
                               _file("setuptools", setuptools)], REGISTRY) == ()


def test_a_setuptools_without_pkg_resources_does_not_count() -> None:
    assert len(undeclared_missing([_file("theano-pymc", "1.0.5"),
                                   _file("setuptools", "82.0.0")], REGISTRY)) == 1


def test_provided_elsewhere_and_other_releases_need_nothing() -> None:
    assert undeclared_missing([_file("theano-pymc", "1.0.5")], REGISTRY, ["Setuptools"]) == ()
    assert undeclared_missing([_file("theano-pymc", "1.1.2")], REGISTRY) == ()
    assert undeclared_missing([_file("theano-pymc", "0.9.0")], REGISTRY) == ()  # no rules at all
    assert undeclared_missing([_file("numpy", "1.19.5")], REGISTRY) == ()


def test_the_gpu_specs_hand_pin_is_what_knowledge_asks_for() -> None:
    """theano-gpu-linux pins setuptools by hand; without the pin lock would add it."""
    lock = load_lock(Path(__file__).resolve().parents[1] / "locks" / "theano-gpu-linux.lock",
                     REGISTRY)
    pypi = lock.platforms["linux-64"].pypi
    assert undeclared_missing(pypi, REGISTRY) == ()
    without = [f for f in pypi if f.name != "setuptools"]
    assert [row.requirement for row in undeclared_missing(without, REGISTRY)] == ["setuptools<80.9"]


def test_an_exact_theano_pin_knows_its_undeclared_imports_before_resolving() -> None:
    from envforge.lockplan import undeclared_expected

    spec = ["numpy==1.19.5", "Theano-PyMC==1.0.5"]
    assert [r.requirement for r in undeclared_expected(spec, REGISTRY)] == ["setuptools<80.9"]
    assert undeclared_expected([*spec, "setuptools==68.0.0"], REGISTRY) == ()  # left to the check
    assert undeclared_expected(spec, REGISTRY, ["setuptools"]) == ()
    for loose in (["Theano-PyMC>=1.0"], ["Theano-PyMC==1.0.*"], ["numpy==1.19.5"],
                  ["Theano-PyMC==9.9.9"]):
        assert undeclared_expected(loose, REGISTRY) == ()


def _locked(name: str, version: str, kind: str = "wheel") -> LockedPypiFile:
    ext = "tar.gz" if kind == "sdist" else "whl"
    return LockedPypiFile(name=name, version=version, kind=kind,  # type: ignore[arg-type]
                          filename=f"{name}-{version}.{ext}", sha256="0" * 64,
                          url=f"https://files.example/{name}-{version}.{ext}")


COCO = {"pycocotools": ("Cython", "numpy>=1.11")}


def test_extra_build_requirements_take_the_environments_version_else_one_resolved() -> None:
    """pycocotools' extension is compiled against the NumPy it will import; Cython, which the
    environment lacks, is pinned as resolved for the same target."""
    from envforge.lockplan import extra_build_pins, extra_build_unpinned

    env = [_locked("numpy", "1.16.4"), _locked("pycocotools", "2.0.0", "sdist")]
    assert extra_build_unpinned(COCO, env) == ("Cython",)
    assert extra_build_pins(COCO, env, [_locked("Cython", "0.29.13")]) == {
        "pycocotools": ("Cython==0.29.13", "numpy==1.16.4")}
    old = [_locked("numpy", "1.9.0"), _locked("pycocotools", "2.0.0", "sdist")]
    assert extra_build_unpinned(COCO, old) == ("Cython", "numpy>=1.11")  # 1.9 does not do
    assert extra_build_pins(COCO, old, [_locked("Cython", "0.29.13"), _locked("numpy", "1.11.3")]
                            ) == {"pycocotools": ("Cython==0.29.13", "numpy==1.11.3")}
    with pytest.raises(ValueError, match="Cython: not resolved"):
        extra_build_pins(COCO, env)


def test_only_projects_locked_as_sdists_get_extra_build_requirements() -> None:
    """A platform where the project has a wheel builds nothing: its lock records none."""
    from envforge.lockplan import extra_build_wanted
    from envforge.spec import parse_spec

    text = ('[project]\nname = "c"\nplatforms = ["linux-64"]\n[python]\nversion = "3.7"\n'
            '[environment]\nkind = "venv"\n[pypi]\npackages = ["pycocotools==2.0.0"]\n'
            'extra_build_dependencies = { PyCocoTools = ["Cython"] }\n')
    pspec = parse_spec(text, source="c.toml", registry=REGISTRY).for_platform("linux-64")
    assert extra_build_wanted(pspec, [_locked("pycocotools", "2.0.0", "sdist")]) == {
        "pycocotools": ("Cython",)}
    assert extra_build_wanted(pspec, [_locked("pycocotools", "2.0.0")]) == {}



def test_every_build_is_held_to_the_environments_numpy_unless_the_spec_says_otherwise() -> None:
    """An extension built against a later NumPy does not import on the environment's; the
    spec's own constraint on NumPy stands."""
    from envforge.lockplan import runtime_pins

    env = [_locked("numpy", "1.16.4"), _locked("six", "1.16.0")]
    assert runtime_pins((), env) == ("numpy<=1.16.4",)
    assert runtime_pins(("NumPy<1.16",), env) == ()
    assert runtime_pins((), [_locked("six", "1.16.0")]) == ()
