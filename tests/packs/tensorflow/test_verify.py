"""Verify's TensorFlow rows on probe reports: devices, variables, the GPU libraries."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from envforge.lockfile import load_lock
from envforge.packs.tensorflow.verify import probe_request, verify_rows
from envforge.verify import build_request
from tests.testing.packs import REGISTRY

REPO = Path(__file__).resolve().parents[3]
CPU = load_lock(REPO / "locks" / "tf1-keras-cpu.lock", REGISTRY).platforms["linux-64"].expect
GPU = load_lock(REPO / "locks" / "tf1-gpu-cuda100.lock", REGISTRY).platforms["linux-64"].expect
DEVICES = [{"name": "/device:CPU:0", "type": "CPU", "description": ""}]


def _rows(expect: Any, section: dict[str, Any], gpu: bool = False) -> dict[str, tuple[str, str]]:
    report = {"format": 1, "tensorflow": section}
    return {r.name: (r.status, r.why) for r in verify_rows(report, expect, prefix="/p",
                                                           gpu_expected=gpu)}


def test_the_request_asks_for_variables_and_libraries() -> None:
    assert probe_request(CPU) == {"tensorflow": {"device": "cpu", "float_x": "float32",
                                                 "variables": ["TF_CPP_MIN_LOG_LEVEL"],
                                                 "gpu_libraries": []}}
    request = build_request(GPU, REGISTRY)["tensorflow"]
    assert request["device"] == "cuda" and "libcudart.so.10.0" in request["gpu_libraries"]
    assert sorted(request["variables"]) == ["TF_CPP_MIN_LOG_LEVEL", "TF_FORCE_GPU_ALLOW_GROWTH"]


def test_cpu_rows() -> None:
    rows = _rows(CPU, {"devices": DEVICES, "variables": {"TF_CPP_MIN_LOG_LEVEL": "2"}})
    assert rows == {"tensorflow.devices": ("pass", ""),
                    "tensorflow.env.TF_CPP_MIN_LOG_LEVEL": ("pass", "")}
    rows = _rows(CPU, {"devices": DEVICES, "variables": {"TF_CPP_MIN_LOG_LEVEL": None}})
    assert rows["tensorflow.env.TF_CPP_MIN_LOG_LEVEL"][0] == "fail"


def test_a_tensorflow_that_did_not_import_fails_with_its_error() -> None:
    report = {"format": 1, "import_errors": {"tensorflow": "TypeError: Descriptors cannot be "
                                                           "created directly."},
              "tensorflow": {"devices": [], "variables": {}}}
    [row, *_] = verify_rows(report, CPU, prefix=None, gpu_expected=False)
    assert (row.name, row.status) == ("tensorflow.devices", "fail")
    assert "Descriptors cannot be created directly" in row.why
    assert [r.name for r in verify_rows({"format": 1}, CPU, prefix=None,
                                        gpu_expected=False)] == ["tensorflow.devices"]


def test_gpu_rows_skip_without_a_gpu_and_fail_on_a_missing_library() -> None:
    section: dict[str, Any] = {"devices": DEVICES, "variables": {
        "TF_CPP_MIN_LOG_LEVEL": "1", "TF_FORCE_GPU_ALLOW_GROWTH": "true"}, "libraries": {}}
    rows = _rows(GPU, section)
    assert rows["tensorflow.library.libcudart.so.10.0"][0] == "skip"
    assert rows["tensorflow.devices"][0] == "pass"
    section["libraries"] = {name: None for name in GPU.packs["tensorflow"].gpu_libraries}  # type: ignore[attr-defined]
    section["libraries"]["libcudart.so.10.0"] = "libcudart.so.10.0: cannot open shared object file"
    rows = _rows(GPU, section, gpu=True)
    assert rows["tensorflow.library.libcudart.so.10.0"][0] == "fail"
    assert rows["tensorflow.library.libcudnn.so.7"][0] == "pass"
    assert rows["tensorflow.devices"][0] == "fail"
    assert "lists no GPU" in rows["tensorflow.devices"][1]


def test_a_gpu_lock_is_not_asked_theano_s_gpu_questions() -> None:
    """pygpu's back-end, each kernel's GPU ops and the resident-GEMM ratio are the Theano
    probe's fields: a TensorFlow GPU lock's verify has no such rows to fail."""
    from envforge.verify import check_report

    report = {"format": 1, "python": {"version": "3.7.16"}, "kernels": [],
              "tensorflow": {"devices": DEVICES, "variables": {}, "libraries": {}}}
    names = [r.name for r in check_report(report, GPU, REGISTRY, gpu_expected=True, prefix="/p")]
    assert "tensorflow.devices" in names and "gpu.speedup" in names
    assert not [n for n in names if n in ("gpu.backend", "gpu.gemm.cublas_ratio")
                or n.startswith("gpu.ops.")]
