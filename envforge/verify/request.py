"""The probe's side of verify: the request a probe reads, which probes run, and their reports
merged into one."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from envforge.errors import InputError
from envforge.lockfile import Expectations, KernelExpectation
from envforge.packapi import Registry
from envforge.verify.hints import VerifyPack
from envforge.verify.untrusted import _list, _map

REQUEST_FORMAT = 1
REPORT_FORMAT = 1


def build_request(expect: Expectations, registry: Registry[VerifyPack], *,
                  cpu_compare: bool | None = None, kernels: bool = True) -> dict[str, Any]:
    """The probe's request for a lock's expectations.

    By default a CPU comparison runs only when the device is a GPU and the lock holds
    a minimum speedup to check: it compiles and runs every kernel a second time.
    ``kernels=False`` asks a probe after the first for its pack's part only.
    """
    if cpu_compare is None:
        cpu_compare = expect.min_gpu_speedup is not None and not expect.device.startswith("cpu")
    return {
        "format": REQUEST_FORMAT,
        "kernels": [kernel_request(kernel) for kernel in expect.kernels] if kernels else [],
        "repeats": expect.repeats,
        "cpu_compare": cpu_compare,
        **{k: v for pack in registry.locked(expect.packs)
           for k, v in pack.probe_request(expect).items()},
        "distributions": sorted(k for k in expect.versions
                                if k not in (*probe_modules(expect, registry), "python")),
    }


def kernel_request(kernel: KernelExpectation) -> dict[str, Any]:
    """What a probe needs to run one kernel: its seed, shapes, samples and parameters."""
    entry: dict[str, Any] = {"name": kernel.name, "seed": kernel.seed,
                             "shape": list(kernel.shape),
                             "sample_indices": list(kernel.sample_indices)}
    if kernel.conv is not None:
        entry.update(channels=list(kernel.conv.channels), filter_size=kernel.conv.filter_size,
                     border_mode=kernel.conv.border_mode, filter_flip=kernel.conv.filter_flip)
    if kernel.params is not None:
        entry["params"] = dict(kernel.params)
    return entry


def probe_scripts(expect: Expectations,
                  registry: Registry[VerifyPack]) -> tuple[tuple[str, Path], ...]:
    """(pack, probe) of every pack the lock holds that brings one, in registry order."""
    found = tuple((pack.name, pack.probe) for pack in registry.locked(expect.packs)
                  if pack.probe is not None)
    if not found:
        raise InputError("the lock holds no framework pack with a probe: nothing to verify with")
    return found


def merge_reports(reports: Sequence[tuple[str, Mapping[str, Any]]]) -> dict[str, Any]:
    """One report from each probe's, in the order they ran: the first one's fields, the
    others' added where the first has none; versions, import errors and distributions
    merged by name, kernels listed together. A probe's error fails the whole report,
    naming its pack."""
    merged: dict[str, Any] = {}
    for pack, report in reports:
        if report.get("error") or report.get("format") != REPORT_FORMAT:
            why = str(report.get("error") or f"report format {report.get('format')!r} "
                                              f"is not {REPORT_FORMAT}")
            merged.setdefault("error", f"{pack}'s probe: {why}")
            continue
        for key, value in report.items():
            if key in _MERGED_BY_NAME and isinstance(value, Mapping):
                merged[key] = {**value, **_map(merged.get(key))}
            elif key == "kernels":
                merged[key] = [*_list(merged.get(key)), *_list(value)]
            else:
                merged.setdefault(key, value)
    return merged


_MERGED_BY_NAME = ("versions", "import_errors", "distributions")


def probe_modules(expect: Expectations, registry: Registry[VerifyPack]) -> tuple[str, ...]:
    """Names in Expectations.versions that the probes import (and report under these names)."""
    return tuple(name for pack in registry.locked(expect.packs) for name in pack.probe_modules)
