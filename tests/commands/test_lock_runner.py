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


def test_the_runner_leaves_what_the_environment_holds_to_the_environment() -> None:
    """An old repository's own pytest is the one its suite runs with: the runner's pin of
    pytest beside the environment's pin of another pytest could never resolve."""
    held = [*ENV, _file("pytest", "5.3.0")]
    row = suite_runner("1.0.5")
    assert row is not None and {"pytest==7.4.4", "pytest-xdist==3.5.0"} <= set(row.requirements)
    assert lock_cmd.runner_requirements(row.requirements, held) == ("pytest-xdist==3.5.0",)
    everything = [*held, _file("pytest_xdist", "1.34.0")]  # names compared normalised
    assert lock_cmd.runner_requirements(row.requirements, everything) == ()


def test_a_runner_whose_pins_do_not_fit_the_environment_takes_the_releases_that_do(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from envforge.errors import ResolveError

    asked: list[list[str]] = []

    def resolve(requirements: list[str], **kwargs: object) -> tuple[LockedPypiFile, ...]:
        asked.append(list(requirements))
        if any("==" in r for r in requirements):
            raise ResolveError("pytest-xdist==3.5.0 depends on pytest>=6.2.0")
        return (_file("pytest-xdist", "1.34.0"),)

    monkeypatch.setattr("envforge.resolve.pypi.resolve_pypi", resolve)
    pspec = load_spec(SPEC, REGISTRY).for_platform("linux-64")
    suite = lock_cmd.lock_suite(pspec, REGISTRY, [*ENV, _file("pytest", "5.3.0")],
                                {"theano": "1.0.5"}, python="3.7.16")
    assert suite is not None and [f.version for f in suite.runner] == ["1.34.0"]
    assert asked == [["pytest-xdist==3.5.0"], ["pytest-xdist"]]
    # the environment holds the whole runner: nothing to resolve, the suite still locked
    asked.clear()
    whole = lock_cmd.lock_suite(pspec, REGISTRY, [*ENV, _file("pytest", "5.3.0"),
                                                  _file("pytest-xdist", "1.34.0")],
                                {"theano": "1.0.5"}, python="3.7.16")
    assert whole is not None and whole.runner == () and asked == []
