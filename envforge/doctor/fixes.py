"""Safe fixes as steps: each finding's ``Fix.actions`` planned, reading only, into file
actions (``steps/actions.py``) with the state each expects to find.

Performing them is the app layer's (``app/doctorfixes.py``, through apply's executor), so
doctor imports no part of apply: a file changed between the plan and the confirmation is
refused there, every fix is backed up, and ``envforge doctor --undo`` restores the files
byte for byte.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Protocol

from envforge.doctor.model import FileCopy, Finding, FixAction
from envforge.packapi import Pack
from envforge.steps.actions import StepPlan, file_plan
from envforge.steps.base import WantFile


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
    """Files copied under the names a loader asks for (``FileCopy``)."""

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

