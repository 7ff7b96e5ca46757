"""The environment step: a venv from a real Python 3.7, and what happens when none is found."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from envforge.envlayout import layout_for
from envforge.errors import StepError
from envforge.host.interpreters import find_interpreter, query_version
from envforge.lockfile import ApplyInputs, Expectations, PlatformLock
from envforge.steps.base import StepContext
from envforge.steps.env import EnvironmentStep, PrefixStep
from tests.testing.contexts import apply_step, make_ctx


def venv_ctx(tmp_path: Path, python: str, environ: dict[str, str], *,
             offline: bool = False) -> StepContext:
    base = make_ctx(tmp_path, "linux-64", None, environ=environ)
    return dataclasses.replace(
        base, offline=offline,
        lock=PlatformLock(python=python, environment="venv", expect=Expectations(
            versions={}, device="cpu", float_x="float64"), apply=ApplyInputs()),
        layout=layout_for("linux-64", "venv", base.prefix, python))


@pytest.mark.posix_only("the Python 3.7 here is pyenv's Linux build (no Windows 3.7 is reachable)")
def test_venv_from_the_discovered_python37_then_nothing_to_do(tmp_path: Path) -> None:
    python = find_interpreter("3.7").executable
    ctx = venv_ctx(tmp_path, "3.7", {"PATH": str(python.parent)})
    for step in (PrefixStep(), EnvironmentStep()):
        assert step.describe(ctx)
        apply_step(step, ctx)
        assert step.describe(ctx) == ()
    found = query_version(ctx.prefix / "bin" / "python")
    assert found is not None and found.minor == "3.7"


@pytest.mark.posix_only("the Python 3.7 here is pyenv's Linux build (no Windows 3.7 is reachable)")
def test_a_venv_cut_short_before_its_python_is_made_again(tmp_path: Path) -> None:
    """venv writes pyvenv.cfg before it links the interpreter: a signal in between left a
    folder that used to count as the environment."""
    python = find_interpreter("3.7").executable
    ctx = venv_ctx(tmp_path, "3.7", {"PATH": str(python.parent)})
    for step in (PrefixStep(), EnvironmentStep()):
        apply_step(step, ctx)
    for name in ("python", "python3", "python3.7"):
        (ctx.prefix / "bin" / name).unlink()
    assert EnvironmentStep().describe(ctx)
    apply_step(EnvironmentStep(), ctx)
    found = query_version(ctx.prefix / "bin" / "python")
    assert found is not None and found.minor == "3.7"


@pytest.mark.parametrize("offline", [True, False])
def test_no_interpreter_says_where_it_looked_and_what_uv_said(tmp_path: Path,
                                                              offline: bool) -> None:
    environ = {"PATH": "", "HOME": str(tmp_path), "PYENV_ROOT": str(tmp_path / "pyenv"),
               "UV_PYTHON_INSTALL_DIR": str(tmp_path / "uv-pythons")}
    ctx = venv_ctx(tmp_path, "3.5", environ, offline=offline)
    apply_step(PrefixStep(), ctx)
    with pytest.raises(StepError) as failed:
        apply_step(EnvironmentStep(), ctx)
    message = str(failed.value)
    assert message.startswith("no Python 3.5 found")
    assert ("`uv python install 3.5` failed" in message) is not offline
