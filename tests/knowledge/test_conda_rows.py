"""conda.toml's theano-pymc rows as the feedstock rendered them, and the build the
reference spec asks for."""

from __future__ import annotations

from pathlib import Path

import pytest
from rattler import MatchSpec, PackageRecord
from rattler.package.build_string import BuildString

from envforge.knowledge import knowledge
from envforge.spec import load_spec
from tests.testing.packs import REGISTRY

SPEC = Path(__file__).resolve().parents[2] / "specs" / "theano-cuda102.toml"


def _rows() -> dict[str, tuple[str, ...]]:
    rows = [r for r in knowledge().conda.packages if r.name == "theano-pymc"]
    return {f"{r.builds}/{subdir}": r.run_depends(subdir)
            for r in rows for subdir in ("linux-64", "win-64")}


def test_run_requirements_include_compilers_and_setuptools() -> None:
    rows = _rows()
    assert "vs2017_win-64" in rows["0-1/win-64"] and "gxx_linux-64 7.*" in rows["0-1/linux-64"]
    assert all("setuptools" in deps and "pygpu >=0.7.0,<0.8" in deps for deps in rows.values())


def test_build_2_adds_jax_outside_windows() -> None:
    rows = _rows()
    assert "jax" in rows["2/linux-64"]
    assert "jax" not in rows["2/win-64"] and "jax" not in rows["0-1/linux-64"]


def _record(build: int, subdir: str) -> PackageRecord:
    return PackageRecord(name="theano-pymc", version="1.0.5",
                         build=BuildString(f"py37h89c1867_{build}"), build_number=build,
                         subdir=subdir, arch=None, platform=None)


@pytest.mark.parametrize("platform", ["linux-64", "win-64"])
def test_reference_spec_asks_for_build_1(platform: str) -> None:
    """Build 2's jax is dead weight for 1.0.5 (it never imports jax): the spec takes build 1."""
    packages = load_spec(SPEC, REGISTRY).for_platform(platform).conda.packages  # type: ignore[arg-type]
    (wanted,) = [MatchSpec(p) for p in packages if p.startswith("theano-pymc")]
    subdir = platform
    assert wanted.matches(_record(1, subdir))
    assert not wanted.matches(_record(2, subdir)) and not wanted.matches(_record(0, subdir))
