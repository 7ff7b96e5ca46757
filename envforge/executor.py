"""Runs a plan's steps through the journal, one environment at a time.

Each step re-observes the host before acting, so re-running after a crash converges: what
finished is skipped, what was cut short is done again (every step is idempotent), and the
journal still holds the original state of everything touched for rollback.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from envforge.errors import InputError, StepError
from envforge.journal import Journal, Transaction, env_lock, fsync_dir, naming, rollback
from envforge.steps.base import Step, StepContext

APPLIED = "applied.json"


def execute(ctx: StepContext, steps: Sequence[Step], *, record: dict[str, Any]) -> list[str]:
    """Apply every step that has something to do; returns the names of the steps run.

    The environment's lock is taken before anything is written, and under it the prefix's
    owner is checked again: a second apply that waited for the first never takes over."""
    ran: list[str] = []
    with env_lock(ctx.state_dir):
        check_owner(ctx.state_dir, record["spec"], ctx.prefix)
        journal = Journal(ctx.state_dir)
        _write_record(ctx.state_dir, {**record, "complete": False})
        for step in steps:
            if not step.describe(ctx):
                continue
            ctx.ui.info(f"• {step.name}")
            tx = Transaction(journal, step.name)
            tx.begin()
            with ctx.ui.progress(step.name):  # a spinner with elapsed time on a terminal
                step.apply(ctx, tx)
            tx.done()
            ran.append(step.name)
        _write_record(ctx.state_dir, {**record, "complete": True, "applied_at": time.time()})
    return ran


def undo(state_dir: Path, *, spec: str | None = None, force: bool = False) -> list[str]:
    """Roll back everything the journal recorded, and forget the environment.

    With ``spec``, only the spec that applied it may (``force``: whichever asks)."""
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
