"""The Windows lane's retry of a spawn Wine refused internally, with a stand-in ``_winapi``
(the real one exists on Windows only, and Wine's refusal cannot be caused on purpose)."""

from __future__ import annotations

import sys
import types
from typing import Any

import pytest

from tests.testing import winespawn


def _refusal(winerror: int) -> OSError:
    exc = OSError(22, "Internal error")
    exc.winerror = winerror  # type: ignore[attr-defined]  # set by CPython on Windows only
    return exc


@pytest.fixture()
def winapi(monkeypatch: pytest.MonkeyPatch) -> types.SimpleNamespace:
    calls: list[tuple[Any, ...]] = []
    fake = types.SimpleNamespace(calls=calls, refusals=[])

    def create_process(*args: Any) -> str:
        calls.append(args)
        if fake.refusals:
            raise fake.refusals.pop(0)
        return "started"

    fake.CreateProcess = create_process
    monkeypatch.setitem(sys.modules, "_winapi", fake)
    monkeypatch.setattr("time.sleep", lambda seconds: None)
    winespawn.retry_spawns()
    return fake


def test_a_spawn_wine_refused_internally_is_tried_again_with_the_same_arguments(
        winapi: types.SimpleNamespace) -> None:
    winapi.refusals = [_refusal(1359), _refusal(1359)]
    assert winapi.CreateProcess("python.exe", "-c pass") == "started"
    assert winapi.calls == [("python.exe", "-c pass")] * 3


def test_any_other_refusal_and_the_last_try_are_raised(winapi: types.SimpleNamespace) -> None:
    winapi.refusals = [_refusal(2)]
    with pytest.raises(OSError):
        winapi.CreateProcess("missing.exe")
    assert len(winapi.calls) == 1
    winapi.refusals = [_refusal(1359)] * winespawn.TRIES
    with pytest.raises(OSError):
        winapi.CreateProcess("python.exe")
    assert len(winapi.calls) == 1 + winespawn.TRIES
