"""Verify's PyTorch rows: a report built the way the probe builds it (the lock's own NumPy
references, rounded to float32 as torch reports them) passes; a wrong learning rate, other
gradients, unequal DataLoader batches, another CUDA build or a missing torch fail."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from envforge.expectations import reference_output
from envforge.lockfile import KernelExpectation, load_lock
from envforge.packs.torch.expect import TorchExpect
from envforge.packs.torch.verify import verify_rows
from envforge.verify import build_request, hinted
from tests.testing.packs import REGISTRY

REPO = Path(__file__).resolve().parents[3]
EXPECT = load_lock(REPO / "locks" / "torch14-cpu.lock", REGISTRY).platforms["linux-64"].expect


def _table() -> TorchExpect:
    table = EXPECT.packs["torch"]
    assert isinstance(table, TorchExpect)
    return table


TABLE = _table()


def _entry(kernel: KernelExpectation, **params: float) -> dict[str, Any]:
    out = reference_output(kernel.name, seed=kernel.seed, shape=kernel.shape,
                           float_x="float32", params={**(kernel.params or {}), **params}
                           if kernel.params else None)
    out = out.astype(np.float32).astype(np.float64)
    return {"name": kernel.name, "output_shape": list(out.shape), "checksum": float(out.sum()),
            "samples": [float(out[i]) for i in kernel.sample_indices], "error": None}


def _report(**changes: Any) -> dict[str, Any]:
    section = {"cuda_build": "10.1", "cuda_available": False, "threads": 2,
               "grad": _entry(TABLE.grad), "train": _entry(TABLE.train),
               "dataloader": {"workers": 2, "batches": 8, "equal": True, "error": None},
               "jit": {"available": True, "max_abs_diff": 1.2e-7, "error": None},
               "vision": {"model": "resnet18", "output_shape": [1, 1000], "finite": True,
                          "error": None},
               "vision_ops": {"keep": [0, 2], "error": None}}
    return {"format": 1, "torch": {**section, **changes}}


def _rows(report: dict[str, Any]) -> dict[str, str]:
    return {r.name: r.status for r in verify_rows(report, EXPECT, prefix="/env",
                                                  gpu_expected=False)}


def test_the_probe_is_asked_for_its_checks() -> None:
    request = build_request(EXPECT, REGISTRY)["torch"]
    assert request["train"]["params"] == {"learning_rate": 0.5}
    assert request["grad"]["shape"] == [8, 6, 10, 3]
    assert (request["threads"], request["dataloader_workers"]) == (2, 2)
    assert request["jit"] is True and request["torchvision"] is True
    assert request["torchvision_ops"] is True


def test_a_report_of_the_references_passes() -> None:
    rows = _rows(_report())
    assert set(rows.values()) == {"pass"}
    assert {"torch.build.cuda", "torch.threads", "torch.autograd.grad.samples",
            "torch.train.loss.checksum", "torch.train.loss.samples", "torch.dataloader.workers",
            "torch.jit.trace", "torchvision.resnet18", "torchvision.ops.nms"} <= set(rows)


def test_a_wrong_learning_rate_fails_the_training_rows() -> None:
    rows = _rows(_report(train=_entry(TABLE.train, learning_rate=0.45)))
    assert rows["torch.train.loss.checksum"] == rows["torch.train.loss.samples"] == "fail"
    assert rows["torch.autograd.grad.samples"] == "pass"


def test_other_gradients_fail() -> None:
    """Gradients of another seed's draws: the same shapes, other numbers."""
    other = _entry(TABLE.grad.model_copy(update={"seed": TABLE.grad.seed + 1}))
    rows = _rows(_report(grad=other))
    assert rows["torch.autograd.grad.samples"] == "fail"


def test_unequal_batches_another_build_and_a_broken_trace_fail() -> None:
    rows = _rows(_report(dataloader={"workers": 2, "batches": 8, "equal": False},
                         cuda_build="9.0.176", jit={"max_abs_diff": 0.3},
                         vision={"error": "ImportError: cannot import name 'PILLOW_VERSION'"}))
    assert rows["torch.dataloader.workers"] == rows["torch.build.cuda"] == "fail"
    assert rows["torch.jit.trace"] == rows["torchvision.resnet18"] == "fail"


def test_torchvision_built_for_another_torch_is_named() -> None:
    error = ("ImportError: /env/lib/python3.7/site-packages/torchvision/_C.so: undefined "
             "symbol: _ZN6caffe26detail37_typeMetaDataInstance_preallocated_29E")
    rows = verify_rows(_report(vision_ops={"keep": None, "error": error}), EXPECT,
                       prefix="/env", gpu_expected=False)
    # as check_report judges: every failing row with the packs' hints
    [row] = [r for r in hinted(rows, REGISTRY) if r.name == "torchvision.ops.nms"]
    assert row.status == "fail" and "built for another torch release" in row.why


def test_torch_not_importable() -> None:
    report = {"format": 1, "import_errors": {"torch": "ModuleNotFoundError: No module named "
                                                      "'torch'"}, "torch": {"threads": None}}
    rows = verify_rows(report, EXPECT, prefix="/env", gpu_expected=False)
    assert {r.status for r in rows} == {"fail"}
    assert "No module named 'torch'" in rows[0].why
