"""What verify asks of a pack, and the packs whose hints a failure's text gets while a report
is judged (scoped, so a pack's own rows get them without a registry argument)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol

from envforge.knowledge import error_hints
from envforge.lockfile import Expectations
from envforge.packapi import Pack, Registry, ScopedPacks
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

    def import_hint(self, error: str) -> str | None: ...

    def error_hints(self) -> tuple[tuple[str, str], ...]: ...


# The packs whose hints a failure's text gets, while ``check_report`` judges (a pack's own
# rows call ``kernel_rows`` and ``_with_hint`` from inside it); none outside ``hinting``.
_HINTS: ScopedPacks[VerifyPack] = ScopedPacks("envforge_verify_hints")


def hinting(registry: Registry[VerifyPack]) -> AbstractContextManager[None]:
    """Failures judged inside get ``registry``'s hints (``check_report`` judges inside)."""
    return _HINTS.using(registry)


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
