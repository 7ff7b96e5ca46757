"""A GPU spec applied on this GPU-less machine without the steps that need the GPU host's
toolkit, and a check script run in it: what the bullseye GPU specs' tests share."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from envforge.app.context import prepare
from envforge.executor import execute
from envforge.plan import build_steps
from envforge.ui import UI
from tests.testing.homes import home_sharing

REPO = Path(__file__).resolve().parents[2]
GPU_HOST_STEPS = {"cuda-toolkit", "libgpuarray-links"}  # need the GPU host's toolkit


def apply_without_gpu_host(spec: Path, tmp_path: Path, cache: Path,
                           ) -> tuple[dict[str, str], Path, set[str], list[str]]:
    """(environ, prefix, every planned step's name, the steps that ran) for ``spec`` applied
    into ``tmp_path`` with all but the GPU host's steps; the home's cache is ``cache`` (the
    run's shared one: both specs take the same bullseye Python and NumPy debs)."""
    env = {**os.environ, "ENVFORGE_HOME": str(home_sharing(tmp_path / "home", cache))}
    prefix = tmp_path / "env"
    ctx = prepare(spec, prefix=prefix, artifacts={}, bundle=None, offline=False,
                  ui=UI(quiet=True), environ=env, check_sources=True)
    steps = build_steps(ctx)
    ran = execute(ctx, [s for s in steps if s.name not in GPU_HOST_STEPS],
                  record={"spec": str(spec), "prefix": str(prefix), "platform": ctx.platform,
                          "spec_name": spec.stem})
    return env, prefix, {step.name for step in steps}, ran


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
