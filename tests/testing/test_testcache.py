"""The kept test cache: where it is, when a run empties it, and that a run never empties it
under another run."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from tests.testing.testcache import MAX_AGE_DAYS, VARIABLE, hold, kept_cache

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="flock: the Windows lane "
                                "keeps no test cache")


def test_where_it_is_kept() -> None:
    assert kept_cache({VARIABLE: "off"}) is None
    assert kept_cache({VARIABLE: "/x/c"}) == Path("/x/c")
    assert kept_cache({"XDG_CACHE_HOME": "/x"}) == Path("/x/envforge-tests")


def _filled(cache: Path, *, age_days: float) -> Path:
    hold(cache).close()
    entry = cache / "files" / "wheel.whl"
    entry.parent.mkdir()
    entry.write_bytes(b"kept")
    then = time.time() - age_days * 86400
    os.utime(cache / ".born", (then, then))
    return entry


def test_a_run_keeps_a_young_cache_and_empties_an_old_one(tmp_path: Path) -> None:
    cache = tmp_path / "envforge-tests"
    entry = _filled(cache, age_days=1)
    hold(cache).close()
    assert entry.read_bytes() == b"kept"
    os.utime(cache / ".born", (0, 0))
    hold(cache).close()
    assert not entry.exists() and (cache / ".born").stat().st_mtime > time.time() - 60


def test_an_old_cache_another_run_holds_is_left_to_a_later_run(tmp_path: Path) -> None:
    cache = tmp_path / "envforge-tests"
    entry = _filled(cache, age_days=MAX_AGE_DAYS + 1)
    other = hold(cache, now=0)  # a run that began before it was due
    try:
        hold(cache).close()
        assert entry.read_bytes() == b"kept"
    finally:
        other.close()
    hold(cache).close()
    assert not entry.exists()
