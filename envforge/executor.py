"""Performs a plan, exactly: each step's actions through the journal, one environment at a
time, and only as planned.

Before the first change every action's before-state is read again, and again right before
each action: one that no longer holds (the user edited the file a step would overwrite,
the prefix appeared) stops the apply with a one-line error, nothing further changed, and
the journal holds what ran, so rollback still works. Re-running after a crash converges:
a new plan finds what finished, and what was cut short is done again (a ``RunStep``'s tool
work is idempotent).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from envforge.errors import BusyError, InputError, StepError
from envforge.journal import Journal, Transaction, env_lock, fsync_dir, naming, rollback
from envforge.plan import Plan, make_plan
from envforge.steps.actions import (
    Action,
    MakeTree,
    Observes,
    RunStep,
    StepPlan,
    drift,
    perform,
)
from envforge.steps.base import Step, StepContext, after
from envforge.ui import UI

APPLIED = "applied.json"


class StalePlanError(InputError):
    """An action's before-state changed since the plan was made (exit 2)."""


def execute(ctx: StepContext, steps: Sequence[Step], *, record: dict[str, Any],
            plan: Plan | None = None) -> list[str]:
    """Perform ``plan`` (made now from ``steps`` when not given); the names of the steps
    that did something.

    The environment's lock is taken before anything is written, and under it the prefix's
    owner is checked again: a second apply that waited for the first never takes over."""
    if plan is None:
        plan = make_plan(ctx, steps, spec=str(record.get("spec", "")))
    planned, named = [s.step for s in plan.steps], [s.name for s in steps]
    if planned != named:
        raise InputError(f"the plan's steps ({', '.join(planned)}) are not the steps this spec "
                         f"needs ({', '.join(named)}); make the plan again")
    with env_lock(ctx.state_dir) as waited:
        check_owner(ctx.state_dir, record["spec"], ctx.prefix)
        try:
            refuse_stale(plan, ctx, steps)
        except StalePlanError as exc:
            if waited is None:
                raise
            raise BusyError(f"another envforge (pid {waited}) applied to {ctx.prefix} while "
                            f"this one waited for it; {exc}") from None
        journal = Journal(ctx.state_dir)
        _write_record(ctx.state_dir, {**record, "complete": False})
        ran = run_plan(plan, journal, ctx=ctx, steps=steps, ui=ctx.ui)
        _write_record(ctx.state_dir, {**record, "complete": True, "applied_at": time.time()})
    return ran


def refuse_stale(plan: Plan, ctx: StepContext | None = None,
                 steps: Sequence[Step] = ()) -> None:
    """StalePlanError naming the first before-state that no longer holds; reads only."""
    by_name = {s.name: s for s in steps}
    for planned in plan.steps:
        for action in planned.actions:
            why = _drift(action, (), by_name.get(planned.step), ctx, sources=True)
            if why is not None:
                raise StalePlanError(f"the plan is stale: {why}; nothing was changed: make "
                                     "the plan again")


def run_plan(plan: Plan, journal: Journal, *, ctx: StepContext | None = None,
             steps: Sequence[Step] = (), ui: UI | None = None) -> list[str]:
    """Each step's actions, in order, each one's before-state checked right before it.

    ``ctx`` and ``steps`` are needed only for a ``RunStep`` (a step's own tool work) and
    the findings later steps read; doctor's fixes are file actions alone."""
    by_name = {s.name: s for s in steps}
    owned: list[Path] = []  # folders this run made or had a tool write in
    ran: list[str] = []
    for planned in plan.steps:
        step = by_name.get(planned.step)
        if planned.actions:
            if ui is not None:
                ui.info(f"• {planned.step}")
            tx = Transaction(journal, planned.step)
            tx.begin()
            if ui is None:
                _run_step(planned, step, ctx, tx, owned)
            else:
                with ui.progress(planned.step):  # a spinner with elapsed time on a terminal
                    _run_step(planned, step, ctx, tx, owned)
            tx.done()
            ran.append(planned.step)
        if step is not None and ctx is not None:
            ctx = after(step, ctx)  # what it found, for the steps after it
    return ran


def _run_step(planned: StepPlan, step: Step | None, ctx: StepContext | None,
              tx: Transaction, owned: list[Path]) -> None:
    for action in planned.actions:
        why = _drift(action, owned, step, ctx, sources=False)
        if why is not None:
            raise StalePlanError(f"step {planned.step}: the host changed since the plan was "
                                 f"made: {why}; stopped before changing it (`envforge apply` "
                                 "again plans anew, `envforge rollback` undoes what ran)")
        if isinstance(action, RunStep):
            if step is None or ctx is None:
                raise StepError(f"step {action.step}: not a step of this run")
            step.apply(ctx, tx)
            if action.within is not None:
                owned.append(Path(action.within))
            continue
        perform(action, tx)
        if isinstance(action, MakeTree):
            owned.append(Path(action.path))


def _drift(action: Action, owned: Sequence[Path], step: Step | None,
           ctx: StepContext | None, *, sources: bool) -> str | None:
    if isinstance(action, RunStep):
        if isinstance(step, Observes) and ctx is not None:
            now = step.observe(ctx)
            if now != action.before:
                return f"{action.step}: {action.before!r} when planned, now {now!r}"
        return None
    return drift(action, owned, sources=sources)


def undo(state_dir: Path, *, spec: str | None = None, force: bool = False) -> list[str]:
    """Roll back everything the journal recorded, and forget the environment.

    With ``spec``, only the spec that applied it may (``force``: whichever asks). A folder
    two environments made at once (data/envs) is in both journals, and the stack of edits
    (journal/stack.py) leaves its removal to the last rollback."""
    from envforge.host.windows import host_registry

    registry = host_registry()  # on Windows: the user PATH lives in the registry
    with env_lock(state_dir):
        if spec is not None and not force:
            check_owner(state_dir, spec, None)
        undone = rollback(Journal(state_dir), registry=registry, force=force)
        (state_dir / APPLIED).unlink(missing_ok=True)
        fsync_dir(state_dir)
    return undone


def check_owner(state_dir: Path, spec: str, prefix: Path | None) -> None:
    """Refuse (InputError) when another spec's journal holds this prefix.

    An environment is its prefix: the spec recorded by the apply that made it is the only
    one that may change or roll it back, whatever its ``[project] name``."""
    record = read_record(state_dir)
    if record is None or record.get("spec") in (None, spec):
        return
    where = record.get("prefix") or (str(prefix) if prefix else state_dir)
    raise InputError(f"{where} holds the environment applied from {record['spec']}, not "
                     f"{spec}: roll that back first (`envforge rollback {record['spec']} "
                     f"--prefix {where}`), or choose another --prefix")


def _write_record(state_dir: Path, record: dict[str, Any]) -> None:
    """Written whole or not at all: a temporary file, fsynced, renamed, folder fsynced."""
    tmp = state_dir / (APPLIED + ".tmp")
    data = (json.dumps(record, indent=2, sort_keys=True) + "\n").encode("utf-8")
    with naming(tmp), open(tmp, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    tmp.replace(state_dir / APPLIED)
    fsync_dir(state_dir)


def read_record(state_dir: Path) -> dict[str, Any] | None:
    """What apply recorded; a damaged record is a one-line StepError naming the way out."""
    path = state_dir / APPLIED
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise DamagedStateError(path, exc) from None
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise DamagedStateError(path, exc) from None
    if not isinstance(data, dict):
        raise DamagedStateError(path, "not a JSON object")
    return data


class DamagedStateError(StepError):
    """``applied.json`` cannot be read: rollback --force is the way out."""

    def __init__(self, path: Path, why: object) -> None:
        self.path = path
        super().__init__(f"{path} is damaged ({why}); `envforge rollback SPEC --prefix P "
                         "--force` undoes what the journal recorded, then apply again")
