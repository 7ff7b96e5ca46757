"""Typed actions: each one's before-state read back exactly, performed through the journal,
and serialised whole (a saved plan carries a user's odd bytes unchanged)."""

from __future__ import annotations

from pathlib import Path

import pytest

from envforge.journal import Journal, Transaction, rollback
from envforge.plan import Plan
from envforge.steps.actions import (
    CopyFile,
    MakeLink,
    StepPlan,
    WriteBlock,
    WriteFile,
    drift,
    perform,
    with_block,
)
from envforge.steps.base import Change, state_of


def _tx(tmp_path: Path) -> Transaction:
    tx = Transaction(Journal(tmp_path / "state"), "test")
    tx.begin()
    return tx


def test_a_write_planned_against_a_file_is_refused_once_the_file_changed(tmp_path: Path) -> None:
    rc = tmp_path / "rc"
    rc.write_bytes(b"mine\n")
    action = WriteFile(path=str(rc), before=state_of(rc), data=b"envforge's\n")
    assert drift(action) is None
    rc.write_bytes(b"mine, edited\n")
    why = drift(action)
    assert why is not None and why.startswith(f"{rc} was sha256:") and ", now sha256:" in why
    rc.unlink()
    assert (why := drift(action)) is not None and why.endswith("now absent")


def test_a_path_under_a_folder_this_plan_made_is_not_compared(tmp_path: Path) -> None:
    prefix = tmp_path / "prefix"
    action = WriteFile(path=str(prefix / "bin" / "x"), before=None, data=b"")
    (prefix / "bin").mkdir(parents=True)
    (prefix / "bin" / "x").write_text("made by the venv step of this plan")
    assert drift(action) is not None
    assert drift(action, owned=[prefix]) is None


def test_a_staged_source_changed_since_the_plan_is_refused(tmp_path: Path) -> None:
    source = tmp_path / "staged.so"
    source.write_bytes(b"\x7fELF")
    action = CopyFile(path=str(tmp_path / "dest.so"), before=None, source=str(source),
                      sha256=state_of(source).removeprefix("sha256:"))  # type: ignore[union-attr]
    assert drift(action) is None
    source.write_bytes(b"\x7fELF, swapped")
    assert "to be copied to" in (drift(action) or "")


@pytest.mark.posix_only("symbolic links")
def test_performed_actions_are_journaled_and_rolled_back(tmp_path: Path) -> None:
    rc, link = tmp_path / "home" / "rc", tmp_path / "home" / "lib.so"
    rc.parent.mkdir()
    rc.write_bytes(b"user\n")
    tx = _tx(tmp_path)
    perform(WriteFile(path=str(rc), before=state_of(rc), data=b"ours\n"), tx)
    perform(MakeLink(path=str(link), before=None, target="lib.so.1"), tx)
    tx.done()
    assert rc.read_bytes() == b"ours\n" and link.readlink() == Path("lib.so.1")
    rollback(Journal(tmp_path / "state"))
    assert rc.read_bytes() == b"user\n" and not link.is_symlink()


def test_a_block_goes_into_the_script_there_at_perform_time(tmp_path: Path) -> None:
    script = tmp_path / "activate"
    action = WriteBlock(path=str(script), before=None, block="export X=1\n")
    perform(action, _tx(tmp_path))
    assert not script.exists()  # no script (yet): nothing to add to
    script.write_text("# the venv's own\n")
    perform(action, _tx(tmp_path))
    assert script.read_text() == with_block("# the venv's own\n", "export X=1\n")
    assert with_block(script.read_text(), "export X=1\n") == script.read_text()


def test_a_plan_round_trips_through_json_byte_for_byte() -> None:
    data = b"[global]\r\n# \xff\xfe not UTF-8\n"
    plan = Plan(spec="x.toml", platform="linux-64", prefix="/p", steps=(StepPlan(
        step="theanorc", changes=(Change(action="create", target="/h/.theanorc", before=None,
                                         after="sha256:1"),),
        actions=(WriteFile(path="/h/.theanorc", before=None, data=data),)),))
    again = Plan.model_validate_json(plan.model_dump_json())
    assert again == plan
    assert isinstance(again.steps[0].actions[0], WriteFile)
    assert again.steps[0].actions[0].data == data


def test_a_supplied_artifact_is_hashed_unless_this_run_checked_it(tmp_path: Path) -> None:
    """cuDNN's and MinGW's steps read their archive through ``supplied_artifact``: a file
    not the locked one is refused, one preflight already hashed is not read again."""
    import hashlib
    from dataclasses import replace

    from envforge.errors import ArtifactError
    from envforge.steps.base import supplied_artifact
    from tests.testing.contexts import make_ctx

    archive = tmp_path / "mingw.7z"
    archive.write_bytes(b"the locked bytes")
    locked = hashlib.sha256(b"the locked bytes").hexdigest()
    ctx = make_ctx(tmp_path, "win-64", None, {"compiler": archive})
    assert supplied_artifact(ctx, "compiler", locked) == archive
    assert supplied_artifact(ctx, "cudnn", locked) is None
    archive.write_bytes(b"other bytes")
    with pytest.raises(ArtifactError, match="sha256 mismatch"):
        supplied_artifact(ctx, "compiler", locked)
    # preflight hashed it (and refused it there, had it differed): the step trusts that
    checked = replace(ctx, checked=frozenset({"compiler"}))
    assert supplied_artifact(checked, "compiler", locked) == archive
