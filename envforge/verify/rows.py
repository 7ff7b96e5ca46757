"""A check row, the unit of verify's output, and the verdict over rows; every judge here
and in the packs returns rows, so this sits below all of them."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from envforge.errors import ExitCode

Status = Literal["pass", "fail", "skip"]


@dataclass(frozen=True, slots=True)
class CheckRow:
    """One thing verify checked; ``why`` says what went wrong or why it was skipped."""

    name: str
    expected: str
    found: str
    status: Status
    why: str = ""


def verdict(rows: Iterable[CheckRow]) -> ExitCode:
    """FAILED when any row failed; skips do not fail a verification."""
    return ExitCode.FAILED if any(r.status == "fail" for r in rows) else ExitCode.OK
