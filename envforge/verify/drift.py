"""Verify's rows for an environment that drifted from its lock."""

from __future__ import annotations

from envforge.drift import Drift
from envforge.verify.rows import CheckRow

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
