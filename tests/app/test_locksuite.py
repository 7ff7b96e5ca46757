"""The suite's runner resolved beside the environment's own resolution, in a thread that
yields the CPU to it (its uv run inherits the priority)."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import pytest

import envforge.resolve.pypi
from envforge.app.locksuite import runner_in_background
from envforge.background import YIELDING_NICE
from envforge.platforms import threads_have_own_priority
from envforge.spec import load_spec
from tests.testing.packs import REGISTRY

SPECS = Path(__file__).resolve().parents[2] / "specs"


@pytest.mark.skipif(not threads_have_own_priority(), reason="a thread has no nice value of "
                    "its own here: the runner's resolution runs as it is")
def test_the_runners_resolution_yields_the_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[int] = []

    def resolve_pypi(requirements: Any, **options: Any) -> tuple[()]:
        """uv's run, whose priority is its thread's (PyPI itself is not this test's)."""
        seen.append(os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))
        return ()

    monkeypatch.setattr(envforge.resolve.pypi, "resolve_pypi", resolve_pypi)
    pspec = load_spec(SPECS / "theano-cpu.toml", REGISTRY).for_platform("linux-64")
    caller = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    early = runner_in_background(pspec, REGISTRY, "3.7.16")
    assert early is not None
    requirements, python, files = early.result(timeout=30)
    assert python == "3.7.16" and files == () and requirements
    assert seen == [min(19, caller + YIELDING_NICE)]
