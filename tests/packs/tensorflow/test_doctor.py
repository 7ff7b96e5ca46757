"""Doctor's TensorFlow rules against environments as pip leaves them (dist-info folders) and
folders holding (or not) the libraries TensorFlow 1.15's loader asks for."""

from __future__ import annotations

from pathlib import Path

import pytest

from envforge.doctor import Expected
from tests.doctor.layouts import expected, home, ids, judge, look, only, venv

TF = {"tensorflow": "1.15.5", "numpy": "1.18.5", "gast": "0.2.2", "h5py": "2.10.0"}


def _gpu_lock() -> Expected:
    return expected(spec="specs/tf1-gpu-cuda100.toml", env_kind="venv", cuda="10.0",
                    cudnn=None, versions={"python": "3.7", "tensorflow": "1.15.5"},
                    settings={})


def _env(tmp_path: Path, packages: dict[str, str]) -> dict[str, str]:
    prefix = venv(tmp_path / "env", packages)
    return {"HOME": str(home(tmp_path)), "VIRTUAL_ENV": str(prefix), "PATH": ""}


def test_protobuf_4_next_to_tensorflow_1_15(tmp_path: Path) -> None:
    env = _env(tmp_path, {**TF, "protobuf": "4.24.4"})
    finding = only(judge(look(tmp_path, env)), "tensorflow.tf1-protobuf4")
    assert finding.severity == "error"
    assert "tensorflow 1.15.5 with protobuf 4.24.4" in finding.title
    assert "Descriptors cannot not be created directly" in finding.title
    assert any(e.where.endswith("protobuf-4.24.4.dist-info") for e in finding.evidence)
    assert finding.fix is not None and 'protobuf<4' in finding.fix.text


def test_the_locked_stack_raises_nothing(tmp_path: Path) -> None:
    env = _env(tmp_path, {**TF, "protobuf": "3.20.3", "keras": "2.3.1"})
    assert not [i for i in ids(judge(look(tmp_path, env))) if i.startswith(("tensorflow.",
                                                                           "keras."))]


def test_an_environment_with_tensorflow_2_is_not_an_error(tmp_path: Path) -> None:
    """TensorFlow 2 is refused under [tensorflow] at lock time; an environment holding it is
    not broken for that, so doctor says nothing."""
    env = _env(tmp_path, {**TF, "tensorflow": "2.11.0", "protobuf": "3.19.6"})
    assert not [i for i in ids(judge(look(tmp_path, env))) if i.startswith("tensorflow.")]


def test_gast_0_3_and_the_gpu_build_alias(tmp_path: Path) -> None:
    packages = {**TF, "gast": "0.3.3"}
    packages["tensorflow-gpu"] = packages.pop("tensorflow")
    finding = only(judge(look(tmp_path, _env(tmp_path, packages))), "tensorflow.tf1-gast")
    assert "tensorflow 1.15.5 with gast 0.3.3" in finding.title  # counted as its package
    assert any(e.where.endswith("tensorflow_gpu-1.15.5.dist-info") for e in finding.evidence)


@pytest.mark.posix_only("observes a linux-64 host: LD_LIBRARY_PATH and .so names")
def test_a_gpu_tensorflow_without_libcudart_10_0(tmp_path: Path) -> None:
    packages = dict(TF)
    packages["tensorflow-gpu"] = packages.pop("tensorflow")
    env = _env(tmp_path, packages)
    lib = tmp_path / "cuda-10.2" / "lib64"
    lib.mkdir(parents=True)
    (lib / "libcudart.so.10.2").write_bytes(b"\x7fELF")
    env["LD_LIBRARY_PATH"] = str(lib)
    lock = _gpu_lock()
    findings = judge(look(tmp_path, env), lock)
    finding = only(findings, "tensorflow.library.cudart")
    assert "loads libcudart.so.10.0, which no folder it searches holds" in finding.title
    assert "tensorflow.library.cudnn" in ids(findings)
    (lib / "libcudart.so.10.0").write_bytes(b"\x7fELF")
    (lib / "libcudnn.so.7").write_bytes(b"\x7fELF")
    assert not {"tensorflow.library.cudart", "tensorflow.library.cudnn"} & \
        set(ids(judge(look(tmp_path, env), lock)))
    # with no lock and no driver answering, TensorFlow runs on the CPU: nothing to say
    assert "tensorflow.library.cudart" not in ids(judge(look(tmp_path, env)))


@pytest.mark.posix_only("observes a linux-64 host: LD_LIBRARY_PATH and .so names")
def test_a_gpu_lock_without_an_environment_yet(tmp_path: Path) -> None:
    env = {"HOME": str(home(tmp_path)), "PATH": ""}
    lock = _gpu_lock()
    assert "tensorflow.library.cudart" in ids(judge(look(tmp_path, env), lock))
    cpu = lock.model_copy(update={"device": "cpu"})
    assert "tensorflow.library.cudart" not in ids(judge(look(tmp_path, env), cpu))
