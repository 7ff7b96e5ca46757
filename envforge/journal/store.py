"""``journal.jsonl`` and ``backups/``: every change written down, durably, before it is made.

``journal.jsonl`` holds one JSON object a line, fsynced one by one. A crash can only
leave a torn last line; its change was never started (changes follow the fsync), so
readers ignore it and the next append cuts it off.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

from pydantic import ValidationError

from envforge.errors import StepError
from envforge.host.windows import RegistryValue
from envforge.spec import Frozen

JOURNAL_FILE = "journal.jsonl"
BACKUPS_DIR = "backups"
LOCK_FILE = "apply.lock"
LOCK_PID_FILE = "apply.lock.pid"

Op = Literal["backup", "created", "handed", "registry", "wrote", "step-begin", "step-done"]
Kind = Literal["file", "symlink", "dir", "absent"]


class JournalEntry(Frozen):
    """One line of the journal.

    ``backup``: ``path``'s state before its first change (``kind``; for a file ``backup``
    names its copy in backups/ and ``mode`` its permissions; for a link ``link_target``).
    ``created``: a folder ``mkdir`` made; rollback removes it only if empty.
    ``registry``: a value's state before its first change (``existed`` false: delete it).
    ``wrote``: the state ``path`` is about to be given (``state``: ``sha256:<hex>``,
    ``link:<target>`` or ``absent``), so an undo can tell envforge's content from a later edit.
    ``handed``: an earlier journal's original of ``path`` (fields as for ``backup``), given
    over when that journal was rolled back under this one's change: rollback restores it
    instead of this journal's own record. For a folder this journal did not record
    (``kind`` absent) it is a folder another journal made: removed last, if empty.
    """

    seq: int
    step: str
    op: Op
    path: str | None = None
    kind: Kind | None = None
    backup: str | None = None
    mode: int | None = None
    link_target: str | None = None
    key: str | None = None
    name: str | None = None
    value: RegistryValue | None = None
    value_type: int | None = None
    existed: bool | None = None
    state: str | None = None


def absolute(path: Path | str) -> Path:
    """Absolute without resolving links: a link is itself the thing recorded."""
    return Path(os.path.normpath(Path(path).absolute()))


def path_key(path: Path) -> str:
    return os.path.normcase(str(path))


def state_of(path: Path) -> str:
    """``sha256:<hex>``, ``link:<target>``, ``folder`` or ``absent``: what ``wrote`` records."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return "absent"
    if stat.S_ISLNK(st.st_mode):
        return f"link:{path.readlink()}"
    if stat.S_ISDIR(st.st_mode):
        return "folder"
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return f"sha256:{digest.hexdigest()}"


@contextlib.contextmanager
def naming(path: Path) -> Iterator[None]:
    """An OSError from a bare descriptor (ENOSPC on write, fsync) names ``path``."""
    try:
        yield
    except OSError as exc:
        if exc.filename is not None:
            raise
        raise OSError(exc.errno, exc.strerror, str(path)) from None


def fsync_dir(path: Path) -> None:
    """Make a created or renamed name durable (a no-op where folders cannot be opened)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


class Journal:
    """``state_dir/journal.jsonl`` and ``state_dir/backups/``; nothing is created until a write."""

    def __init__(self, state_dir: Path) -> None:
        self.state_dir = Path(state_dir)
        self.path = self.state_dir / JOURNAL_FILE
        self.backups = self.state_dir / BACKUPS_DIR
        self._entries: list[JournalEntry] | None = None
        self._valid_bytes = 0
        self._first: dict[str, JournalEntry] = {}
        self._handed: dict[str, JournalEntry] = {}
        self._registry_seen: set[tuple[str, str]] = set()

    def entries(self) -> list[JournalEntry]:
        """Every complete entry, oldest first; a torn last line is left out."""
        return list(self._read()[0])

    def salvage(self) -> tuple[list[JournalEntry], list[int]]:
        """Every readable entry and the numbers of the lines that are not (``--force``)."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return [], []
        entries: list[JournalEntry] = []
        bad: list[int] = []
        lines = data.split(b"\n")
        for number, line in enumerate(lines[:-1], start=1):  # the last piece is torn or empty
            try:
                entries.append(JournalEntry.model_validate_json(line))
            except ValidationError:
                bad.append(number)
        return entries, bad

    def completed_steps(self) -> set[str]:
        return {e.step for e in self.entries() if e.op == "step-done"}

    def original(self, path: Path) -> JournalEntry | None:
        """The first record of ``path`` in this journal: its state before envforge touched it."""
        self._load()
        return self._first.get(path_key(absolute(path)))

    def restore_point(self, path: Path) -> JournalEntry | None:
        """What rollback gives ``path`` back: the last original handed over, else the first
        record."""
        self._load()
        key = path_key(absolute(path))
        return self._handed.get(key) or self._first.get(key)

    def wrote(self, path: Path) -> set[str]:
        """Every state this journal gave ``path`` (``wrote`` lines)."""
        key = path_key(absolute(path))
        return {e.state for e in self._load() if e.op == "wrote" and e.state is not None
                and e.path is not None and path_key(Path(e.path)) == key}

    def recorded_inside(self, folder: Path) -> bool:
        """Whether this journal recorded anything below ``folder``."""
        self._load()
        inside = path_key(absolute(folder)) + os.sep
        return any(key.startswith(inside) for key in self._first)

    def registry_recorded(self, key: str, name: str) -> bool:
        self._load()
        return (key.casefold(), name.casefold()) in self._registry_seen

    def backup_path(self, entry: JournalEntry) -> Path:
        if entry.backup is None:
            raise StepError(f"journal entry {entry.seq} has no backup")
        return self.backups / entry.backup

    def append(self, step: str, op: Op, *, path: Path | None = None, kind: Kind | None = None,
               backup_of: Path | None = None, mode: int | None = None,
               link_target: str | None = None, key: str | None = None,
               name: str | None = None, value: RegistryValue | None = None,
               value_type: int | None = None, existed: bool | None = None,
               state: str | None = None) -> JournalEntry:
        """Write one entry and fsync it; with ``backup_of``, first copy that file to backups/."""
        entries = self._load()
        seq = entries[-1].seq + 1 if entries else 1
        backup = None
        if backup_of is not None:
            backup = str(seq)
            self._store_backup(backup_of, self.backups / backup)
        entry = JournalEntry(
            seq=seq, step=step, op=op, path=None if path is None else str(absolute(path)),
            kind=kind, backup=backup, mode=mode, link_target=link_target, key=key, name=name,
            value=value, value_type=value_type, existed=existed, state=state)
        self._write_line(entry.model_dump_json(exclude_none=True).encode() + b"\n")
        entries.append(entry)
        self._index(entry)
        return entry

    def _store_backup(self, source: Path, target: Path) -> None:
        # A file already there is an orphan: a backup whose entry never got written,
        # or one from a rolled-back journal. Its number is ours now.
        created = not self.backups.exists()
        self.backups.mkdir(parents=True, exist_ok=True)
        if created:
            fsync_dir(self.state_dir)
        with naming(target), open(source, "rb") as src, open(target, "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
            dst.flush()
            os.fsync(dst.fileno())
        shutil.copystat(source, target)
        fsync_dir(self.backups)

    def _write_line(self, line: bytes) -> None:
        created = not self.path.exists()
        if created:
            self.state_dir.mkdir(parents=True, exist_ok=True)
        elif self.path.stat().st_size != self._valid_bytes:
            os.truncate(self.path, self._valid_bytes)  # cut a torn tail before appending
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_BINARY", 0)
        fd = os.open(self.path, flags, 0o644)
        try:
            with naming(self.path):
                os.write(fd, line)
                os.fsync(fd)
        finally:
            os.close(fd)
        if created:
            fsync_dir(self.state_dir)
        self._valid_bytes += len(line)

    def _read(self) -> tuple[list[JournalEntry], int]:
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return [], 0
        entries: list[JournalEntry] = []
        pos = 0
        number = 0
        while pos < len(data):
            number += 1
            end = data.find(b"\n", pos)
            if end == -1:
                break  # torn: its fsync never returned, so its change never started
            try:
                entries.append(JournalEntry.model_validate_json(data[pos:end]))
            except ValidationError:
                if data.find(b"\n", end + 1) != -1:
                    raise StepError(f"{self.path}: line {number} is corrupt; the journal cannot "
                                    "be trusted (keep it and the backups folder); undo again "
                                    "with --force to undo what the other lines record") from None
                break
            pos = end + 1
        return entries, pos

    def _load(self) -> list[JournalEntry]:
        if self._entries is None:
            self._entries, self._valid_bytes = self._read()
            self._first.clear()
            self._handed.clear()
            self._registry_seen.clear()
            for entry in self._entries:
                self._index(entry)
        return self._entries

    def _index(self, entry: JournalEntry) -> None:
        if entry.op in ("backup", "created") and entry.path is not None:
            self._first.setdefault(path_key(Path(entry.path)), entry)
        elif entry.op == "handed" and entry.path is not None:
            self._handed[path_key(Path(entry.path))] = entry
        elif entry.op == "registry" and entry.key is not None and entry.name is not None:
            self._registry_seen.add((entry.key.casefold(), entry.name.casefold()))

    def _forget(self) -> None:
        self._entries = None
        self._valid_bytes = 0
