"""The journal's file: fsynced JSON lines, torn and corrupt lines, what it holds."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from envforge.errors import StepError
from envforge.host.windows import REG_EXPAND_SZ, RecordingRegistry
from envforge.journal import Journal, JournalEntry, Transaction, rollback


@pytest.mark.posix_only("backs up a relative symlink: under Wine, lstat does not find it")
def test_entries_are_fsynced_json_lines(tmp_path: Path, tree: Path) -> None:
    journal = Journal(tmp_path / "state")
    tx = Transaction(journal, "demo")
    tx.begin()
    tx.write_bytes(tree / "etc" / "app.conf", b"x")
    tx.symlink(tree / "current", "elsewhere")
    tx.done()

    lines = journal.path.read_text(encoding="utf-8").splitlines()
    parsed = [json.loads(line) for line in lines]
    assert [p["seq"] for p in parsed] == [1, 2, 3, 4, 5, 6]
    assert [p["op"] for p in parsed] == ["step-begin", "backup", "wrote", "backup", "wrote",
                                         "step-done"]
    assert parsed[1]["backup"] == "2" and parsed[1]["kind"] == "file"
    assert parsed[2]["state"] == "sha256:" + hashlib.sha256(b"x").hexdigest()
    assert parsed[3] == {"seq": 4, "step": "demo", "op": "backup", "path": str(tree / "current"),
                         "kind": "symlink", "link_target": "etc/app.conf"}
    assert parsed[4]["state"] == "link:elsewhere"
    assert (journal.backups / "2").read_bytes() == b"original\x00bytes\n"
    assert journal.completed_steps() == {"demo"}


def test_journal_bytes_match_its_entries_across_appends(tmp_path: Path) -> None:
    """Written in binary mode: a text-mode descriptor on Windows turns each newline into CR LF,
    the byte count kept for torn-tail detection no longer matches, and the next append cuts
    the journal, losing its backup and registry entries."""
    target = tmp_path / "app.conf"
    target.write_bytes(b"original\n")
    registry = RecordingRegistry({("HKCU\\Environment", "Path"): ("%USERPROFILE%\\bin",
                                                                   REG_EXPAND_SZ)})
    journal = Journal(tmp_path / "state")
    tx = Transaction(journal, "demo")
    tx.begin()
    tx.write_bytes(target, b"changed\n")
    tx.set_registry_value(registry, "HKCU\\Environment", "Path", "C:\\new", REG_EXPAND_SZ)
    tx.done()

    raw = journal.path.read_bytes()
    assert b"\r" not in raw
    reopened = Journal(tmp_path / "state")
    assert [e.op for e in reopened.entries()] == ["step-begin", "backup", "wrote", "registry",
                                                  "step-done"]
    Transaction(reopened, "more").begin()
    assert journal.path.read_bytes().startswith(raw)

    rollback(reopened, registry=registry)
    assert target.read_bytes() == b"original\n"
    assert registry.get("HKCU\\Environment", "Path") == ("%USERPROFILE%\\bin", REG_EXPAND_SZ)


def test_completed_steps_needs_the_done_marker(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "state")
    first = Transaction(journal, "first")
    first.begin()
    first.done()
    Transaction(journal, "second").begin()
    assert Journal(tmp_path / "state").completed_steps() == {"first"}


def test_nothing_is_created_until_something_is_written(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "state")
    assert journal.entries() == []
    assert rollback(journal) == []
    assert not (tmp_path / "state").exists()


def test_torn_last_line_is_ignored_and_cut_before_the_next_append(tmp_path: Path,
                                                                  tree: Path) -> None:
    journal = Journal(tmp_path / "state")
    tx = Transaction(journal, "demo")
    tx.write_bytes(tree / "etc" / "app.conf", b"changed")
    with open(journal.path, "ab") as handle:  # a crash in the middle of a write
        handle.write(b'{"seq": 2, "step": "demo", "op": "backup", "pa')

    reopened = Journal(tmp_path / "state")
    assert [e.seq for e in reopened.entries()] == [1, 2]  # its backup and what it wrote

    Transaction(reopened, "demo").write_text(tree / "added.txt", "new")
    lines = reopened.path.read_bytes().splitlines()
    assert [json.loads(line)["seq"] for line in lines] == [1, 2, 3, 4]

    rollback(reopened)
    assert (tree / "etc" / "app.conf").read_bytes() == b"original\x00bytes\n"
    assert not (tree / "added.txt").exists()


def test_unparseable_last_line_is_torn_but_a_bad_middle_line_is_corruption(
        tmp_path: Path, tree: Path) -> None:
    journal = Journal(tmp_path / "state")
    tx = Transaction(journal, "demo")
    tx.begin()
    tx.done()
    good = journal.path.read_bytes()

    journal.path.write_bytes(good + b"\x00\x00\x00\n")  # zeros a crashed filesystem left
    assert len(Journal(tmp_path / "state").entries()) == 2

    first, second = good.splitlines(keepends=True)
    journal.path.write_bytes(first + b"garbage\n" + second)
    with pytest.raises(StepError, match="line 2 is corrupt"):
        Journal(tmp_path / "state").entries()


def test_journal_entry_rejects_unknown_ops() -> None:
    with pytest.raises(ValueError):
        JournalEntry.model_validate({"seq": 1, "step": "x", "op": "delete-everything"})
