"""The envforge cache that test runs keep between them, as pip's and uv's caches are kept
between CI runs: the wheels, debs, builds, resolver caches and Theano compiled modules of the
suite's real environments (a make test downloaded 1.6 GB and unpacked 4.5 GB into a cache of
its own each time: ``du -sh`` of its basetemp's ``shared-cache/files`` and ``unpacked``).
It is never the user's envforge cache; a test of a cold or damaged cache makes a home of its
own.

``ENVFORGE_TEST_CACHE`` names it (default ``$XDG_CACHE_HOME/envforge-tests``, else
``~/.cache/envforge-tests``); ``ENVFORGE_TEST_CACHE=off`` gives each run a cold one of its
own, as on a fresh machine. It is emptied at a run's start when it is older than
``MAX_AGE_DAYS`` or its disk has under ``MIN_FREE_GIB`` free, and never while another run
uses it (each run holds a shared lock on it; emptying takes the lock alone or waits for the
next run)."""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path
from typing import IO

VARIABLE = "ENVFORGE_TEST_CACHE"
MAX_AGE_DAYS = 14
MIN_FREE_GIB = 10
_BORN = ".born"  # made when the cache is (re)made: its age


def kept_cache(environ: dict[str, str] | None = None) -> Path | None:
    """The kept cache's folder, or None where each run has its own (``off``; Windows, whose
    lane keeps its own Wine cache)."""
    env = os.environ if environ is None else environ
    chosen = env.get(VARIABLE)
    if chosen == "off" or sys.platform == "win32":
        return None
    if chosen:
        return Path(chosen)
    base = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "envforge-tests"


def hold(cache: Path, *, now: float | None = None) -> IO[bytes]:
    """The run's shared lock on ``cache`` (kept open for the run), the cache emptied first
    when it is due and no other run holds it; the cache exists afterwards."""
    import fcntl  # POSIX: Windows keeps no test cache (kept_cache), and has no fcntl

    cache.parent.mkdir(parents=True, exist_ok=True)
    handle = (cache.parent / f"{cache.name}.lock").open("ab")
    if _due(cache, time.time() if now is None else now):
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pass  # another run uses it: emptied by a later run
        else:
            shutil.rmtree(cache, ignore_errors=True)
    fcntl.flock(handle, fcntl.LOCK_SH)
    if not (cache / _BORN).is_file():
        cache.mkdir(parents=True, exist_ok=True)
        (cache / _BORN).touch()
    return handle


def _due(cache: Path, now: float) -> bool:
    born = cache / _BORN
    if not cache.exists():
        return False
    if not born.is_file() or now - born.stat().st_mtime > MAX_AGE_DAYS * 86400:
        return True
    return shutil.disk_usage(cache).free < MIN_FREE_GIB << 30
