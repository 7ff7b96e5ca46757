"""Verify's pure core: a probe report against the lock's expectations, as check rows.

Each pack's probe (``envforge/packs/theano/probe.py``) runs inside the target environment
and only describes; this module and the packs' ``verify_rows`` judge. It reads the
report defensively, since the report comes from another interpreter and possibly a
half-broken environment: a missing or malformed field is a failing row, never an
exception. Rows carry stable dotted names (``version.numpy``, ``kernel.gemm.checksum``)
so JSON and JUnit consumers can track them across runs.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from envforge.drift import Drift
from envforge.errors import ExitCode, InputError
from envforge.knowledge import error_hints
from envforge.lockfile import Expectations, KernelExpectation
from envforge.packapi import Pack, Registry, ScopedPacks

Status = Literal["pass", "fail", "skip"]
REQUEST_FORMAT = 1
REPORT_FORMAT = 1
# The heaviest kernel decides the speedup row: tiny elementwise work is all transfer.
_SPEEDUP_ORDER = ("conv", "gemm", "elementwise")


@dataclass(frozen=True, slots=True)
class CheckRow:
    """One thing verify checked; ``why`` says what went wrong or why it was skipped."""

    name: str
    expected: str
    found: str
    status: Status
    why: str = ""


class VerifyPack(Pack, Protocol):
    """What verify asks of a pack the lock holds: its probe, its request and its rows."""

    @property
    def probe(self) -> Path | None: ...

    @property
    def probe_modules(self) -> tuple[str, ...]: ...

    def probe_request(self, expect: Expectations) -> Mapping[str, Any]: ...

    def verify_rows(self, report: Mapping[str, Any], expect: Expectations, *,
                    prefix: str | None, gpu_expected: bool) -> Iterable[CheckRow]: ...

    def device_rows(self, report: Mapping[str, Any], expect: Expectations, *,
                    gpu_expected: bool) -> Sequence[CheckRow]: ...

    def kernel_checks(self, report: Mapping[str, Any], kernel: str) -> Sequence[CheckRow]: ...

    def timing_rows(self, report: Mapping[str, Any], expect: Expectations, *,
                    gpu_expected: bool) -> Sequence[CheckRow]: ...

    def report_device(self, report: Mapping[str, Any]) -> str | None: ...

    def import_hint(self, error: str) -> str | None: ...

    def error_hints(self) -> tuple[tuple[str, str], ...]: ...


# The packs whose hints a failure's text gets, while ``check_report`` judges (a pack's own
# rows call ``kernel_rows`` and ``_with_hint`` from inside it); none outside ``hinting``.
_HINTS: ScopedPacks[VerifyPack] = ScopedPacks("envforge_verify_hints")


def hinting(registry: Registry[VerifyPack]) -> AbstractContextManager[None]:
    """Failures judged inside get ``registry``'s hints (``check_report`` judges inside)."""
    return _HINTS.using(registry)


@dataclass(frozen=True, slots=True)
class KernelTiming:
    """A kernel's best run time on the configured device, and on the CPU when compared."""

    name: str
    device: str
    device_s: float | None
    cpu_s: float | None
    speedup: float | None
    uses_gpu: bool


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


def check_report(report: Mapping[str, Any], expect: Expectations, registry: Registry[VerifyPack],
                 *, gpu_expected: bool, prefix: str | None = None) -> tuple[CheckRow, ...]:
    """Every check of a probe report against the expectations, in a stable order.

    ``gpu_expected`` is false where the lock targets a GPU but this machine has none
    (GPU rows are then skipped, not failed). ``prefix`` fills the ``{prefix}`` that
    locked flags hold for the environment's folder.
    """
    if report.get("error") or report.get("format") != REPORT_FORMAT:
        why = str(report.get("error") or f"report format {report.get('format')!r} "
                                          f"is not {REPORT_FORMAT}")
        return (CheckRow("probe", "a report", "no report", "fail", why),)
    with hinting(registry):
        return _judge(report, expect, registry, gpu_expected=gpu_expected, prefix=prefix)


def _judge(report: Mapping[str, Any], expect: Expectations, registry: Registry[VerifyPack], *,
           gpu_expected: bool, prefix: str | None) -> tuple[CheckRow, ...]:
    rows: list[CheckRow] = []
    rows += _version_rows(report, expect, registry)
    packs = registry.locked(expect.packs)
    for pack in packs:
        rows += pack.verify_rows(report, expect, prefix=prefix, gpu_expected=gpu_expected)
    for pack in packs:
        rows += pack.device_rows(report, expect, gpu_expected=gpu_expected)
    for kernel in expect.kernels:
        rows += kernel_rows(_find_kernel(report, kernel.name), kernel)
        for pack in packs:
            rows += pack.kernel_checks(report, kernel.name)
    rows.append(_speedup_row(report, expect, registry, gpu_expected))
    for pack in packs:
        rows += pack.timing_rows(report, expect, gpu_expected=gpu_expected)
    if expect.cuda is not None:
        rows.append(_cuda_row(report, expect, gpu_expected))
    return tuple(rows)


def verdict(rows: Iterable[CheckRow]) -> ExitCode:
    """FAILED when any row failed; skips do not fail a verification."""
    return ExitCode.FAILED if any(r.status == "fail" for r in rows) else ExitCode.OK


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


# --- versions and config ---------------------------------------------------------


def _version_rows(report: Mapping[str, Any], expect: Expectations,
                  registry: Registry[VerifyPack]) -> list[CheckRow]:
    rows = []
    versions = _map(report.get("versions"))
    errors = _map(report.get("import_errors"))
    distributions = _map(report.get("distributions"))
    for name, wanted in sorted(expect.versions.items()):
        key = name.lower()
        if key == "python":
            found = _dig(report, "python", "version")
        elif key in probe_modules(expect, registry):
            found = versions.get(key)
        elif distributions.get(name) is not None:
            found = distributions[name]
        else:
            rows.append(CheckRow(f"version.{name}", wanted, "not reported", "skip",
                                 f"{name} is not a Python package the probe can see"))
            continue
        if found is None:
            error = str(errors.get(key) or "not installed")
            rows.append(CheckRow(f"version.{name}", wanted, "missing", "fail",
                                 _with_hint(f"import {key} failed: {error}")))
        elif _version_matches(wanted, str(found)):
            rows.append(CheckRow(f"version.{name}", wanted, str(found), "pass"))
        else:
            rows.append(CheckRow(f"version.{name}", wanted, str(found), "fail",
                                 f"{name} {found} is installed, the lock says {wanted}"))
    return rows


def _version_matches(wanted: str, found: str) -> bool:
    """``3.7`` matches ``3.7.16``; ``>=11.8`` is a specifier; otherwise equal releases."""
    if wanted[:1] in "<>=!~":
        try:
            return SpecifierSet(wanted).contains(found, prereleases=True)
        except (InvalidSpecifier, InvalidVersion):
            return False
    try:
        want, have = Version(wanted), Version(found)
    except InvalidVersion:
        return wanted == found
    return have.release[:len(want.release)] == want.release and (
        want.pre is None or want.pre == have.pre)


# --- GPU -------------------------------------------------------------------------


def _speedup_row(report: Mapping[str, Any], expect: Expectations,
                 registry: Registry[VerifyPack], gpu_expected: bool) -> CheckRow:
    wanted = expect.min_gpu_speedup
    shown = f">= {wanted:g}x" if wanted is not None else "no minimum"
    if not gpu_expected:
        return CheckRow("gpu.speedup", shown, "-", "skip", "no GPU on this run")
    if _dig(report, "gpu", "pygpu_activated") is not True:
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


# --- kernels ---------------------------------------------------------------------


def _find_kernel(report: Mapping[str, Any], name: str) -> Mapping[str, Any] | None:
    for entry in _list(report.get("kernels")):
        if isinstance(entry, Mapping) and entry.get("name") == name:
            return entry
    return None


def kernel_rows(entry: Mapping[str, Any] | None, kernel: KernelExpectation, *,
                base: str | None = None) -> list[CheckRow]:
    """The checksum and samples rows of one kernel's entry in a report, named ``base``
    (``kernel.NAME`` for the core's kernels; a pack names its own)."""
    base = base or f"kernel.{kernel.name}"
    checksum_text = _show(kernel.checksum)
    samples_text = f"{len(kernel.samples)} values within rtol {kernel.rtol:g}, " \
                   f"atol {kernel.atol:g}"
    failure = None
    if entry is None:
        failure = "the probe did not run it"
    elif entry.get("error"):
        failure = _with_hint(_clip(str(entry["error"])))
    elif kernel.output_shape is not None and \
            [int(n) for n in _list(entry.get("output_shape"))] != list(kernel.output_shape):
        failure = (f"output shape {entry.get('output_shape')}, "
                   f"expected {list(kernel.output_shape)}")
    if failure is not None:
        why = f"kernel {kernel.name}: {failure}"
        return [CheckRow(f"{base}.checksum", checksum_text, "error", "fail", why),
                CheckRow(f"{base}.samples", samples_text, "error", "fail", why)]
    assert entry is not None
    return [_checksum_row(entry, kernel, checksum_text, f"{base}.checksum"),
            _samples_row(entry, kernel, samples_text, f"{base}.samples")]


def _close(found: float, wanted: float, kernel: KernelExpectation) -> bool:
    return abs(found - wanted) <= kernel.atol + kernel.rtol * abs(wanted)


def _checksum_row(entry: Mapping[str, Any], kernel: KernelExpectation,
                  shown: str, row: str) -> CheckRow:
    found = _number(entry.get("checksum"))
    if found is None:
        bad = entry.get("nonfinite")
        return CheckRow(row, shown, "none", "fail",
                        f"kernel {kernel.name}: {bad} non-finite output values" if bad else
                        f"kernel {kernel.name}: the report has no checksum")
    if _close(found, kernel.checksum, kernel):
        return CheckRow(row, shown, _show(found), "pass")
    relative = abs(found - kernel.checksum) / max(abs(kernel.checksum), 1e-300)
    return CheckRow(row, shown, _show(found), "fail",
                    f"kernel {kernel.name}: checksum off by {relative:.2e} relative "
                    f"(rtol {kernel.rtol:g}, atol {kernel.atol:g})")


def _samples_row(entry: Mapping[str, Any], kernel: KernelExpectation, shown: str,
                 row: str) -> CheckRow:
    found = [_number(v) for v in _list(entry.get("samples"))]
    if len(found) != len(kernel.samples):
        return CheckRow(row, shown, f"{len(found)} values", "fail",
                        f"kernel {kernel.name}: expected {len(kernel.samples)} samples")
    bad = [(i, f, w) for i, f, w in zip(kernel.sample_indices, found, kernel.samples,
                                         strict=True)
           if f is None or not _close(f, w, kernel)]
    if not bad:
        return CheckRow(row, shown, f"{len(found)} values match", "pass")
    listed = "; ".join(f"[{i}] {_show(f)} != {_show(w)}" for i, f, w in bad[:3])
    return CheckRow(row, shown, f"{len(bad)} of {len(found)} off", "fail",
                    f"kernel {kernel.name}: {listed}")


# --- reading an untrusted report ------------------------------------------------------


def _dig(data: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(data, Mapping):
            return None
        data = data.get(key)
    return data


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> Sequence[Any]:
    return value if isinstance(value, list | tuple) else ()


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _show(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.12g}"
    return str(value)


def _clip(text: str, limit: int = 800) -> str:
    """A compiler error quotes whole graphs; a row keeps the start and the end."""
    if len(text) <= limit:
        return text
    return f"{text[:limit // 2]} ... {text[-limit // 2:]}"


def _with_hint(error: str) -> str:
    registry = _HINTS.current()
    if registry is None:
        return error
    for pack in registry:
        hint = pack.import_hint(error)
        if hint is not None:
            return f"{error} ({hint})"
    for needle, hint in error_hints(registry):
        if needle in error:
            return f"{error} (hint: {hint})"
    return error


_SHOWN = 5  # items a drift row names; the rest counted


def drift_rows(drift: Drift, *, sync: str = "envforge apply SPEC --sync") -> tuple[CheckRow, ...]:
    """Verify's rows for drift. Each fails when it finds something, the extra one included:
    a distribution the lock does not name is code on the environment's path that nothing
    vouches for (it can shadow a locked module or run a ``.pth`` at start-up), so a pass
    would no longer mean that the locked stack is what runs. ``sync`` is the command that
    fixes it, shown in each failing row."""
    def row(name: str, expected: str, items: list[str], why: str) -> CheckRow:
        if not items:
            return CheckRow(name, expected, expected, "pass")
        shown = "; ".join(items[:_SHOWN]) + (f"; and {len(items) - _SHOWN} more"
                                             if len(items) > _SHOWN else "")
        return CheckRow(name, expected, shown, "fail", f"{why}; `{sync}` restores the locked set")

    return (
        row("drift.versions", "every locked distribution at its locked version",
            [*drift.other_version, *(f"{n}: missing" for n in drift.missing)],
            "the environment does not hold the locked versions"),
        row("drift.files", "every locked file as its RECORD hashes it", drift.modified,
            "files were changed after install"),
        row("drift.extra", "no distribution the lock does not name", drift.extra,
            "installed behind envforge's back: not locked, not verified"),
    )
