"""Judging a probe report: the core's rows (versions, kernels, GPU) and each locked pack's, in
a stable order, with the packs' hints on failures."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from envforge.lockfile import Expectations
from envforge.packapi import Registry
from envforge.verify.gpu import GpuPack, _cuda_row, _speedup_row
from envforge.verify.hints import hinted
from envforge.verify.kernels import _find_kernel, kernel_rows
from envforge.verify.request import REPORT_FORMAT, probe_modules
from envforge.verify.rows import CheckRow
from envforge.verify.untrusted import _dig, _map


def check_report(report: Mapping[str, Any], expect: Expectations, registry: Registry[GpuPack],
                 *, gpu_expected: bool, prefix: str | None = None) -> tuple[CheckRow, ...]:
    """Every check of a probe report against the expectations, in a stable order, each
    failure with the hint of the lock's packs (of ``registry``) that explains it
    (``hints.hinted``).

    ``gpu_expected`` is false where the lock targets a GPU but this machine has none
    (GPU rows are then skipped, not failed). ``prefix`` fills the ``{prefix}`` that
    locked flags hold for the environment's folder.
    """
    if report.get("error") or report.get("format") != REPORT_FORMAT:
        why = str(report.get("error") or f"report format {report.get('format')!r} "
                                          f"is not {REPORT_FORMAT}")
        return (CheckRow("probe", "a report", "no report", "fail", why),)
    # hints of the packs the lock holds only: Theano's pkg_resources hint named Theano's
    # line in a PyTorch environment, whose own torch 1.10 imports pkg_resources
    return hinted(_judge(report, expect, registry, gpu_expected=gpu_expected, prefix=prefix),
                  Registry(registry.locked(expect.packs)))


def _judge(report: Mapping[str, Any], expect: Expectations, registry: Registry[GpuPack], *,
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


def _version_rows(report: Mapping[str, Any], expect: Expectations,
                  registry: Registry[GpuPack]) -> list[CheckRow]:
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
                                 f"import {key} failed: {error}"))
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
