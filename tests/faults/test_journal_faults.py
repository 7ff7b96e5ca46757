"""The journal and the state record under faults, without a network: fast cases.

A corrupt line or a missing backup stops rollback, and ``force`` goes past them saying
what it could not restore; an orphaned tool still writing into an adopted tree does not
make rollback fail; the journal is appended byte for byte (``O_BINARY`` where it exists);
a damaged ``applied.json`` is a one-line error; the record is written atomically.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import envforge.executor as executor
from envforge.errors import StepError
from envforge.journal import LOST, Journal, Transaction, rollback
from tests.faults.conftest import count


def _applied(tmp_path: Path) -> tuple[Journal, Path, Path]:
    """A journal that replaced a file, created one and adopted a tree."""
    root = tmp_path / "root"
    root.mkdir()
    (root / "kept.conf").write_bytes(b"mine\r\n")
    journal = Journal(tmp_path / "state")
    tx = Transaction(journal, "demo")
    tx.begin()
    tx.write_bytes(root / "kept.conf", b"envforge's\n")
    tx.write_text(root / "new.txt", "new")
    tx.adopt_tree(root / "tree")
    (root / "tree").mkdir()
    tx.done()
    return journal, root, root / "kept.conf"


def test_a_corrupt_line_stops_rollback_and_force_goes_past_it(tmp_path: Path) -> None:
    journal, root, conf = _applied(tmp_path)
    lines = journal.path.read_bytes().split(b"\n")
    lines[4] = b"{garbage"  # a line in the middle: corruption, not a torn tail
    journal.path.write_bytes(b"\n".join(lines))
    with pytest.raises(StepError, match=r"line 5 is corrupt.*again with --force"):
        rollback(Journal(journal.state_dir))
    assert conf.read_bytes() == b"envforge's\n"  # nothing undone

    undone = rollback(Journal(journal.state_dir), force=True)
    assert f"{LOST}line 5 of {journal.path}: it is corrupt" in undone
    assert conf.read_bytes() == b"mine\r\n" and not (root / "tree").exists()
    count("journal: a corrupt line, rollback --force")


def test_a_missing_backup_stops_rollback_and_force_says_what_it_left(tmp_path: Path) -> None:
    journal, root, conf = _applied(tmp_path)
    for backup in journal.backups.iterdir():
        backup.unlink()
    with pytest.raises(StepError, match=r"is missing \(1 missing\); undo again with --force"):
        rollback(Journal(journal.state_dir))
    assert (root / "tree").exists()

    undone = rollback(Journal(journal.state_dir), force=True)
    assert any(line.startswith(f"{LOST}{conf}: cannot restore") for line in undone)
    assert conf.read_bytes() == b"envforge's\n"  # left as it is, and said so
    assert not (root / "tree").exists() and not (root / "new.txt").exists()
    assert journal.state_dir.joinpath("journal.rolled-back-1.jsonl").is_file()
    count("journal: a missing backup, rollback --force")


WRITER = """\
import os, sys, itertools
root = sys.argv[1]
for n in itertools.count():
    try:
        folder = os.path.join(root, "site-packages", f"pkg{n % 50}")
        if not os.path.isdir(folder):
            os.mkdir(folder)
        with open(os.path.join(folder, f"f{n}.py"), "w") as out:
            out.write("x")
    except OSError:
        sys.exit(0)  # its folder is gone: like uv, it gives up
"""


def test_rollback_while_an_orphaned_tool_still_writes(tmp_path: Path) -> None:
    """kill -9 of envforge alone leaves uv writing into the env: rollback still completes."""
    for _ in range(3):
        journal = Journal(tmp_path / "state")
        prefix = tmp_path / "env"
        Transaction(journal, "prefix").adopt_tree(prefix)
        (prefix / "site-packages").mkdir(parents=True)
        writer = subprocess.Popen([sys.executable, "-c", WRITER, str(prefix)])
        try:
            while sum(1 for _ in prefix.rglob("*.py")) < 200:
                time.sleep(0.01)
            rollback(journal)
            assert writer.wait(timeout=60) == 0
        finally:
            writer.kill()  # a failure must not leave it writing (and a Windows lane waiting)
            writer.wait()
        assert not prefix.exists()
        count("journal: rollback while an orphan writes into the env")


def test_the_journal_is_opened_binary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """On Windows a text-mode descriptor turns b"\\n" into b"\\r\\n" and the byte counts that
    cut a torn tail go wrong: the open must ask for O_BINARY where it exists. On Windows the
    real flag is checked by the file's size; elsewhere a stand-in flag is, by the flags."""
    real_open, seen = os.open, []
    if hasattr(os, "O_BINARY"):
        flag, strip = os.O_BINARY, 0
    else:
        flag = strip = 0x40000000
        monkeypatch.setattr(os, "O_BINARY", flag, raising=False)

    def recording_open(path: str, flags: int, mode: int = 0o777) -> int:
        seen.append(flags)
        return real_open(path, flags & ~strip, mode)

    monkeypatch.setattr(os, "open", recording_open)
    journal = Journal(tmp_path / "state")
    Transaction(journal, "demo").begin()
    appends = [f for f in seen if f & os.O_APPEND]
    assert appends and all(f & flag for f in appends)
    assert journal.path.stat().st_size == journal._valid_bytes
    count("journal: appended with O_BINARY")


def test_a_damaged_record_is_one_line_naming_force(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    for damage in (b"{\"spec\": \"/x.t", b"\x00\x00\x00", b"[1, 2]", b"\xff\xfe"):
        (state / executor.APPLIED).write_bytes(damage)
        with pytest.raises(executor.DamagedStateError) as caught:
            executor.read_record(state)
        message = str(caught.value)
        assert "\n" not in message and "--force" in message and str(state) in message
        count("state: a damaged applied.json, one line")


def test_the_record_is_replaced_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A crash between write and rename leaves the old record, never a torn one."""
    state = tmp_path / "state"
    state.mkdir()
    executor._write_record(state, {"spec": "/old.toml", "complete": True})
    synced: list[int] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        synced.append(fd)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)

    def crash(self: Path, target: Path) -> Path:
        raise OSError(28, "No space left on device", str(target))

    monkeypatch.setattr(Path, "replace", crash)
    with pytest.raises(OSError):
        executor._write_record(state, {"spec": "/new.toml", "complete": False})
    monkeypatch.undo()
    assert synced, "the new record was not fsynced before its rename"
    assert executor.read_record(state) == {"spec": "/old.toml", "complete": True}
    count("state: applied.json replaced atomically")


def test_doctor_undo_force(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                           capsys: pytest.CaptureFixture[str]) -> None:
    """doctor's journal is the same journal: its undo has the same way out."""
    from envforge.cli import main

    home = tmp_path / "home"
    home.mkdir()
    rc = home / ".theanorc"
    rc.write_bytes(b"[global]\nfloatX = float32\n\n[lib]\ncnmem = 0.8\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("ENVFORGE_HOME", str(tmp_path / "ef"))
    assert main(["doctor", "--fix", "--yes", "-q"]) in (0, 1)
    fixed = rc.read_bytes()
    (backup,) = (tmp_path / "ef" / "state" / "doctor" / "backups").iterdir()
    backup.unlink()
    capsys.readouterr()
    assert main(["doctor", "--undo"]) == 1
    assert "undo again with --force" in capsys.readouterr().err
    assert main(["doctor", "--undo", "--force"]) == 0
    assert f"warning: could not restore {rc}" in capsys.readouterr().err
    assert rc.read_bytes() == fixed
    count("journal: doctor --undo --force past a missing backup")


def test_a_record_without_a_journal_is_rolled_back_too(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Killed after its record and before its first journal line, an apply still claims the
    prefix: rollback must clear that claim, or no other spec could ever use the prefix."""
    from envforge.cli import main
    from envforge.commands.apply import state_dir_for
    from envforge.paths import envforge_dirs

    spec = Path(__file__).resolve().parents[2] / "specs" / "theano-cpu.toml"
    monkeypatch.setenv("ENVFORGE_HOME", str(tmp_path / "ef"))
    prefix = tmp_path / "env"
    state = state_dir_for(envforge_dirs(), "theano-cpu", prefix)
    state.mkdir(parents=True)
    executor._write_record(state, {"spec": str(spec), "prefix": str(prefix), "complete": False})
    assert main(["rollback", str(spec), "--prefix", str(prefix), "-q"]) == 0
    assert executor.read_record(state) is None
    count("state: a record with no journal line, rolled back")
