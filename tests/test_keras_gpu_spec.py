"""specs/keras-theano-gpu-linux.toml: Keras 2.3.1 on the GPU spec's Debian bullseye stack,
with Debian's h5py 2.10 (PyPI's has no cp39 wheel; h5py 3 breaks Keras < 2.4's .h5 files).

Here (no GPU, a CUDA 13 toolkit without NVRTC) plan stops before any change, with NumPy
unimportable as in a bundle's envforge (issue 26's crash was NumPy at apply time); the
environment without its CUDA steps trains a Keras model and round-trips it through HDF5
(docs/gpu/keras_h5_check.py, the script the H200 run uses: docs/gpu/keras-h200.sh).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from envforge.cli import main
from envforge.lockfile import load_lock
from tests.testing.gpuspec import GPU_HOST_STEPS, applied_without_gpu_host, run_check
from tests.testing.packs import REGISTRY

REPO = Path(__file__).resolve().parents[1]
SPEC = REPO / "specs" / "keras-theano-gpu-linux.toml"
H5_CHECK = REPO / "docs" / "gpu" / "keras_h5_check.py"
NO_NUMPY = ("import sys; sys.modules['numpy'] = None; from envforge.cli import main; "
            "sys.exit(main(sys.argv[1:]))")


def test_committed_lock_matches_its_spec_and_takes_h5py_from_debian() -> None:
    assert main(["lock", "--check", str(SPEC)]) == 0
    linux = load_lock(REPO / "locks" / "keras-theano-gpu-linux.lock",
                      REGISTRY).platforms["linux-64"]
    debs = {d.name: d.version for d in linux.deb}
    assert debs["python3-h5py-serial"].startswith("2.10.0-")
    assert {"libhdf5-103-1", "liblzf1", "libcurl3-gnutls", "python3-pygpu"} <= set(debs)
    assert sorted(f.name for f in linux.pypi) == [
        "keras", "keras-applications", "keras-preprocessing", "setuptools", "theano-pymc"]


@pytest.mark.posix_only("plans with Debian's Python 3.9 from the lock")
def test_plan_and_apply_without_numpy_stop_before_any_change(tmp_path: Path) -> None:
    env = {**os.environ, "HOME": str(tmp_path), "ENVFORGE_HOME": str(tmp_path / "ef")}
    for command in (["plan", str(SPEC)], ["apply", str(SPEC), "--yes"]):
        done = subprocess.run([sys.executable, "-c", NO_NUMPY, *command], cwd=REPO, env=env,
                              capture_output=True, text=True, check=False, timeout=300)
        assert "numpy" not in done.stderr.lower(), done.stderr
        if "libnvrtc.so" in done.stderr:  # this machine: CUDA 13 without NVRTC, no GPU
            assert done.returncode == 1, done.stderr
        else:  # a GPU host: the plan is reached, changes pending
            assert done.returncode == 3, done.stderr
            break
    assert not (tmp_path / "ef" / "data" / "envs" / SPEC.stem).exists()


def _h5_check(prefix: Path, env: dict[str, str], flags: str) -> tuple[int, dict[str, object]]:
    return run_check(SPEC, prefix, env, H5_CHECK, flags, timeout=900)


@pytest.mark.slow
@pytest.mark.network
def test_keras_trains_and_round_trips_hdf5_in_the_environment(tmp_path: Path,
                                                              shared_cache: Path) -> None:
    with applied_without_gpu_host(SPEC, tmp_path, shared_cache) as (env, prefix, planned, ran):
        assert planned >= GPU_HOST_STEPS | {"keras-json"}
        assert {"debian-packages", "pypi-packages", "theanorc", "keras-json"} <= set(ran)

        code, report = _h5_check(prefix, env, "device=cpu")
        assert code == 0, report
        assert (report["python"], report["numpy"], report["keras"], report["backend"]) == (
            "3.9.2", "1.19.5", "2.3.1", "theano")
        assert (report["h5py"], report["hdf5"], report["saved_by"]) == ("2.10.0", "1.10.6", "2.3.1")
        assert report["roundtrip_equal"] is True

        # No GPU here: with device=cuda Theano falls back to the CPU; the check must say so.
        code, report = _h5_check(prefix, env, "device=cuda")
        assert code == 1
        assert report["gpu_ops"] == [] and report["ok"] is False
