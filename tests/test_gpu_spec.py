"""The GPU spec's Debian bullseye stack, applied here without its CUDA steps (no GPU, and this
machine's CUDA 13 toolkit has no NVRTC or cuBLAS): Theano compiles scan's C loop in it.

Theano-PyMC 1.0.5's scan_perform.c does not compile on Python 3.11 (docs/gpu/scan-perform.md),
the reason the spec left bookworm; this proves it does, in the environment envforge builds,
with Debian's Python 3.9.2 and NumPy 1.19.5, on device=cpu (the same C loop the GPU uses).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from envforge.app.context import prepare
from envforge.executor import execute
from envforge.plan import build_steps
from envforge.ui import UI

REPO = Path(__file__).resolve().parents[1]
GPU_SPEC = REPO / "specs" / "theano-gpu-linux.toml"
SCAN_CHECK = REPO / "docs" / "gpu" / "scan_check.py"
GPU_HOST_STEPS = {"cuda-toolkit", "libgpuarray-links"}  # need the GPU host's toolkit


def _scan_check(prefix: Path, env: dict[str, str], flags: str) -> tuple[int, dict[str, object]]:
    done = subprocess.run(
        [sys.executable, "-m", "envforge", "run", str(GPU_SPEC), "--prefix", str(prefix), "--",
         "python", str(SCAN_CHECK)],
        cwd=REPO, env={**env, "THEANO_FLAGS": flags}, capture_output=True, text=True,
        check=False, timeout=600)
    lines = done.stdout.strip().splitlines()
    assert lines, done.stderr
    report: dict[str, object] = json.loads(lines[-1])
    return done.returncode, report


@pytest.mark.slow
@pytest.mark.network
def test_bullseye_environment_compiles_scans_c_loop(tmp_path: Path) -> None:
    env = {**os.environ, "ENVFORGE_HOME": str(tmp_path / "home")}
    prefix = tmp_path / "env"
    ctx = prepare(GPU_SPEC, prefix=prefix, artifacts={}, bundle=None, offline=False,
                  ui=UI(quiet=True), environ=env, check_sources=True)
    steps = build_steps(ctx)
    assert {step.name for step in steps} >= GPU_HOST_STEPS
    ran = execute(ctx, [s for s in steps if s.name not in GPU_HOST_STEPS],
                  record={"spec": str(GPU_SPEC), "prefix": str(prefix),
                          "platform": ctx.platform, "spec_name": GPU_SPEC.stem})
    assert {"debian-packages", "environment", "pypi-packages", "theanorc"} <= set(ran)
    # Debian's Python 3.9 with distutils from python3-distutils (Theano imports it).
    distutils = subprocess.run([str(prefix / "bin" / "python"), "-c",
                                "import distutils.sysconfig as s; print(s.get_python_inc())"],
                               capture_output=True, text=True, check=True)
    assert distutils.stdout.strip() == str(prefix / "deb" / "usr" / "include" / "python3.9")

    code, report = _scan_check(prefix, env, "device=cpu")
    assert code == 0, report
    assert (report["python"], report["numpy"], report["theano"]) == ("3.9.2", "1.19.5", "1.0.5")
    assert report["scan_loops"] == ["c"] and report["close"] is True
    assert str(report["scan_perform"]).startswith(str(prefix / "theano-compiledir"))

    # No GPU here: with device=cuda Theano falls back to the CPU silently; the check says so.
    code, report = _scan_check(prefix, env, "device=cuda")
    assert code == 1
    assert report["scan_on_gpu"] == [False] and report["gpu_ok"] is False

    # Planted: no C++ compiler, so Theano takes scan's Python loop; the check must say so.
    code, report = _scan_check(prefix, env, "device=cpu,cxx=")
    assert code == 1
    assert report["scan_loops"] == ["python"] and report["c_scan"] is False
