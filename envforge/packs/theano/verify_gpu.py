"""Verify's Theano GPU and kernel rows: the gpuarray back-end (pygpu) and the ops each
kernel compiled to, scan's C implementation, and Theano's GEMM against raw cuBLAS.

A TensorFlow lock asks none of these: they judge the Theano probe's own fields.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from envforge.lockfile import Expectations
from envforge.packs.theano.expect import theano_expect
from envforge.verify import CheckRow
from envforge.verify.kernels import _find_kernel
from envforge.verify.untrusted import _clip, _dig, _list, _map, _number


def gpu_rows(report: Mapping[str, Any], expect: Expectations,
             gpu_expected: bool) -> list[CheckRow]:
    """``gpu.backend`` and ``gpu.ops.KERNEL``: skipped where no GPU is expected."""
    if not gpu_expected:
        why = ("device is cpu" if expect.device.startswith("cpu")
               else "no GPU is expected on this machine")
        rows = [CheckRow("gpu.backend", "not checked", "-", "skip", why)]
        rows += [CheckRow(f"gpu.ops.{k.name}", "not checked", "-", "skip", why)
                 for k in expect.kernels]
        return rows
    gpu = _map(report.get("gpu"))
    active = gpu.get("pygpu_activated") is True
    if active:
        described = ", ".join(str(p) for p in (
            gpu.get("devname"), gpu.get("compute_capability") and
            f"compute {gpu.get('compute_capability')}",
            isinstance(gpu.get("total_gmem"), int) and
            f"{gpu['total_gmem'] / 2**30:.0f} GiB") if p)
        rows = [CheckRow("gpu.backend", "pygpu_activated", described or "active", "pass")]
    else:
        reason = gpu.get("init_error") or gpu.get("error") or _map(
            report.get("import_errors")).get("pygpu")
        why = ("Theano fell back to the CPU silently: "
               + str(reason or "no error was logged"))
        rows = [CheckRow("gpu.backend", "pygpu_activated", "not active", "fail", why)]
    for kernel in expect.kernels:
        rows.append(_gpu_ops_row(_find_kernel(report, kernel.name), kernel.name))
    return rows


def _gpu_ops_row(entry: Mapping[str, Any] | None, name: str) -> CheckRow:
    row = f"gpu.ops.{name}"
    if entry is None:
        return CheckRow(row, "GPU ops", "no such kernel in the report", "fail",
                        f"kernel {name}: the probe did not run it")
    gpu_ops = [str(op) for op in _list(entry.get("gpu_ops"))]
    if gpu_ops:
        return CheckRow(row, "GPU ops", ", ".join(sorted(set(gpu_ops))), "pass")
    if entry.get("error"):
        return CheckRow(row, "GPU ops", "error", "fail",
                        f"kernel {name}: {_clip(str(entry['error']))}")
    ops = ", ".join(str(op) for op in _list(entry.get("ops"))) or "none"
    return CheckRow(row, "GPU ops", "CPU ops only", "fail",
                    f"kernel {name}: the compiled graph has no GPU op ({ops})")

def scan_row(report: Mapping[str, Any]) -> CheckRow:
    """Theano runs scan in C (scan_perform, compiled from its Cython) whenever it has a
    compiler; its Python loop is the fallback when the compile or the import failed."""
    row, wanted = "kernel.scan.implementation", "C (scan_perform)"
    entry = _find_kernel(report, "scan")
    scan = _map(entry.get("scan")) if entry is not None else {}
    cxx = _dig(report, "theano", "config", "cxx")
    if entry is None or entry.get("error"):
        error = "the probe did not run it" if entry is None else _clip(str(entry["error"]))
        return CheckRow(row, wanted, "error", "fail", f"kernel scan: {error}")
    found = scan.get("implementation")
    if not cxx:
        return CheckRow(row, wanted, str(found), "skip",
                        "cxx is empty: Theano has no compiler and runs scan in Python")
    if found == "c":
        return CheckRow(row, wanted, f"C (scan_perform {scan.get('version') or '?'})", "pass")
    why = scan.get("error") or (f"cxx={cxx}, yet Theano runs scan's {found} implementation: "
                                "scan_perform did not compile or import; look for "
                                "'scan_perform' in the log of `envforge verify --json`")
    return CheckRow(row, wanted, str(found), "fail", f"kernel scan: {why}")


def cublas_row(entry: Mapping[str, Any] | None, floor: float) -> CheckRow:
    """Theano's GEMM with the data on the device against raw cuBLAS SGEMM in the same
    process and library: a floor on the ratio, since absolute times depend on the GPU."""
    row, wanted = "gpu.gemm.cublas_ratio", f">= {floor:g} of raw cuBLAS SGEMM"
    timing = _map(entry.get("gemm_timing")) if entry is not None else {}
    ratio = _number(timing.get("ratio"))
    if ratio is None:
        why = timing.get("error") or ("the probe did not run gemm" if entry is None
                                      else "the probe reported no resident GEMM timing")
        return CheckRow(row, wanted, "not measured", "fail", f"gemm: {why}")
    found = (f"{ratio:.3f}: Theano {_show_number(timing.get('tflops'))} TFLOP/s resident "
             f"({_ms(timing.get('resident_s'))}; {_ms(timing.get('with_copies_s'))} with "
             f"host copies), cuBLAS {_show_number(timing.get('cublas_tflops'))} TFLOP/s")
    if ratio >= floor:
        return CheckRow(row, wanted, found, "pass")
    return CheckRow(row, wanted, found, "fail",
                    f"gemm: Theano's GEMM reaches {ratio:.1%} of raw cuBLAS on "
                    f"{timing.get('cublas_library')}, below the lock's {floor:.0%}")


def _show_number(value: Any) -> str:
    number = _number(value)
    return "?" if number is None else f"{number:.1f}"


def _ms(value: Any) -> str:
    number = _number(value)
    return "? ms" if number is None else f"{number * 1e3:.2f} ms"


def timing_rows(report: Mapping[str, Any], expect: Expectations, *,
                gpu_expected: bool) -> list[CheckRow]:
    """The cuBLAS row where the lock sets a floor, a GPU runs and gemm is a kernel."""
    floor = theano_expect(expect).min_cublas_ratio
    if gpu_expected and floor is not None and any(k.name == "gemm" for k in expect.kernels):
        return [cublas_row(_find_kernel(report, "gemm"), floor)]
    return []


def gpu_active(report: Mapping[str, Any]) -> bool:
    """Whether pygpu, Theano's GPU back-end, activated in the probe."""
    return _dig(report, "gpu", "pygpu_activated") is True


def report_device(report: Mapping[str, Any]) -> str | None:
    device = _dig(report, "theano", "config", "device")
    return str(device) if device else None
