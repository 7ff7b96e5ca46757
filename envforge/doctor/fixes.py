"""Safe fixes as apply steps: described first (check mode), then made through the journal.

Each finding's ``Fix.actions`` become steps with the same contract as ``envforge apply``'s
(``describe`` changes nothing; ``apply`` changes the machine only through a
``Transaction``), so every fix is backed up and ``envforge doctor --undo`` restores the
files byte for byte. Doctor's journal is its own (``<state>/doctor``): fixes are not part
of any environment, and ``envforge status`` does not list them.
"""

from __future__ import annotations

import difflib
import hashlib
from collections.abc import Sequence
from pathlib import Path

from envforge.doctor.model import FileCopy, Finding, TheanorcEdit
from envforge.doctor.rcfile import rewrite
from envforge.journal import Journal, Transaction, env_lock, rollback
from envforge.paths import EnvforgeDirs
from envforge.plan import Plan, StepPlan
from envforge.steps.base import Change, Step, StepContext, WantFile, apply_wants, changes_for

DOCTOR_STATE = "doctor"


def state_dir(dirs: EnvforgeDirs) -> Path:
    return dirs.state / DOCTOR_STATE


def _digest(data: bytes | None) -> str | None:
    return None if data is None else "sha256:" + hashlib.sha256(data).hexdigest()[:16]


class TheanorcFixStep:
    """Rewrite one .theanorc with doctor's line edits; needs nothing from a StepContext."""

    def __init__(self, path: Path, edits: Sequence[TheanorcEdit]) -> None:
        self.path = path
        self.edits = tuple(edits)
        self.name = f"doctor: {path}"

    def _before_after(self) -> tuple[bytes | None, bytes]:
        before = self.path.read_bytes() if self.path.is_file() else None
        text = (before or b"").decode("utf-8", errors="surrogateescape")
        after = rewrite(text, self.edits).encode("utf-8", errors="surrogateescape")
        return before, after

    def describe(self, ctx: StepContext | None = None) -> tuple[Change, ...]:
        before, after = self._before_after()
        if before == after:
            return ()
        diff = "".join(difflib.unified_diff(
            (before or b"").decode("utf-8", "replace").splitlines(keepends=True),
            after.decode("utf-8", "replace").splitlines(keepends=True),
            f"{self.path} (now)", f"{self.path} (after)"))
        return (Change(action="replace" if before is not None else "create",
                       target=str(self.path), before=_digest(before), after=_digest(after),
                       detail=diff),)

    def apply(self, ctx: StepContext | None, tx: Transaction) -> None:
        before, after = self._before_after()
        if before == after:
            return
        tx.write_bytes(self.path, after)


class CopyFixStep:
    """Files copied under the names a loader asks for (libgpuarray's DLLs)."""

    name = "doctor: library names"

    def __init__(self, copies: Sequence[FileCopy]) -> None:
        self.wants = [WantFile(Path(c.target), Path(c.source)) for c in copies]

    def describe(self, ctx: StepContext | None = None) -> tuple[Change, ...]:
        return changes_for(self.wants)

    def apply(self, ctx: StepContext | None, tx: Transaction) -> None:
        apply_wants(self.wants, tx)


FixStep = TheanorcFixStep | CopyFixStep
# Both keep apply's Step contract (they accept a StepContext and ignore it).
_CONTRACT: tuple[type[Step], ...] = (TheanorcFixStep, CopyFixStep)


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
                steps=tuple(StepPlan(step=s.name, changes=s.describe()) for s in steps))


def apply_fixes(steps: Sequence[FixStep], state: Path) -> list[str]:
    """Make each step's changes through doctor's journal; the names of the steps that ran."""
    ran = []
    state.mkdir(parents=True, exist_ok=True)
    with env_lock(state):
        journal = Journal(state)
        for step in steps:
            if not step.describe():
                continue
            tx = Transaction(journal, step.name)
            tx.begin()
            step.apply(None, tx)
            tx.done()
            ran.append(step.name)
    return ran


def undo_fixes(state: Path, *, force: bool = False) -> list[str]:
    """Put back everything doctor's fixes changed, newest first; one line per thing undone.

    The same rollback as ``envforge rollback``: a file changed since is kept, its original
    put beside it; ``force`` goes past a damaged journal."""
    if not (state / "journal.jsonl").exists():
        return []
    with env_lock(state):
        return rollback(Journal(state), force=force)
