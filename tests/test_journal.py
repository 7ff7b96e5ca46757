"""The journal on real files: what is recorded, what rollback restores, crashes and the lock."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import envforge.journal as journal_module
from envforge.errors import BusyError, StepError
from envforge.host.windows import REG_DWORD, REG_EXPAND_SZ, REG_SZ, RecordingRegistry
from envforge.journal import Journal, JournalEntry, Transaction, env_lock, rollback

Snapshot = dict[str, tuple[object, ...]]


def snapshot(root: Path) -> Snapshot:
    """Every entry under ``root``: files by sha256 and mode, links by target, folders by mode."""
    found: Snapshot = {}
    for folder, dirs, files in os.walk(root):
        for name in (*dirs, *files):
            path = Path(folder) / name
            rel = path.relative_to(root).as_posix()
            st = path.lstat()
            if stat.S_ISLNK(st.st_mode):
                found[rel] = ("link", str(path.readlink()))
            elif stat.S_ISDIR(st.st_mode):
                found[rel] = ("dir", stat.S_IMODE(st.st_mode))
            else:
                digest = hashlib.sha256(path.read_bytes()).hexdigest()
                found[rel] = ("file", digest, stat.S_IMODE(st.st_mode))
    return found


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A folder with a file of unusual mode, a link and a nested folder."""
    root = tmp_path / "tree"
    (root / "etc").mkdir(parents=True)
    config = root / "etc" / "app.conf"
    config.write_bytes(b"original\x00bytes\n")
    config.chmod(0o640)
    (root / "bin").mkdir()
    (root / "bin" / "tool").write_bytes(b"#!/bin/sh\necho old\n")
    (root / "bin" / "tool").chmod(0o755)
    (root / "current").symlink_to("etc/app.conf")
    return root


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

    real_undo = journal_module._undo
    calls = 0

    def undo_then_die(*args: object) -> str | None:
        nonlocal calls
        calls += 1
        if calls == interrupt_at:
            raise KeyboardInterrupt  # the process dies part way through
        return real_undo(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(journal_module, "_undo", undo_then_die)
    with pytest.raises(KeyboardInterrupt):
        rollback(journal)
    monkeypatch.setattr(journal_module, "_undo", real_undo)

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


def test_journal_entry_rejects_unknown_ops() -> None:
    with pytest.raises(ValueError):
        JournalEntry.model_validate({"seq": 1, "step": "x", "op": "delete-everything"})


_HOLDER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from envforge.journal import env_lock
    with env_lock(Path(sys.argv[1])):
        print("locked", flush=True)
        time.sleep(60)
""")


def test_env_lock_refuses_a_second_process(tmp_path: Path) -> None:
    state = tmp_path / "myenv-0123456789"
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, str(state)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(BusyError) as caught, env_lock(state, timeout=0.3):
            pass
        assert str(caught.value) == (f"another envforge is applying myenv-0123456789 "
                                     f"(pid {holder.pid}); try again when it finishes")
    finally:
        holder.kill()
        holder.wait()
    with env_lock(state, timeout=5):  # the kernel dropped the dead holder's lock
        assert (state / journal_module.LOCK_PID_FILE).read_text().strip() == str(os.getpid())
    assert not (state / journal_module.LOCK_PID_FILE).exists()


def test_a_file_another_process_has_open_on_windows_is_retried(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Windows refuses to delete a file a still-running tool has open (a sharing violation,
    WinError 32) where Linux would not: rollback retries until it is closed, as for
    "Directory not empty"; any other error is raised at once."""
    journal = Journal(tmp_path / "state")
    prefix = tmp_path / "env"
    Transaction(journal, "prefix").adopt_tree(prefix)
    (prefix / "site-packages").mkdir(parents=True)
    real_rmtree, calls = journal_module.shutil.rmtree, []

    def busy_once(path: str, *args: object, **kwargs: object) -> None:
        calls.append(path)
        if len(calls) == 1:
            busy = PermissionError(13, "Sharing violation", str(prefix / "site-packages"))
            busy.winerror = 32  # type: ignore[attr-defined]  # set by CPython on Windows only
            raise busy
        real_rmtree(path)

    monkeypatch.setattr(journal_module.shutil, "rmtree", busy_once)
    rollback(journal)
    assert len(calls) == 2 and not prefix.exists()

    def denied(path: str, *args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied", str(path))

    journal = Journal(tmp_path / "state2")
    Transaction(journal, "prefix").adopt_tree(prefix)
    prefix.mkdir()
    monkeypatch.setattr(journal_module.shutil, "rmtree", denied)
    with pytest.raises(PermissionError):
        rollback(journal)


# -- undo in any order: a stack of edits per file across journals ---------------------------

USER = b"[global]\n# mine \xe2\x82\xac\r\nfloatX = float32\n"


@pytest.fixture
def user_rc(tmp_path: Path) -> Path:
    """A user's own file of odd bytes and mode, which every journal below rewrites."""
    rc = tmp_path / "home" / ".theanorc"
    rc.parent.mkdir()
    rc.write_bytes(USER)
    rc.chmod(0o600)
    return rc


def _apply(state: Path, name: str, path: Path, data: bytes) -> None:
    Transaction(Journal(state / name), "theanorc").write_bytes(path, data)


def _undo_all(state: Path, order: str) -> list[str]:
    return [line for name in order for line in rollback(Journal(state / name))]


def _exact(path: Path) -> tuple[str, int]:
    return hashlib.sha256(path.read_bytes()).hexdigest(), stat.S_IMODE(path.stat().st_mode)


def _beside(path: Path) -> list[str]:
    return sorted(p.name for p in path.parent.glob(f"{path.name}.envforge-original*"))


@pytest.mark.parametrize("order", ["ab", "ba"])
def test_two_journals_on_one_file_undone_in_either_order_give_the_users_bytes_back(
        tmp_path: Path, user_rc: Path, order: str) -> None:
    state = tmp_path / "state"
    _apply(state, "a", user_rc, b"a's rc\n")
    _apply(state, "b", user_rc, b"b's rc\n")
    first = rollback(Journal(state / order[0]))
    if order == "ab":  # b's file stays in use by b; b's backup now holds the user's bytes
        assert user_rc.read_bytes() == b"b's rc\n"
        assert not any(line.startswith(journal_module.KEPT) for line in first)
    _undo_all(state, order[1])
    assert _exact(user_rc) == (hashlib.sha256(USER).hexdigest(), 0o600)
    assert _beside(user_rc) == []


@pytest.mark.parametrize("order", ["abc", "acb", "bac", "bca", "cab", "cba"])
def test_three_journals_undone_in_any_order_give_the_users_bytes_back(
        tmp_path: Path, user_rc: Path, order: str) -> None:
    state = tmp_path / "state"
    for name in "abc":
        _apply(state, name, user_rc, f"{name}'s rc\n".encode())
    for n, name in enumerate(order):
        rollback(Journal(state / name))
        left = sorted(set("abc") - set(order[: n + 1]))
        if left:  # what is active is the file of the newest journal still applied
            assert user_rc.read_bytes() == f"{left[-1]}'s rc\n".encode()
    assert _exact(user_rc) == (hashlib.sha256(USER).hexdigest(), 0o600)
    assert _beside(user_rc) == []


@pytest.mark.parametrize("order", ["ab", "ba"])
def test_a_file_that_did_not_exist_is_gone_when_every_journal_is_undone(
        tmp_path: Path, order: str) -> None:
    state, rc = tmp_path / "state", tmp_path / "home" / ".theanorc"
    _apply(state, "a", rc, b"a's rc\n")
    _apply(state, "b", rc, b"b's rc\n")
    _undo_all(state, order)
    assert not rc.exists()
    assert _beside(rc) == []


@pytest.mark.parametrize("order", ["ab", "ba"])
def test_a_user_edit_between_two_journals_is_kept_with_the_original_beside(
        tmp_path: Path, user_rc: Path, order: str) -> None:
    state = tmp_path / "state"
    _apply(state, "a", user_rc, b"a's rc\n")
    user_rc.write_bytes(b"a's rc\n# and my edit\n")
    _apply(state, "b", user_rc, b"b's rc\n")
    undone = _undo_all(state, order)
    assert user_rc.read_bytes() == b"a's rc\n# and my edit\n"
    assert [p.read_bytes() for p in sorted(user_rc.parent.glob("*.envforge-original*"))] == [USER]
    assert sum(line.startswith(journal_module.KEPT) for line in undone) == 1


@pytest.mark.parametrize("order", ["ab", "ba"])
def test_a_user_edit_after_both_journals_is_kept_with_the_users_original_beside(
        tmp_path: Path, user_rc: Path, order: str) -> None:
    state = tmp_path / "state"
    _apply(state, "a", user_rc, b"a's rc\n")
    _apply(state, "b", user_rc, b"b's rc\n")
    user_rc.write_bytes(b"b's rc\n# and my edit\n")
    _undo_all(state, order)  # "ba": a's file, b's original, is not put beside
    assert user_rc.read_bytes() == b"b's rc\n# and my edit\n"
    original = user_rc.with_name(".theanorc.envforge-original")
    assert _exact(original) == (hashlib.sha256(USER).hexdigest(), 0o600)
    assert _beside(user_rc) == [original.name]


def test_an_interrupted_hand_over_is_finished_once_by_running_rollback_again(
        tmp_path: Path, user_rc: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    state = tmp_path / "state"
    _apply(state, "a", user_rc, b"a's rc\n")
    _apply(state, "b", user_rc, b"b's rc\n")
    real_archive = journal_module._archive

    def die(journal: Journal) -> None:
        raise KeyboardInterrupt  # after the hand-over, before a's journal is archived

    monkeypatch.setattr(journal_module, "_archive", die)
    with pytest.raises(KeyboardInterrupt):
        rollback(Journal(state / "a"))
    monkeypatch.setattr(journal_module, "_archive", real_archive)
    rollback(Journal(state / "a"))
    assert sum(e.op == "handed" for e in Journal(state / "b").entries()) == 1
    rollback(Journal(state / "b"))
    assert _exact(user_rc) == (hashlib.sha256(USER).hexdigest(), 0o600)
    assert _beside(user_rc) == []


@pytest.mark.parametrize("order", ["ab", "ba"])
def test_a_shared_parent_folder_two_journals_made_is_removed_by_the_last_undo(
        tmp_path: Path, order: str) -> None:
    state, data = tmp_path / "state", tmp_path / "ef" / "data"
    (tmp_path / "ef").mkdir()
    Transaction(Journal(state / "a"), "prefix").mkdir(data / "envs" / "a")
    Transaction(Journal(state / "b"), "prefix").mkdir(data / "envs" / "b")
    _undo_all(state, order)
    assert not data.exists()
    assert (tmp_path / "ef").is_dir()  # not envforge's to remove


@pytest.mark.parametrize("order", ["abc", "cba", "bac"])
def test_a_parent_folder_handed_over_twice_is_removed_by_the_last_of_three_undos(
        tmp_path: Path, order: str) -> None:
    state, data = tmp_path / "state", tmp_path / "ef" / "data"
    (tmp_path / "ef").mkdir()
    for name in "abc":
        Transaction(Journal(state / name), "prefix").mkdir(data / "envs" / name)
    _undo_all(state, order)
    assert sorted(p.name for p in (tmp_path / "ef").iterdir()) == []
