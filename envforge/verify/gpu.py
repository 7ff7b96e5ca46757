"""The GPU's rows: kernel timings, the speedup over the CPU and the driver's CUDA version;
each skips, never fails, where this run has no GPU."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from packaging.version import InvalidVersion, Version

from envforge.lockfile import Expectations
from envforge.packapi import Registry
from envforge.verify.hints import VerifyPack
from envforge.verify.rows import CheckRow
from envforge.verify.untrusted import _list, _map, _number


class GpuPack(VerifyPack, Protocol):
    """What the GPU rows ask of a pack beyond verify's other rows."""

    def gpu_active(self, report: Mapping[str, Any]) -> bool | None: ...


# The heaviest kernel decides the speedup row: tiny elementwise work is all transfer.
_SPEEDUP_ORDER = ("conv", "gemm", "elementwise")


@dataclass(frozen=True, slots=True)
class KernelTiming:
    """A kernel's best run time on the configured device, and on the CPU when compared."""

    name: str
    device: str
    device_s: float | None
    cpu_s: float | None
    speedup: float | None
    uses_gpu: bool


def kernel_timings(report: Mapping[str, Any],
                   registry: Registry[VerifyPack]) -> tuple[KernelTiming, ...]:
    """Per-kernel timings from a report, for charts."""
    device = next((d for d in (p.report_device(report) for p in registry) if d), "?")
    out = []
    for kernel in _list(report.get("kernels")):
        if not isinstance(kernel, Mapping):
            continue
        cpu = _map(kernel.get("cpu"))
        out.append(KernelTiming(
            name=str(kernel.get("name")), device=device, device_s=_number(kernel.get("run_s")),
            cpu_s=_number(cpu.get("run_s")), speedup=_number(kernel.get("speedup")),
            uses_gpu=kernel.get("uses_gpu") is True))
    return tuple(out)


def _speedup_row(report: Mapping[str, Any], expect: Expectations,
                 registry: Registry[GpuPack], gpu_expected: bool) -> CheckRow:
    wanted = expect.min_gpu_speedup
    shown = f">= {wanted:g}x" if wanted is not None else "no minimum"
    if not gpu_expected:
        return CheckRow("gpu.speedup", shown, "-", "skip", "no GPU on this run")
    if not any(pack.gpu_active(report) for pack in registry):
        return CheckRow("gpu.speedup", shown, "-", "skip",
                        "no GPU: the back-end is not active (see gpu.backend)")
    timings = {t.name: t for t in kernel_timings(report, registry) if t.speedup is not None}
    measured = ", ".join(f"{n} {t.speedup:.1f}x" for n, t in sorted(timings.items()))
    chosen = next((timings[n] for n in _SPEEDUP_ORDER if n in timings), None)
    if chosen is None or chosen.speedup is None:
        return CheckRow("gpu.speedup", shown, "not measured", "skip",
                        "the probe ran no CPU comparison")
    if wanted is None:
        return CheckRow("gpu.speedup", shown, measured, "skip", "the lock sets no minimum")
    if chosen.speedup >= wanted:
        return CheckRow("gpu.speedup", shown, measured, "pass")
    return CheckRow("gpu.speedup", shown, measured, "fail",
                    f"kernel {chosen.name}: the GPU is {chosen.speedup:.1f}x the CPU, "
                    f"below the minimum {wanted:g}x")


def _cuda_row(report: Mapping[str, Any], expect: Expectations, gpu_expected: bool) -> CheckRow:
    """The driver must support the locked toolkit; nvidia-smi's CUDA version is the driver's."""
    assert expect.cuda is not None
    needed = expect.cuda.removeprefix(">=").removeprefix("==")
    shown = f"driver for CUDA >= {needed}"
    nvidia = _map(report.get("nvidia"))
    found = nvidia.get("cuda_version")
    if not gpu_expected:
        return CheckRow("cuda.driver", shown, "-", "skip", "no GPU on this run")
    if not found:
        return CheckRow("cuda.driver", shown, "unknown", "skip",
                        str(nvidia.get("error") or "nvidia-smi reported no CUDA version"))
    driver = nvidia.get("driver_version")
    text = f"CUDA {found} (driver {driver})"
    try:
        ok = Version(str(found)) >= Version(needed)
    except InvalidVersion:
        return CheckRow("cuda.driver", shown, text, "fail", "unreadable CUDA version")
    if ok:
        return CheckRow("cuda.driver", shown, text, "pass")
    return CheckRow("cuda.driver", shown, text, "fail",
                    f"the driver supports CUDA {found} only: install a driver for CUDA {needed}")
