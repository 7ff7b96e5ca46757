"""Theano's kind of doctor fix, ``theanorc-edit``: line edits of a .theanorc (rcfile.py),
one step per file, planned for apply's executor like the core's copies."""

from __future__ import annotations

import difflib
import hashlib
from collections.abc import Sequence
from pathlib import Path

from envforge.doctor.model import FixAction
from envforge.packs.theano.rcfile import ConfigEdit, rewrite
from envforge.steps.actions import StepPlan, WriteFile
from envforge.steps.base import Change, state_of


def _digest(data: bytes | None) -> str | None:
    return None if data is None else "sha256:" + hashlib.sha256(data).hexdigest()[:16]


class ConfigFixStep:
    """Rewrite one INI config file (a .theanorc) with doctor's line edits."""

    def __init__(self, path: Path, edits: Sequence[ConfigEdit]) -> None:
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


def _sets(edit: ConfigEdit) -> tuple[str, str]:
    """The (section, key) whose value a ``set`` edit decides."""
    return edit.section, edit.key.lower()


def config_fix_steps(actions: Sequence[FixAction]) -> list[ConfigFixStep]:
    """One step per config file, its edits in finding order.

    Two findings may set the same key (``enabled = true`` is both a wrong case and, with
    cuDNN 9, must become ``False``): the first one wins. Findings come errors first, in
    rule order, and the rules that decide a value (cuDNN) run before the ones that only
    correct its spelling (config). A ``move`` never overrides a key already set, so it
    always applies.
    """
    edits: dict[str, list[ConfigEdit]] = {}
    decided: set[tuple[str, str, str]] = set()
    for action in actions:
        assert isinstance(action, ConfigEdit)  # the kind this planner is registered for
        if action.op == "set":
            target = (action.path, *_sets(action))
            if target in decided:
                continue
            decided.add(target)
        edits.setdefault(action.path, []).append(action)
    return [ConfigFixStep(Path(path), group) for path, group in edits.items()]
