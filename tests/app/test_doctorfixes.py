"""doctor --fix performs the plan it showed through apply's executor: a .theanorc edited
between the plan and the confirmation is refused, and --undo still restores byte for byte."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from envforge.app.doctorfixes import apply_fixes, plan_fixes, undo_fixes
from envforge.executor import StalePlanError
from envforge.packs.theano.doctor_fixes import ConfigFixStep
from envforge.packs.theano.rcfile import ConfigEdit
from envforge.plan import Plan

RC = b"[global]\r\ndevice = gpu\r\n# \xff mine\r\n"


def _plan(rc: Path) -> Plan:
    edit = ConfigEdit(path=str(rc), op="set", section="global", key="device", value="cuda")
    return plan_fixes([ConfigFixStep(rc, [edit])], platform="linux-64", where="this host")


def test_the_shown_plan_is_what_is_applied_and_undone(tmp_path: Path) -> None:
    rc = tmp_path / ".theanorc"
    rc.write_bytes(RC)
    plan = _plan(rc)
    assert plan.pending and rc.read_bytes() == RC
    assert apply_fixes(plan, tmp_path / "state") == [f"doctor: {rc}"]
    assert b"device = cuda" in rc.read_bytes() and b"\xff mine" in rc.read_bytes()
    assert undo_fixes(tmp_path / "state") == [f"restored {rc}"]
    assert rc.read_bytes() == RC


def test_a_theanorc_edited_after_the_plan_is_refused(tmp_path: Path) -> None:
    rc = tmp_path / ".theanorc"
    rc.write_bytes(RC)
    plan = _plan(rc)
    rc.write_bytes(RC + b"floatX = float64\r\n")
    with pytest.raises(StalePlanError, match=re.escape(f"the plan is stale: {rc} was sha256:")):
        apply_fixes(plan, tmp_path / "state")
    assert rc.read_bytes() == RC + b"floatX = float64\r\n"
    assert undo_fixes(tmp_path / "state") == []
