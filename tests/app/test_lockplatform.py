"""Before uv's runs: the host's Python each platform's resolution asks for is being found
while the compatibility check runs, and not where Debian's index decides the Python."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from envforge.app import lockplatform
from envforge.errors import StepError
from envforge.host.interpreters import find_interpreter
from envforge.spec import load_spec
from tests.testing.packs import REGISTRY

SPECS = Path(__file__).resolve().parents[2] / "specs"


def _python_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("envforge-python")]


def test_the_hosts_python_is_found_beside_the_compatibility_check(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lockplatform, "_HOST_PYTHONS", {})
    spec = load_spec(SPECS / "theano-cpu.toml", REGISTRY)  # linux-64 and win-64: one 3.7
    lockplatform.find_pythons_beside([spec.for_platform(p) for p in spec.project.platforms])
    started = _python_threads()
    assert len(started) == 1
    for thread in started:
        thread.join(timeout=60)
    found = lockplatform._HOST_PYTHONS["3.7"]
    try:  # the same search, asked directly: this host's 3.7 (pyenv's here; none under Wine)
        direct: str | None = find_interpreter("3.7").version
    except StepError:
        direct = None
    assert (found and found.version) == direct
    assert direct is None or direct.startswith("3.7.")


def test_no_search_where_debian_provides_the_python(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lockplatform, "_HOST_PYTHONS", {})
    spec = load_spec(SPECS / "theano-cpu-debian.toml", REGISTRY)
    lockplatform.find_pythons_beside([spec.for_platform(p) for p in spec.project.platforms])
    assert not _python_threads()
    assert lockplatform._HOST_PYTHONS == {}


def test_a_second_lock_finds_the_hosts_python_without_running_it(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """uv's start waits for the search: the candidates' answers come from envforge's cache
    while their files are unchanged (a later process's search runs no interpreter)."""
    from envforge.host import interpreters

    monkeypatch.setenv("ENVFORGE_HOME", str(tmp_path))
    monkeypatch.setattr(lockplatform, "_HOST_PYTHONS", {})
    first = lockplatform._found_interpreter("3.7")
    if first is None:
        pytest.skip("no Python 3.7 here")

    def no_run(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"an interpreter was run: {args}")

    monkeypatch.setattr(lockplatform, "_HOST_PYTHONS", {})  # as in a new process
    monkeypatch.setattr(interpreters.proc, "run", no_run)
    again = lockplatform._found_interpreter("3.7")
    assert again is not None and again.version == first.version
