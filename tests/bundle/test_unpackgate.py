"""Prefetch's unpacks leave a build a core: held to ``cores - 1`` while an sdist builds."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from envforge.bundle.sources import _UNPACKS, UnpackGate


def _most_at_once(gate: UnpackGate, jobs: int, *, after: float | None = None) -> list[int]:
    """Run ``jobs`` unpacks through ``gate`` on ``_UNPACKS`` threads (as prefetch's pool);
    with ``after``, the build ends that many seconds in. How many ran at once, sampled as
    each started."""
    running, seen = [0], []
    lock = threading.Lock()

    def unpack(path: Path) -> None:
        with lock:
            running[0] += 1
            seen.append(running[0])
        time.sleep(0.05)
        with lock:
            running[0] -= 1

    with ThreadPoolExecutor(_UNPACKS) as pool:
        futures = [pool.submit(gate.run, unpack, Path(str(i))) for i in range(jobs)]
        if after is not None:
            time.sleep(after)
            gate.built()
        for future in futures:
            future.result()
    return seen


def test_beside_a_build_on_two_cores_one_unpack_runs_then_all() -> None:
    seen = _most_at_once(UnpackGate(1, cores=2), 12, after=0.2)
    assert max(seen[:3]) == 1  # the build's time: one at a time
    assert max(seen) == _UNPACKS  # widened once it ended


@pytest.mark.parametrize(("builds", "cores"), [(0, 2), (1, 64)])
def test_without_a_build_or_with_cores_to_spare_all_run(builds: int, cores: int) -> None:
    assert max(_most_at_once(UnpackGate(builds, cores=cores), 8)) == _UNPACKS


def test_it_widens_after_the_last_build_only() -> None:
    gate = UnpackGate(2, cores=3)
    gate.built()
    assert max(_most_at_once(gate, 8)) == 2  # one build left: cores - 1
    gate.built()
    assert max(_most_at_once(gate, 8)) == _UNPACKS
