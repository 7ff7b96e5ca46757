"""Each change recorded before it is made, and undone byte for byte: files, modes,
links, folders, adopted trees, registry values."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest

from envforge.errors import StepError
from envforge.host.windows import REG_DWORD, REG_EXPAND_SZ, REG_SZ, RecordingRegistry
from envforge.journal import Journal, Transaction, rollback
from tests.testing.trees import snapshot


@pytest.mark.posix_only("Unix file modes (Windows keeps only a read-only bit)")
def test_changes_are_undone_byte_for_byte(tmp_path: Path, tree: Path) -> None:
    before = snapshot(tree)
    journal = Journal(tmp_path / "state")
    tx = Transaction(journal, "demo")
    tx.begin()
    tx.write_bytes(tree / "etc" / "app.conf", b"new contents")
    tx.write_text(tree / "new" / "deep" / "file.txt", "hello")
    tx.copy_file(tree / "bin" / "tool", tree / "bin" / "tool-copy")
    tx.symlink(tree / "current", "bin/tool")
    tx.remove(tree / "bin" / "tool")
    tx.done()

    assert (tree / "etc" / "app.conf").read_bytes() == b"new contents"
    assert stat.S_IMODE((tree / "etc" / "app.conf").stat().st_mode) == 0o640  # mode kept
    assert stat.S_IMODE((tree / "bin" / "tool-copy").stat().st_mode) == 0o755
    assert (tree / "current").readlink() == Path("bin/tool")
    assert snapshot(tree) != before

    undone = rollback(journal)

    assert snapshot(tree) == before
    assert f"restored {tree / 'etc' / 'app.conf'}" in undone
    assert f"removed folder {tree / 'new'}" in undone


@pytest.mark.posix_only("Unix file modes (Windows keeps only a read-only bit)")
def test_mode_comes_from_the_journal_even_if_the_backup_lost_it(tmp_path: Path,
                                                                 tree: Path) -> None:
    target = tree / "etc" / "app.conf"
    journal = Journal(tmp_path / "state")
    Transaction(journal, "demo").write_bytes(target, b"changed", mode=0o600)
    (journal.backups / "1").chmod(0o644)  # e.g. the state folder was copied to another disk
    rollback(journal)
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert target.read_bytes() == b"original\x00bytes\n"


@pytest.mark.posix_only("Unix file modes (Windows keeps only a read-only bit)")
def test_only_the_first_touch_is_backed_up(tmp_path: Path, tree: Path) -> None:
    target = tree / "etc" / "app.conf"
    original = target.read_bytes()
    journal = Journal(tmp_path / "state")
    tx = Transaction(journal, "demo")
    tx.write_bytes(target, b"first change")
    tx.write_bytes(target, b"second change")
    Transaction(journal, "another-step").write_bytes(target, b"third change")

    backups = [e for e in journal.entries() if e.path == str(target) and e.op != "wrote"]
    assert [(e.op, e.kind) for e in backups] == [("backup", "file")]
    assert journal.backup_path(backups[0]).read_bytes() == original
    assert backups[0].mode == 0o640

    rollback(journal)
    assert target.read_bytes() == original


def test_mkdir_records_each_folder_it_made_and_rollback_keeps_foreign_files(
        tmp_path: Path, tree: Path) -> None:
    journal = Journal(tmp_path / "state")
    Transaction(journal, "demo").mkdir(tree / "a" / "b" / "c")
    created = [e.path for e in journal.entries() if e.op == "created"]
    assert created == [str(tree / "a"), str(tree / "a" / "b"), str(tree / "a" / "b" / "c")]

    (tree / "a" / "b" / "user-notes.txt").write_text("not envforge's")  # a user's file
    undone = rollback(journal)

    assert not (tree / "a" / "b" / "c").exists()
    assert (tree / "a" / "b" / "user-notes.txt").read_text() == "not envforge's"
    assert any(line.startswith(f"left folder {tree / 'a' / 'b'}") for line in undone)


def test_mkdir_over_a_file_is_refused(tmp_path: Path, tree: Path) -> None:
    with pytest.raises(StepError, match="is not a folder"):
        Transaction(Journal(tmp_path / "state"), "demo").mkdir(tree / "etc" / "app.conf" / "x")


def test_writing_over_a_link_replaces_the_link_not_its_target(tmp_path: Path,
                                                              tree: Path) -> None:
    before = snapshot(tree)
    journal = Journal(tmp_path / "state")
    Transaction(journal, "demo").write_bytes(tree / "current", b"a file now")
    assert not (tree / "current").is_symlink()
    assert (tree / "etc" / "app.conf").read_bytes() == b"original\x00bytes\n"
    rollback(journal)
    assert snapshot(tree) == before


def test_a_file_is_not_written_where_a_folder_is(tmp_path: Path, tree: Path) -> None:
    with pytest.raises(StepError, match="is a folder"):
        Transaction(Journal(tmp_path / "state"), "demo").write_text(tree / "etc", "x")
    assert (tree / "etc" / "app.conf").is_file()


def test_removed_tree_comes_back_whole(tmp_path: Path, tree: Path) -> None:
    (tree / "bin").chmod(0o750)
    before = snapshot(tree)
    journal = Journal(tmp_path / "state")
    tx = Transaction(journal, "demo")
    tx.remove(tree / "bin")
    tx.remove(tree / "current")
    tx.remove(tree / "etc")
    tx.remove(tree / "never-existed")
    assert list(tree.iterdir()) == []
    rollback(journal)
    assert snapshot(tree) == before


@pytest.mark.posix_only("os.mkfifo")
def test_special_files_are_not_touched(tmp_path: Path, tree: Path) -> None:
    os.mkfifo(tree / "pipe")
    with pytest.raises(StepError, match="not a file, link or folder"):
        Transaction(Journal(tmp_path / "state"), "demo").remove(tree / "pipe")
    assert stat.S_ISFIFO((tree / "pipe").lstat().st_mode)


def test_adopted_tree_is_removed_whole(tmp_path: Path, tree: Path) -> None:
    before = snapshot(tree)
    journal = Journal(tmp_path / "state")
    tx = Transaction(journal, "env")
    venv = tree / "envs" / "py37"
    tx.adopt_tree(venv)
    # What an external tool (python -m venv, rattler, uv) then does, unjournaled:
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").symlink_to("/usr/bin/python3")
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    tx.adopt_tree(venv)  # a resumed step may announce it again

    assert [(e.op, e.kind, e.path) for e in journal.entries()] == [
        ("created", "dir", str(tree / "envs")), ("backup", "absent", str(venv))]
    rollback(journal)
    assert snapshot(tree) == before


def test_adopting_a_folder_envforge_did_not_make_is_refused(tmp_path: Path, tree: Path) -> None:
    journal = Journal(tmp_path / "state")
    with pytest.raises(StepError, match="already exists and envforge did not create it"):
        Transaction(journal, "env").adopt_tree(tree / "etc")
    assert journal.entries() == []


def test_adopting_a_folder_this_journal_made_removes_it_whole(tmp_path: Path,
                                                              tree: Path) -> None:
    before = snapshot(tree)
    journal = Journal(tmp_path / "state")
    tx = Transaction(journal, "env")
    tx.mkdir(tree / "prefix")
    tx.adopt_tree(tree / "prefix")
    (tree / "prefix" / "conda-meta").mkdir()
    (tree / "prefix" / "conda-meta" / "history").write_text("x")
    rollback(journal)
    assert snapshot(tree) == before


def test_registry_values_are_restored_with_their_type(tmp_path: Path) -> None:
    key = r"HKCU\Environment"
    registry = RecordingRegistry({
        (r"HKEY_CURRENT_USER\Environment", "Path"): (r"%USERPROFILE%\bin;C:\Tools", REG_EXPAND_SZ),
        (r"HKEY_CURRENT_USER\Environment", "Flag"): (1, REG_DWORD),
    })
    journal = Journal(tmp_path / "state")
    tx = Transaction(journal, "path")
    tx.set_registry_value(registry, key, "Path", r"C:\mingw\bin;%USERPROFILE%\bin", REG_SZ)
    tx.set_registry_value(registry, key, "PATH", "second write, not recorded again", REG_SZ)
    tx.set_registry_value(registry, key, "CUDA_PATH", r"C:\CUDA\v10.2", REG_SZ)
    tx.set_registry_value(registry, key, "Flag", 0, REG_DWORD)
    recorded = [e for e in Journal(tmp_path / "state").entries() if e.op == "registry"]
    assert [(e.name, e.value, e.value_type, e.existed) for e in recorded] == [
        ("Path", r"%USERPROFILE%\bin;C:\Tools", REG_EXPAND_SZ, True),
        ("CUDA_PATH", None, None, False),
        ("Flag", 1, REG_DWORD, True),
    ]

    undone = rollback(Journal(tmp_path / "state"), registry=registry)

    assert registry.get(key, "Path") == (r"%USERPROFILE%\bin;C:\Tools", REG_EXPAND_SZ)
    assert registry.get(key, "CUDA_PATH") is None
    assert registry.get(key, "Flag") == (1, REG_DWORD)
    assert registry.broadcasts == 1
    assert f"deleted registry value {key}\\CUDA_PATH" in undone


def test_rollback_of_registry_changes_without_a_registry_changes_nothing(
        tmp_path: Path, tree: Path) -> None:
    registry = RecordingRegistry()
    journal = Journal(tmp_path / "state")
    tx = Transaction(journal, "path")
    tx.write_bytes(tree / "etc" / "app.conf", b"changed")
    tx.set_registry_value(registry, r"HKCU\Environment", "Path", "x", REG_SZ)
    with pytest.raises(StepError, match="registry"):
        rollback(journal)
    assert (tree / "etc" / "app.conf").read_bytes() == b"changed"
    assert journal.path.is_file()


def _make_env_folder(root: str, name: str, barrier: Any, rounds: int) -> None:
    for n in range(rounds):
        journal = Journal(Path(root) / f"state-{name}-{n}")
        tx = Transaction(journal, "env")
        tx.begin()
        barrier.wait(timeout=30)
        tx.mkdir(Path(root) / f"round-{n}" / "data" / "envs" / name)


@pytest.mark.posix_only("forks two processes that race on one folder")
def test_two_applies_making_the_same_state_folders_at_once_both_succeed(
        tmp_path: Path) -> None:
    """Issue 29 #8: each journaled the folder as missing, then one mkdir lost the race
    (FileExistsError) between the journal's fsync and its own mkdir."""
    import multiprocessing

    context = multiprocessing.get_context("fork")
    barrier = context.Barrier(2)
    rounds = 8
    racers = [context.Process(target=_make_env_folder, args=(str(tmp_path), name, barrier,
                                                             rounds)) for name in ("a", "b")]
    for racer in racers:
        racer.start()
    for racer in racers:
        racer.join(timeout=120)
    assert [racer.exitcode for racer in racers] == [0, 0]
    for n in range(rounds):
        for name in ("a", "b"):
            assert (tmp_path / f"round-{n}" / "data" / "envs" / name).is_dir()
            rollback(Journal(tmp_path / f"state-{name}-{n}"))
