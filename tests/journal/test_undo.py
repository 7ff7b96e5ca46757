"""Rollback: run twice, interrupted, archived, and a tree a dying tool still writes."""

from __future__ import annotations

from pathlib import Path

import pytest

import envforge.journal.undo as undo_module
from envforge.journal import Journal, Transaction, rollback
from tests.testing.trees import snapshot


def test_rollback_twice_is_a_no_op_and_archives_the_journal(tmp_path: Path, tree: Path) -> None:
    before = snapshot(tree)
    journal = Journal(tmp_path / "state")
    Transaction(journal, "demo").write_bytes(tree / "etc" / "app.conf", b"changed")
    assert rollback(journal)
    assert rollback(journal) == []
    assert rollback(Journal(tmp_path / "state")) == []
    assert snapshot(tree) == before
    state = sorted(p.name for p in (tmp_path / "state").iterdir())
    assert state == ["backups.rolled-back-1", "journal.rolled-back-1.jsonl"]

    # A new journal starts afresh, and its rollback is archived under the next number.
    Transaction(Journal(tmp_path / "state"), "again").write_text(tree / "x", "x")
    rollback(Journal(tmp_path / "state"))
    assert (tmp_path / "state" / "journal.rolled-back-2.jsonl").is_file()
    assert not (tree / "x").exists()


@pytest.mark.parametrize("interrupt_at", [1, 2, 3, 5])
def test_interrupted_rollback_is_finished_by_running_it_again(
        tmp_path: Path, tree: Path, monkeypatch: pytest.MonkeyPatch, interrupt_at: int) -> None:
    before = snapshot(tree)
    journal = Journal(tmp_path / "state")
    tx = Transaction(journal, "demo")
    tx.write_bytes(tree / "etc" / "app.conf", b"changed")
    tx.write_text(tree / "a" / "b" / "new.txt", "new")
    tx.symlink(tree / "current", "a/b/new.txt")
    tx.remove(tree / "bin")

    real_undo = undo_module._undo
    calls = 0

    def undo_then_die(*args: object) -> str | None:
        nonlocal calls
        calls += 1
        if calls == interrupt_at:
            raise KeyboardInterrupt  # the process dies part way through
        return real_undo(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(undo_module, "_undo", undo_then_die)
    with pytest.raises(KeyboardInterrupt):
        rollback(journal)
    monkeypatch.setattr(undo_module, "_undo", real_undo)

    assert journal.path.is_file()  # not marked rolled back
    rollback(Journal(tmp_path / "state"))
    assert snapshot(tree) == before


def test_rollback_finishes_archiving_when_a_crash_left_the_backups(tmp_path: Path,
                                                                   tree: Path) -> None:
    journal = Journal(tmp_path / "state")
    Transaction(journal, "demo").write_bytes(tree / "etc" / "app.conf", b"changed")
    # The crash came after the journal's rename and before the backups' one.
    journal.path.replace(tmp_path / "state" / "journal.rolled-back-1.jsonl")
    assert rollback(Journal(tmp_path / "state")) == []
    assert (tmp_path / "state" / "backups.rolled-back-1" / "1").is_file()
    assert not (tmp_path / "state" / "backups").exists()


def test_a_file_another_process_has_open_on_windows_is_retried(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Windows refuses to delete a file a still-running tool has open (a sharing violation,
    WinError 32) where Linux would not: rollback retries until it is closed, as for
    "Directory not empty"; any other error is raised at once."""
    journal = Journal(tmp_path / "state")
    prefix = tmp_path / "env"
    Transaction(journal, "prefix").adopt_tree(prefix)
    (prefix / "site-packages").mkdir(parents=True)
    real_rmtree, calls = undo_module.shutil.rmtree, []

    def busy_once(path: str, *args: object, **kwargs: object) -> None:
        calls.append(path)
        if len(calls) == 1:
            busy = PermissionError(13, "Sharing violation", str(prefix / "site-packages"))
            busy.winerror = 32  # type: ignore[attr-defined]  # set by CPython on Windows only
            raise busy
        real_rmtree(path)

    monkeypatch.setattr(undo_module.shutil, "rmtree", busy_once)
    rollback(journal)
    assert len(calls) == 2 and not prefix.exists()

    def denied(path: str, *args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied", str(path))

    journal = Journal(tmp_path / "state2")
    Transaction(journal, "prefix").adopt_tree(prefix)
    prefix.mkdir()
    monkeypatch.setattr(undo_module.shutil, "rmtree", denied)
    with pytest.raises(PermissionError):
        rollback(journal)
