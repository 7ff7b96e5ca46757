"""The one executor performs exactly the plan it is given, and refuses (exit 2) an action
whose before-state changed since the plan was made; what ran stays journaled and undoable."""

from __future__ import annotations

import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from envforge.errors import BusyError, ExitCode
from envforge.executor import StalePlanError, execute, undo
from envforge.journal import Transaction, refuse_if_held
from envforge.plan import make_plan
from envforge.steps.actions import StepPlan, WriteFile
from envforge.steps.base import Change, StepContext, state_of
from tests.testing.contexts import make_ctx


class Writes:
    """A file step: plans one write of ``data`` to ``path``."""

    def __init__(self, name: str, path: Path, data: bytes) -> None:
        self.name, self.path, self.data = name, path, data

    def plan(self, ctx: StepContext) -> StepPlan:
        if self.path.is_file() and self.path.read_bytes() == self.data:
            return StepPlan(step=self.name, changes=())
        return StepPlan(step=self.name, changes=(Change(
            action="replace", target=str(self.path), before=None, after=None),), actions=(
            WriteFile(path=str(self.path), before=state_of(self.path), data=self.data),))

    def describe(self, ctx: StepContext) -> tuple[Change, ...]:
        return self.plan(ctx).changes

    def apply(self, ctx: StepContext, tx: Transaction) -> None:
        raise AssertionError("the executor performs the planned actions, not apply")


class Tool:
    """A tool step (one RunStep) that, as a side effect, edits ``clobbers`` too."""

    name = "tool"

    def __init__(self, clobbers: Path) -> None:
        self.clobbers = clobbers
        self.runs = 0

    def describe(self, ctx: StepContext) -> tuple[Change, ...]:
        return (Change(action="create", target=str(ctx.prefix), before=None, after="tool"),)

    def apply(self, ctx: StepContext, tx: Transaction) -> None:
        self.runs += 1
        self.clobbers.write_bytes(b"changed behind the plan's back\n")


def test_a_file_edited_after_planning_is_refused_and_nothing_changes(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path, "linux-64", None)
    rc = tmp_path / "home-rc"
    rc.write_bytes(b"user\n")
    steps = [Writes("rc", rc, b"envforge\n")]
    plan = make_plan(ctx, steps, spec="x.toml")
    rc.write_bytes(b"user, edited after the plan\n")

    with pytest.raises(StalePlanError) as caught:
        execute(ctx, steps, record={"spec": "/x.toml"}, plan=plan)

    assert caught.value.exit_code == ExitCode.BAD_INPUT
    assert str(caught.value).startswith(f"the plan is stale: {rc} was sha256:")
    assert "nothing was changed" in str(caught.value) and "\n" not in str(caught.value)
    assert rc.read_bytes() == b"user, edited after the plan\n"
    assert not (ctx.state_dir / "journal.jsonl").exists()


def test_a_change_mid_apply_stops_before_the_action_and_rollback_undoes_what_ran(
        tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path, "linux-64", None)
    first, second = tmp_path / "first", tmp_path / "second"
    second.write_bytes(b"user's\n")
    tool = Tool(clobbers=second)
    steps = [Writes("first", first, b"1\n"), tool, Writes("second", second, b"2\n")]
    plan = make_plan(ctx, steps, spec="x.toml")

    with pytest.raises(StalePlanError, match="^" + re.escape(
            f"step second: the host changed since the plan was made: {second} was sha256:")):
        execute(ctx, steps, record={"spec": "/x.toml"}, plan=plan)

    assert first.read_bytes() == b"1\n" and tool.runs == 1
    assert second.read_bytes() == b"changed behind the plan's back\n"  # not overwritten
    undo(ctx.state_dir)
    assert not first.exists()


def test_the_executor_performs_the_plan_not_a_new_one(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path, "linux-64", None)
    rc = tmp_path / "rc"
    steps = [Writes("rc", rc, b"planned\n")]
    plan = make_plan(ctx, steps, spec="x.toml")
    steps[0].data = b"what a second describe would say\n"
    assert execute(ctx, steps, record={"spec": "/x.toml"}, plan=plan) == ["rc"]
    assert rc.read_bytes() == b"planned\n"


def test_a_plan_of_other_steps_is_refused(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path, "linux-64", None)
    plan = make_plan(ctx, [Writes("rc", tmp_path / "rc", b"x")], spec="x.toml")
    with pytest.raises(Exception, match=r"the plan's steps \(rc\) are not the steps"):
        execute(ctx, [Writes("other", tmp_path / "rc", b"x")], record={"spec": "/x"}, plan=plan)


_APPLYING = """
import sys, time
from pathlib import Path
from envforge.journal import env_lock
with env_lock(Path(sys.argv[1])):
    print("locked", flush=True)
    sys.stdin.readline()
    Path(sys.argv[2]).write_bytes(b"written by the other apply\\n")
"""


def test_a_plan_another_apply_made_stale_while_this_one_waited_names_its_pid(
        tmp_path: Path) -> None:
    """Issue 29 #11: the second of two applies at once blamed its plan; it names the first."""
    ctx = make_ctx(tmp_path, "linux-64", None)
    rc = tmp_path / "home-rc"
    steps = [Writes("rc", rc, b"envforge\n")]
    plan = make_plan(ctx, steps, spec="x.toml")
    holder = subprocess.Popen([sys.executable, "-c", _APPLYING, str(ctx.state_dir), str(rc)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdin is not None
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(BusyError, match=rf"\(pid {holder.pid}\)"):
            refuse_if_held(ctx.state_dir)
        threading.Timer(0.5, lambda: (holder.stdin.write("go\n"), holder.stdin.flush())).start()
        with pytest.raises(BusyError) as caught:
            execute(ctx, steps, record={"spec": "/x.toml"}, plan=plan)
    finally:
        holder.wait(timeout=30)
    assert str(caught.value).startswith(f"another envforge (pid {holder.pid}) applied to "
                                        f"{ctx.prefix} while this one waited for it; the plan "
                                        f"is stale: {rc}")
    assert caught.value.exit_code == ExitCode.FAILED
    assert rc.read_bytes() == b"written by the other apply\n"
    refuse_if_held(ctx.state_dir)  # free again
