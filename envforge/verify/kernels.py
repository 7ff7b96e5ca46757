"""A kernel's rows: its checksum and samples in a report against the locked ones, within the
lock's tolerances."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from envforge.lockfile import KernelExpectation
from envforge.verify.rows import CheckRow
from envforge.verify.untrusted import _clip, _list, _number, _show


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
        failure = _clip(str(entry["error"]))
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
