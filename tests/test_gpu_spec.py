"""The GPU spec's Debian bullseye stack, applied here without its CUDA steps (no GPU, and this
machine's CUDA 13 toolkit has no NVRTC or cuBLAS): Theano compiles scan's C loop in it.

Theano-PyMC 1.0.5's scan_perform.c does not compile on Python 3.11 (docs/gpu/scan-perform.md),
the reason the spec left bookworm; this proves it does, in the environment envforge builds,
with Debian's Python 3.9.2 and NumPy 1.19.5, on device=cpu (the same C loop the GPU uses).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.testing.gpuspec import GPU_HOST_STEPS, applied_without_gpu_host, run_check

REPO = Path(__file__).resolve().parents[1]
GPU_SPEC = REPO / "specs" / "theano-gpu-linux.toml"
SCAN_CHECK = REPO / "docs" / "gpu" / "scan_check.py"


def _scan_check(prefix: Path, env: dict[str, str], flags: str) -> tuple[int, dict[str, object]]:
    return run_check(GPU_SPEC, prefix, env, SCAN_CHECK, flags, timeout=600)


@pytest.mark.slow
@pytest.mark.network
def test_bullseye_environment_compiles_scans_c_loop(tmp_path: Path, shared_cache: Path) -> None:
    with applied_without_gpu_host(GPU_SPEC, tmp_path, shared_cache) as (env, prefix, planned, ran):
        assert planned >= GPU_HOST_STEPS
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
