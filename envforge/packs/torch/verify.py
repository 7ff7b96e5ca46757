"""Verify's PyTorch rows: the CUDA runtime the build carries, the threads it runs with,
autograd against the lock's finite differences, the trained model against its NumPy loss
curve, a DataLoader with workers against one without, ``torch.jit.trace`` against eager
mode and torchvision's model. Read from the probe's ``torch`` section defensively: a
missing field is a failing row, never an exception."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from envforge.lockfile import Expectations
from envforge.packs.torch.expect import TorchExpect, torch_expect
from envforge.verify import CheckRow, kernel_request, kernel_rows
from envforge.verify.untrusted import _list, _map, _number

# A traced module runs the eager one's operations: only the last bits may differ.
JIT_ATOL = {"float32": 1e-5, "float64": 1e-12}
VISION_OUTPUT = [1, 1000]  # resnet18's ImageNet logits for one image
NMS_KEEP = [0, 2]  # the probe's three boxes: the second overlaps the first (IoU 0.81)


def probe_request(expect: Expectations) -> dict[str, Any]:
    table = torch_expect(expect)
    if table is None:
        return {}
    return {"torch": {"device": table.device, "float_x": table.float_x,
                      "threads": table.threads, "seed": table.seed,
                      "dataloader_workers": table.dataloader_workers, "jit": table.jit,
                      "torchvision": table.torchvision,
                      "torchvision_ops": table.torchvision_ops,
                      "grad": kernel_request(table.grad),
                      "train": kernel_request(table.train)}}


def verify_rows(report: Mapping[str, Any], expect: Expectations, *, prefix: str | None,
                gpu_expected: bool) -> list[CheckRow]:
    table = torch_expect(expect)
    if table is None:
        return [CheckRow("torch.lock", "a torch table", "none", "fail",
                         "the lock holds no PyTorch table: run `envforge lock` again")]
    section = _map(report.get("torch"))
    if section.get("threads") is None:
        why = str(_map(report.get("import_errors")).get("torch")
                  or "the PyTorch probe did not report")
        return [CheckRow("torch.import", "torch imports", "not imported", "fail", why),
                *kernel_rows(None, table.grad, base="torch.autograd.grad"),
                *kernel_rows(None, table.train, base="torch.train.loss")]
    rows = [_build_row(section, table),
            _equal_row("torch.threads", table.threads, section.get("threads"),
                       "torch.set_num_threads did not take")]
    for key, base in (("grad", "torch.autograd.grad"), ("train", "torch.train.loss")):
        entry = section.get(key)
        rows += kernel_rows(entry if isinstance(entry, Mapping) else None, getattr(table, key),
                            base=base)
    rows += [_dataloader_row(_map(section.get("dataloader")), table),
             _jit_row(section.get("jit"), table),
             _vision_row(section.get("vision"), table, report),
             _ops_row(_map(section.get("vision_ops")), table)]
    if table.device == "cuda":
        ok = section.get("cuda_available") is True
        rows.append(CheckRow("torch.cuda", "available", str(section.get("cuda_available")),
                             "pass" if ok else ("fail" if gpu_expected else "skip"),
                             "" if ok else "torch.cuda.is_available() is False"))
    return rows


def _equal_row(name: str, wanted: Any, found: Any, why: str) -> CheckRow:
    ok = found == wanted
    return CheckRow(name, str(wanted), str(found), "pass" if ok else "fail", "" if ok else why)


def _build_row(section: Mapping[str, Any], table: TorchExpect) -> CheckRow:
    found = section.get("cuda_build")
    if table.wheel_cuda is None:
        return CheckRow("torch.build.cuda", "-", str(found), "skip",
                        "envforge knows no CUDA runtime for this wheel")
    return _equal_row("torch.build.cuda", table.wheel_cuda, found,
                      "torch.version.cuda differs from the PyPI wheel's: another build of "
                      "this release is installed")


def _dataloader_row(entry: Mapping[str, Any], table: TorchExpect) -> CheckRow:
    wanted = f"{table.dataloader_workers} workers' batches = 0 workers'"
    if entry.get("error") or entry.get("equal") is None:
        return CheckRow("torch.dataloader.workers", wanted, "error", "fail",
                        str(entry.get("error") or "the probe did not run it"))
    ok = entry.get("equal") is True
    return CheckRow("torch.dataloader.workers", wanted,
                    f"{entry.get('batches')} batches, {'equal' if ok else 'different'}",
                    "pass" if ok else "fail",
                    "" if ok else "worker processes loaded other batches than the main one")


def _jit_row(entry: Any, table: TorchExpect) -> CheckRow:
    wanted = f"traced = eager within {JIT_ATOL[table.float_x]:g}"
    if not table.jit:
        return CheckRow("torch.jit.trace", wanted, "-", "skip", "torch.jit.trace is 1.0's")
    found = _map(entry)
    diff = _number(found.get("max_abs_diff"))
    if diff is None:
        return CheckRow("torch.jit.trace", wanted, "error", "fail",
                        str(found.get("error") or "the probe did not run it"))
    ok = diff <= JIT_ATOL[table.float_x]
    return CheckRow("torch.jit.trace", wanted, f"max |diff| {diff:.3g}",
                    "pass" if ok else "fail", "" if ok else "the traced module computes "
                    "something else than the eager one")


def _vision_row(entry: Any, table: TorchExpect, report: Mapping[str, Any]) -> CheckRow:
    wanted = f"resnet18 output {VISION_OUTPUT}, finite"
    if not table.torchvision:
        return CheckRow("torchvision.resnet18", wanted, "-", "skip", "no torchvision locked")
    found = _map(entry)
    if found.get("error") or not found:
        why = found.get("error") or _map(report.get("import_errors")).get("torchvision")
        return CheckRow("torchvision.resnet18", wanted, "error", "fail",
                        str(why or "the probe did not run it"))
    shape = [int(n) for n in _list(found.get("output_shape"))]
    ok = shape == VISION_OUTPUT and found.get("finite") is True
    return CheckRow("torchvision.resnet18", wanted, f"{shape}, finite={found.get('finite')}",
                    "pass" if ok else "fail", "" if ok else "torchvision's model computed "
                    "another shape or non-finite values")


def _ops_row(entry: Mapping[str, Any], table: TorchExpect) -> CheckRow:
    wanted = f"nms keeps {NMS_KEEP}"
    if not table.torchvision_ops:
        return CheckRow("torchvision.ops.nms", wanted, "-", "skip",
                        "no torchvision with compiled ops (0.3 on) locked")
    keep = entry.get("keep")
    if keep is None:
        return CheckRow("torchvision.ops.nms", wanted, "error", "fail",
                        str(entry.get("error") or "the probe did not run it"))
    ok = keep == NMS_KEEP
    return CheckRow("torchvision.ops.nms", wanted, str(keep), "pass" if ok else "fail",
                    "" if ok else "torchvision's compiled nms kept other boxes")
