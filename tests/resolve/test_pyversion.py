"""The Python version PyPI is resolved for is the one the environment will have."""

from __future__ import annotations

import pytest

from envforge.lockfile import LockedDeb
from envforge.resolve.pypi import UnsatisfiableError, resolve_pypi
from envforge.resolve.pyversion import resolver_python
from envforge.spec import PlatformSpec, parse_spec
from tests.testing.packs import REGISTRY


def _pspec(version: str, kind: str = "venv") -> PlatformSpec:
    text = (f'[project]\nname = "p"\nplatforms = ["linux-64"]\n[python]\nversion = "{version}"\n'
            f'[environment]\nkind = "{kind}"\n')
    return parse_spec(text, source="p.toml", registry=REGISTRY).for_platform("linux-64")


def _never(minor: str) -> str | None:
    raise AssertionError("the host was asked although the spec pins the patch")


def test_the_specs_patch_pin_wins() -> None:
    assert resolver_python(_pspec("3.7.16"), find=_never).version == "3.7.16"


def test_a_venv_takes_the_interpreter_found_on_this_host() -> None:
    found = resolver_python(_pspec("3.7"), find=lambda minor: f"{minor}.9")
    assert found.version == "3.7.9" and "3.7.9" in found.origin


def test_without_an_interpreter_the_minor_is_all_there_is() -> None:
    found = resolver_python(_pspec("3.7"), find=lambda minor: None)
    assert found.version == "3.7" and "3.7.0" in found.origin


def test_debians_python_is_what_a_debian_environment_has() -> None:
    deb = LockedDeb(name="python3.11-minimal", version="3.11.2-6+deb12u8", architecture="amd64",
                    filename="f.deb", url="https://x/f.deb", sha256="a" * 64, size=1)
    found = resolver_python(_pspec("3.11", "debian"), deb=[deb], find=_never)
    assert found.version == "3.11.2"


@pytest.mark.network
def test_pandas_135_needs_the_patch_version() -> None:
    """pandas 1.3.5 requires Python >= 3.7.1: uv refuses it for "3.7" (read as 3.7.0)."""
    with pytest.raises(UnsatisfiableError):
        resolve_pypi(["pandas==1.3.5"], platform="linux-64", python="3.7",
                     index="https://pypi.org/simple")
    files = {f.name: f.version for f in resolve_pypi(
        ["pandas==1.3.5"], platform="linux-64", python="3.7.16", index="https://pypi.org/simple")}
    assert files["pandas"] == "1.3.5"
