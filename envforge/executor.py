"""Runs a plan's steps through the journal, one environment at a time.

Each step re-observes the host before acting, so re-running after a crash converges: what
finished is skipped, what was cut short is done again (every step is idempotent), and the
journal still holds the original state of everything touched for rollback.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from envforge.journal import Journal, Transaction, env_lock, rollback
from envforge.steps.base import Step, StepContext

APPLIED = "applied.json"


def execute(ctx: StepContext, steps: Sequence[Step], *, record: dict[str, Any]) -> list[str]:
    """Apply every step that has something to do; returns the names of the steps run."""
    ran: list[str] = []
    ctx.state_dir.mkdir(parents=True, exist_ok=True)
    with env_lock(ctx.state_dir):
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


def undo(state_dir: Path) -> list[str]:
    """Roll back everything the journal recorded, and forget the environment."""
    registry = None
    if sys.platform == "win32":  # pragma: no cover - the user PATH lives in the registry
        from envforge.host.windows import WinRegistry

        registry = WinRegistry()
    with env_lock(state_dir):
        undone = rollback(Journal(state_dir), registry=registry)
        (state_dir / APPLIED).unlink(missing_ok=True)
    return undone


def _write_record(state_dir: Path, record: dict[str, Any]) -> None:
    tmp = state_dir / (APPLIED + ".tmp")
    tmp.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    tmp.replace(state_dir / APPLIED)


def read_record(state_dir: Path) -> dict[str, Any] | None:
    path = state_dir / APPLIED
    if not path.is_file():
        return None
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data
