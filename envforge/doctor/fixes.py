"""Safe fixes as a plan for apply's executor: planned first (reading only), then performed
exactly as shown, through the journal.

Each finding's ``Fix.actions`` become file actions (``steps/actions.py``) with the state each
expects to find, so a file changed between the plan and the confirmation is refused, every
fix is backed up, and ``envforge doctor --undo`` restores the files byte for byte. Doctor's
journal is its own (``<state>/doctor``): fixes are not part of any environment, and
``envforge status`` does not list them.
"""

from __future__ import annotations

import difflib
import hashlib
from collections.abc import Sequence
from pathlib import Path

from envforge.doctor.model import FileCopy, Finding, TheanorcEdit
from envforge.doctor.rcfile import rewrite
from envforge.executor import refuse_stale, run_plan
from envforge.journal import Journal, env_lock, rollback
from envforge.paths import EnvforgeDirs
from envforge.plan import Plan
from envforge.steps.actions import StepPlan, WriteFile, file_plan
from envforge.steps.base import Change, WantFile, state_of

DOCTOR_STATE = "doctor"


def state_dir(dirs: EnvforgeDirs) -> Path:
    return dirs.state / DOCTOR_STATE


def _digest(data: bytes | None) -> str | None:
    return None if data is None else "sha256:" + hashlib.sha256(data).hexdigest()[:16]


class TheanorcFixStep:
    """Rewrite one .theanorc with doctor's line edits."""

    def __init__(self, path: Path, edits: Sequence[TheanorcEdit]) -> None:
        self.path = path
        self.edits = tuple(edits)
        self.name = f"doctor: {path}"

    def plan(self) -> StepPlan:
        before = self.path.read_bytes() if self.path.is_file() else None
        text = (before or b"").decode("utf-8", errors="surrogateescape")
        after = rewrite(text, self.edits).encode("utf-8", errors="surrogateescape")
        if before == after:
            return StepPlan(step=self.name, changes=())
        diff = "".join(difflib.unified_diff(
            (before or b"").decode("utf-8", "replace").splitlines(keepends=True),
            after.decode("utf-8", "replace").splitlines(keepends=True),
            f"{self.path} (now)", f"{self.path} (after)"))
        change = Change(action="replace" if before is not None else "create",
                        target=str(self.path), before=_digest(before), after=_digest(after),
                        detail=diff)
        write = WriteFile(path=str(self.path), before=state_of(self.path), data=after)
        return StepPlan(step=self.name, changes=(change,), actions=(write,))


class CopyFixStep:
    """Files copied under the names a loader asks for (libgpuarray's DLLs)."""

    name = "doctor: library names"

    def __init__(self, copies: Sequence[FileCopy]) -> None:
        self.wants = [WantFile(Path(c.target), Path(c.source)) for c in copies]

    def plan(self) -> StepPlan:
        changes, actions = file_plan(self.wants)
        return StepPlan(step=self.name, changes=changes, actions=actions)


FixStep = TheanorcFixStep | CopyFixStep


def _sets(edit: TheanorcEdit) -> tuple[str, str]:
    """The (section, key) whose value a ``set`` edit decides."""
    return edit.section, edit.key.lower()


def fix_steps(findings: Sequence[Finding]) -> list[FixStep]:
    """One step per .theanorc, then one for all copies.

    Two findings may set the same key (``enabled = true`` is both a wrong case and, with
    cuDNN 9, must become ``False``): the first one wins. Findings come errors first, in
    rule order, and the rules that decide a value (cuDNN) run before the ones that only
    correct its spelling (config). A ``move`` never overrides a key already set, so it
    always applies.
    """
    edits: dict[str, list[TheanorcEdit]] = {}
    decided: set[tuple[str, str, str]] = set()
    copies: dict[str, FileCopy] = {}
    for finding in findings:
        for action in finding.fix.actions if finding.fix else ():
            if isinstance(action, TheanorcEdit):
                if action.op == "set":
                    target = (action.path, *_sets(action))
                    if target in decided:
                        continue
                    decided.add(target)
                edits.setdefault(action.path, []).append(action)
            else:
                copies.setdefault(action.target, action)
    steps: list[FixStep] = [TheanorcFixStep(Path(path), group) for path, group in edits.items()]
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
