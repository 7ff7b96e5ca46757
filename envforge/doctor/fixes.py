"""Safe fixes as a plan for apply's executor: planned first (reading only), then performed
exactly as shown, through the journal.

Each finding's ``Fix.actions`` become file actions (``steps/actions.py``) with the state each
expects to find, so a file changed between the plan and the confirmation is refused, every
fix is backed up, and ``envforge doctor --undo`` restores the files byte for byte. Doctor's
journal is its own (``<state>/doctor``): fixes are not part of any environment, and
``envforge status`` does not list them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Protocol

from envforge.doctor.model import FileCopy, Finding, FixAction
from envforge.executor import refuse_stale, run_plan
from envforge.journal import Journal, env_lock, rollback
from envforge.packapi import Pack
from envforge.paths import EnvforgeDirs
from envforge.plan import Plan
from envforge.steps.actions import StepPlan, file_plan
from envforge.steps.base import WantFile

DOCTOR_STATE = "doctor"


def state_dir(dirs: EnvforgeDirs) -> Path:
    return dirs.state / DOCTOR_STATE


class FixStep(Protocol):
    """A step of doctor's fixes: planned reading only, performed by apply's executor."""

    @property
    def name(self) -> str: ...

    def plan(self) -> StepPlan: ...


# A pack's kind of fix action -> the steps that perform a group of them (in finding order).
FixPlanner = Callable[[Sequence[FixAction]], Sequence[FixStep]]


class FixPack(Pack, Protocol):
    """What doctor's fixes ask of a pack: the kinds of action it plans."""

    @property
    def fix_kinds(self) -> Mapping[str, FixPlanner]: ...


class CopyFixStep:
    """Files copied under the names a loader asks for (libgpuarray's DLLs)."""

    name = "doctor: library names"

    def __init__(self, copies: Sequence[FileCopy]) -> None:
        self.wants = [WantFile(Path(c.target), Path(c.source)) for c in copies]

    def plan(self) -> StepPlan:
        changes, actions = file_plan(self.wants)
        return StepPlan(step=self.name, changes=changes, actions=actions)


def fix_steps(findings: Sequence[Finding], packs: Iterable[FixPack]) -> list[FixStep]:
    """The steps of every finding's actions: each pack's kinds planned by the pack (in the
    order the kinds first appear: findings come errors first, in rule order), then one step
    for all the core's copies. An action of a kind no pack plans is a rule's bug."""
    planners = {kind: planner for pack in packs for kind, planner in pack.fix_kinds.items()}
    grouped: dict[str, list[FixAction]] = {}
    copies: dict[str, FileCopy] = {}
    for finding in findings:
        for action in finding.fix.actions if finding.fix else ():
            if isinstance(action, FileCopy):
                copies.setdefault(action.target, action)
            elif action.kind in planners:
                grouped.setdefault(action.kind, []).append(action)
            else:
                raise ValueError(f"{finding.id}: no pack plans a fix of kind {action.kind!r}")
    steps = [step for kind, actions in grouped.items() for step in planners[kind](actions)]
    if copies:
        steps.append(CopyFixStep(list(copies.values())))
    return steps


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
