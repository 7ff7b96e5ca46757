"""A GPU spec applied on this GPU-less machine without the steps that need the GPU host's
toolkit, and a check script run in it: what the bullseye GPU specs' tests share."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from envforge.app.context import prepare
from envforge.executor import execute
from envforge.plan import build_steps
from envforge.ui import UI
from tests.testing.homes import home_sharing
from tests.testing.testcache import kept_cache

REPO = Path(__file__).resolve().parents[2]
GPU_HOST_STEPS = {"cuda-toolkit", "libgpuarray-links"}  # need the GPU host's toolkit


@contextmanager
def applied_without_gpu_host(spec: Path, tmp_path: Path, cache: Path,
                             ) -> Iterator[tuple[dict[str, str], Path, set[str], list[str]]]:
    """(environ, prefix, every planned step's name, the steps that ran) for ``spec`` applied
    with all but the GPU host's steps; the home's cache is ``cache`` (the run's shared one:
    both specs take the same bullseye Python and NumPy debs).

    These specs' Python is Debian's, inside the prefix: Theano's module keys hold its include
    folder, so its compiled modules serve only a prefix at the same path. The prefix is
    therefore the same path in every run (``fixed_prefix``, made afresh, removed after), and
    the store in the kept cache gives a run the modules the last one compiled (the Keras
    spec's ``device=cpu`` run: 57 s of g++ a run, each time); where the kept cache is off or
    another run holds the path, a folder of the test's own (compiled cold)."""
    with fixed_prefix(spec.stem) as fixed:
        prefix = fixed or tmp_path / "env"
        env = {**os.environ, "ENVFORGE_HOME": str(home_sharing(tmp_path / "home", cache))}
        ctx = prepare(spec, prefix=prefix, artifacts={}, bundle=None, offline=False,
                      ui=UI(quiet=True), environ=env, check_sources=True)
        steps = build_steps(ctx)
        ran = execute(ctx, [s for s in steps if s.name not in GPU_HOST_STEPS],
                      record={"spec": str(spec), "prefix": str(prefix),
                              "platform": ctx.platform, "spec_name": spec.stem})
        yield env, prefix, {step.name for step in steps}, ran


@contextmanager
def fixed_prefix(name: str) -> Iterator[Path | None]:
    """``envforge-tests-prefixes/NAME/env`` beside the kept test cache, absent on entry and
    removed on exit, held by this run alone (a lock file beside it); None where there is no
    kept cache or another run holds it."""
    import fcntl  # POSIX: these tests are

    kept = kept_cache()
    if kept is None:
        yield None
        return
    folder = kept.parent / "envforge-tests-prefixes" / name
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "held.lock").open("ab") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield None
            return
        prefix = folder / "env"
        shutil.rmtree(prefix, ignore_errors=True)
        try:
            yield prefix
        finally:
            shutil.rmtree(prefix, ignore_errors=True)


def run_check(spec: Path, prefix: Path, env: dict[str, str], script: Path, flags: str, *,
              timeout: int) -> tuple[int, dict[str, object]]:
    """``envforge run`` of a check script under THEANO_FLAGS ``flags``: its exit code and the
    JSON report it prints last."""
    done = subprocess.run(
        [sys.executable, "-m", "envforge", "run", str(spec), "--prefix", str(prefix), "--",
         "python", str(script)],
        cwd=REPO, env={**env, "THEANO_FLAGS": flags}, capture_output=True, text=True,
        check=False, timeout=timeout)
    lines = done.stdout.strip().splitlines()
    assert lines, done.stderr
    report: dict[str, object] = json.loads(lines[-1])
    return done.returncode, report
