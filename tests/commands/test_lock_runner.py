"""The suite's runner resolved beside the main resolution is kept only where the
environment's pins could not have changed it: it shares no package with the environment."""

from __future__ import annotations

from concurrent.futures import Future
from pathlib import Path

import pytest

from envforge.app import locksuite as lock_cmd
from envforge.lockfile import LockedPypiFile
from envforge.packs.theano.knowledge import suite_runner
from envforge.spec import load_spec
from tests.testing.packs import REGISTRY

SPEC = Path(__file__).resolve().parents[2] / "specs" / "theano-cpu.toml"


def _file(name: str, version: str, kind: str = "wheel") -> LockedPypiFile:
    ext = "tar.gz" if kind == "sdist" else "py3-none-any.whl"
    return LockedPypiFile(name=name, version=version, kind=kind,  # type: ignore[arg-type]
                          filename=f"{name}-{version}-{ext}" if kind == "wheel"
                          else f"{name}-{version}.tar.gz",
                          url=f"https://example.invalid/{name}", sha256="0" * 64)


ENV = [_file("Theano-PyMC", "1.0.5", "sdist"), _file("six", "1.16.0")]


def _early(runner: list[LockedPypiFile]) -> Future[object]:
    row = suite_runner("1.0.5")
    assert row is not None
    done: Future[object] = Future()
    done.set_result((row.requirements, "3.7.16", tuple(runner)))
    return done


def _resolved_again(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    calls: list[object] = []

    def resolve(requirements: object, **kwargs: object) -> tuple[LockedPypiFile, ...]:
        calls.append(kwargs.get("constraints"))
        return (_file("pytest", "7.4.4"),)

    monkeypatch.setattr("envforge.resolve.pypi.resolve_pypi", resolve)
    return calls


def test_a_runner_sharing_nothing_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _resolved_again(monkeypatch)
    pspec = load_spec(SPEC, REGISTRY).for_platform("linux-64")
    runner = [_file("pytest", "7.4.4"), _file("pluggy", "1.2.0")]
    suite = lock_cmd.lock_suite(pspec, REGISTRY, ENV, {"theano": "1.0.5"}, python="3.7.16",
                                early=_early(runner))  # type: ignore[arg-type]
    assert suite is not None and list(suite.runner) == runner and suite.python == "3.7.16"
    assert calls == []
    # resolved for another Python than the environment's: not kept
    other = lock_cmd.lock_suite(pspec, REGISTRY, ENV, {"theano": "1.0.5"}, python="3.7.17",
                                early=_early(runner))  # type: ignore[arg-type]
    assert other is not None and [f.name for f in other.runner] == ["pytest"]
    assert len(calls) == 1


def test_a_runner_sharing_a_package_is_resolved_under_the_pins(
        monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _resolved_again(monkeypatch)
    pspec = load_spec(SPEC, REGISTRY).for_platform("linux-64")
    runner = [_file("pytest", "7.4.4"), _file("six", "1.17.0")]
    suite = lock_cmd.lock_suite(pspec, REGISTRY, ENV, {"theano": "1.0.5"}, python="3.7.16",
                                early=_early(runner))  # type: ignore[arg-type]
    assert suite is not None and [f.name for f in suite.runner] == ["pytest"]
    assert calls == [["Theano-PyMC==1.0.5", "six==1.16.0"]]


def test_a_runner_sharing_a_package_at_the_environments_version_is_kept_less_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The pins hold already: resolving under them would give the same runner."""
    calls = _resolved_again(monkeypatch)
    pspec = load_spec(SPEC, REGISTRY).for_platform("linux-64")
    runner = [_file("pytest", "7.4.4"), _file("six", "1.16.0")]
    suite = lock_cmd.lock_suite(pspec, REGISTRY, ENV, {"theano": "1.0.5"}, python="3.7.16",
                                early=_early(runner))  # type: ignore[arg-type]
    assert suite is not None and [f.name for f in suite.runner] == ["pytest"]
    assert calls == []
