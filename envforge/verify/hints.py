"""What verify asks of a pack, and the hints a failing row's text gets from the packs judging
it: ``check_report`` applies them once to every failing row, with the registry it is handed,
so a pack's rows stay plain functions of the report and never ask for hints themselves."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol

from envforge.knowledge import error_hints
from envforge.lockfile import Expectations
from envforge.packapi import Pack, Registry
from envforge.verify.rows import CheckRow


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

    def error_hints(self) -> tuple[tuple[str, str], ...]: ...


def explain(error: str, registry: Registry[VerifyPack]) -> str:
    """``error`` with the first hint of ``registry``'s packs (``FrameworkPack.error_hints``,
    in registry order, then the core's) whose text the error holds."""
    for needle, hint in error_hints(registry):
        if needle in error:
            return f"{error} (hint: {hint})"
    return error


def hinted(rows: Iterable[CheckRow], registry: Registry[VerifyPack]) -> tuple[CheckRow, ...]:
    """Each failing row with its ``why`` explained (``explain``); passes and skips as they
    are. A row's failure text ends with the error it quotes, so the hint follows it."""
    return tuple(replace(row, why=explain(row.why, registry))
                 if row.status == "fail" and row.why else row for row in rows)
