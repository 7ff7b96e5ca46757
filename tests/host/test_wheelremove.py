"""Uninstalling by RECORD where two distributions install the same module: tensorflow_gpu
1.13.1 and tensorflow 1.13.1 both hold tensorflow/, and `apply --sync` removing the one the
lock no longer names deleted the other's files (5,725 of them), leaving the environment
unfinished. A real Python 3.7 venv, real wheels installed by envforge's installer."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from envforge.host.archives import sha256_file
from envforge.host.interpreters import find_interpreter
from envforge.host.wheelinstall import WheelToInstall, install_wheels, target_scheme
from envforge.host.wheelremove import claimed_paths, remove_distribution
from tests.host.test_wheelinstall import make_wheel, run

pytestmark = pytest.mark.posix_only("the Python 3.7 here is pyenv's Linux build")


@pytest.fixture(scope="module")
def python37() -> Path:
    return find_interpreter("3.7", environ=dict(os.environ)).executable


def test_a_file_another_distribution_installs_stays_when_one_is_removed(
        python37: Path, tmp_path: Path) -> None:
    prefix = tmp_path / "venv"
    subprocess.run([str(python37), "-m", "venv", "--without-pip", str(prefix)], check=True)
    python = prefix / "bin" / "python"
    (tmp_path / "w1").mkdir()
    (tmp_path / "w2").mkdir()
    gpu = make_wheel(tmp_path / "w1", "tf_gpu", "1.0", {"tf/__init__.py": "BUILD = 'gpu'\n",
                                                        "tf/cuda.py": "X = 1\n"})
    cpu = make_wheel(tmp_path / "w2", "tf_cpu", "1.0", {"tf/__init__.py": "BUILD = 'cpu'\n"})
    install_wheels([WheelToInstall(w, sha256_file(w)) for w in (gpu, cpu)], python)
    scheme = target_scheme(python)
    kept = claimed_paths(scheme, excluding=["tf-gpu"])
    removed = remove_distribution(scheme, "tf_gpu", keep=kept)
    assert run(python, "import tf; print(tf.BUILD)") == "cpu"
    assert any(p.name == "cuda.py" for p in removed)
    assert not any(p.name == "__init__.py" for p in removed)
    assert not list(scheme.purelib.glob("tf_gpu-*.dist-info"))
    remove_distribution(scheme, "tf_cpu")  # nothing kept: its own files go
    assert not (scheme.purelib / "tf").exists()
