"""Doctor's safe fixes performed: doctor's steps (``doctor.fixes``) run by apply's executor.

The composition lives here, in the app layer, so doctor judges and plans without importing
apply (pyproject's "doctor-apart" contract). The fixes are planned first (reading only), then
performed exactly as shown through doctor's own journal (``<state>/doctor``): fixes are not
part of any environment, and ``envforge status`` does not list them.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from envforge.doctor.fixes import FixStep
from envforge.executor import refuse_stale, run_plan
from envforge.journal import Journal, env_lock, rollback
from envforge.paths import EnvforgeDirs
from envforge.plan import Plan

DOCTOR_STATE = "doctor"


def state_dir(dirs: EnvforgeDirs) -> Path:
    return dirs.state / DOCTOR_STATE


def plan_fixes(steps: Sequence[FixStep], *, platform: str, where: str) -> Plan:
    """The fixes as a plan, shown like ``envforge plan``; reading only."""
    return Plan(spec="envforge doctor --fix", platform=platform, prefix=where,
                steps=tuple(s.plan() for s in steps))


def apply_fixes(fixes: Plan | Sequence[FixStep], state: Path) -> list[str]:
    """Perform the fixes' plan (made now when given steps) through doctor's journal, each
    before-state checked first; the names of the steps that ran."""
    plan = fixes if isinstance(fixes, Plan) else plan_fixes(fixes, platform="", where="")
    state.mkdir(parents=True, exist_ok=True)
    with env_lock(state):
        refuse_stale(plan)
        return run_plan(plan, Journal(state))


def undo_fixes(state: Path, *, force: bool = False) -> list[str]:
    """Put back everything doctor's fixes changed, newest first; one line per thing undone.

    The same rollback as ``envforge rollback``: a file changed since is kept, its original
    put beside it; ``force`` goes past a damaged journal."""
    if not (state / "journal.jsonl").exists():
        return []
    with env_lock(state):
        return rollback(Journal(state), force=force)
