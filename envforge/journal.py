"""The apply journal: every change is written down, durably, before it is made.

Nothing is lost: the first time a path (or registry value) is touched, its prior state
is recorded — absent, file bytes copied to ``backups/<seq>`` with the mode, a link's
target, a folder — and only then is it changed. Later touches record nothing more:
the original is what rollback restores. ``rollback`` undoes the records newest first;
each undo sets the original state, so an interrupted rollback is finished by running it
again. Every write is journaled too (``wrote``: the state envforge is about to leave), so
an undo first checks the path still holds what envforge wrote; a file changed since (by
the user, another spec, doctor) is kept, the original put beside it, and the line says so:
undos are safe in any order.

Journals kept side by side (every environment's and doctor's, in envforge's state folder)
form a stack of edits per path, as a patch queue keeps one: when a journal is rolled back
under a later journal's change (the later one's original is what this one wrote), it hands
its own original over to that later journal (a ``handed`` line there) and leaves the current
file alone; the later rollback then restores the user's bytes, not envforge's. A folder it
made that another journal's files still fill is handed over the same way, and removed, if
empty, by the last rollback.

``journal.jsonl`` holds one JSON object a line, fsynced one by one. A crash can only
leave a torn last line; its change was never started (changes follow the fsync), so
readers ignore it and the next append cuts it off.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import re
import shutil
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

from pydantic import ValidationError

from envforge.errors import BusyError, StepError
from envforge.host.windows import RegistrySeam, RegistryValue
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


def _abs(path: Path | str) -> Path:
    """Absolute without resolving links: a link is itself the thing recorded."""
    return Path(os.path.normpath(Path(path).absolute()))


def _path_key(path: Path) -> str:
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
        return self._first.get(_path_key(_abs(path)))

    def restore_point(self, path: Path) -> JournalEntry | None:
        """What rollback gives ``path`` back: the last original handed over, else the first
        record."""
        self._load()
        key = _path_key(_abs(path))
        return self._handed.get(key) or self._first.get(key)

    def wrote(self, path: Path) -> set[str]:
        """Every state this journal gave ``path`` (``wrote`` lines)."""
        key = _path_key(_abs(path))
        return {e.state for e in self._load() if e.op == "wrote" and e.state is not None
                and e.path is not None and _path_key(Path(e.path)) == key}

    def recorded_inside(self, folder: Path) -> bool:
        """Whether this journal recorded anything below ``folder``."""
        self._load()
        inside = _path_key(_abs(folder)) + os.sep
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
            seq=seq, step=step, op=op, path=None if path is None else str(_abs(path)), kind=kind,
            backup=backup, mode=mode, link_target=link_target, key=key, name=name, value=value,
            value_type=value_type, existed=existed, state=state)
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
            self._first.setdefault(_path_key(Path(entry.path)), entry)
        elif entry.op == "handed" and entry.path is not None:
            self._handed[_path_key(Path(entry.path))] = entry
        elif entry.op == "registry" and entry.key is not None and entry.name is not None:
            self._registry_seen.add((entry.key.casefold(), entry.name.casefold()))

    def _forget(self) -> None:
        self._entries = None
        self._valid_bytes = 0


class Transaction:
    """The only way a step changes the machine: each change is journaled before it is made."""

    def __init__(self, journal: Journal, step: str) -> None:
        self.journal = journal
        self.step = step

    def begin(self) -> None:
        self.journal.append(self.step, "step-begin")

    def done(self) -> None:
        self.journal.append(self.step, "step-done")

    # -- files -------------------------------------------------------------------------

    def write_bytes(self, path: Path, data: bytes, mode: int | None = None) -> None:
        """Replace or create a file; ``mode`` None keeps the old file's mode (new: 0o644)."""
        path = self._prepare(path)
        self._wrote(path, "sha256:" + hashlib.sha256(data).hexdigest())
        old_mode = _file_mode(path)
        partial = partial_path(path)
        _unlink(partial)
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0),
                     0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        partial.chmod(mode if mode is not None else old_mode if old_mode is not None else 0o644)
        _replace(partial, path)

    def write_text(self, path: Path, text: str) -> None:
        self.write_bytes(path, text.encode("utf-8"))

    def copy_file(self, src: Path, dst: Path) -> None:
        """Copy ``src``'s bytes and mode to ``dst``; a link at ``dst`` is replaced, not followed."""
        dst = self._prepare(dst)
        self._wrote(dst, state_of(src))
        partial = partial_path(dst)
        _unlink(partial)
        shutil.copyfile(src, partial)
        shutil.copymode(src, partial)
        _replace(partial, dst)

    def symlink(self, path: Path, target: str) -> None:
        path = self._prepare(path)
        self._wrote(path, f"link:{target}")
        _unlink(path)
        path.symlink_to(target)

    def mkdir(self, path: Path) -> None:
        """Make a folder and any missing parents, recording each one made."""
        path = _abs(path)
        missing: list[Path] = []
        probe = path
        while not os.path.lexists(probe):
            missing.append(probe)
            probe = probe.parent
        if not probe.is_dir():
            raise StepError(f"cannot make folder {path}: {probe} is not a folder")
        for folder in reversed(missing):
            if self.journal.original(folder) is None:
                self.journal.append(self.step, "created", path=folder, kind="dir")
            folder.mkdir()

    def remove(self, path: Path) -> None:
        """Remove a file, link or whole folder; every file in it is backed up first."""
        path = _abs(path)
        if not os.path.lexists(path):
            return
        self._record(path)
        self._wrote(path, "absent")
        if path.is_dir() and not path.is_symlink():
            for root, dirs, files in os.walk(path):
                for name in (*dirs, *files):
                    self._record(Path(root) / name)
            shutil.rmtree(path)
        else:
            path.unlink()

    def adopt_tree(self, path: Path) -> None:
        """Announce that an external tool (venv, rattler, uv) is about to create ``path``.

        Rollback then removes the whole tree. A folder that already exists is refused
        unless this journal created it, so a user's folder is never adopted and deleted.
        """
        path = _abs(path)
        first = self.journal.original(path)
        ours = first is not None and (first.op == "created" or first.kind == "absent")
        if os.path.lexists(path) and not ours:
            raise StepError(f"{path} already exists and envforge did not create it; "
                            "move it away or choose another location")
        self.mkdir(path.parent)
        if first is None or first.op != "backup" or first.kind != "absent":
            self.journal.append(self.step, "backup", path=path, kind="absent")

    # -- registry ----------------------------------------------------------------------

    def set_registry_value(self, registry: RegistrySeam, key: str, name: str,
                           value: RegistryValue, value_type: int) -> None:
        if not self.journal.registry_recorded(key, name):
            current = registry.get(key, name)
            self.journal.append(
                self.step, "registry", key=key, name=name,
                value=None if current is None else current[0],
                value_type=None if current is None else current[1], existed=current is not None)
        registry.set(key, name, value, value_type)

    # -- internals ---------------------------------------------------------------------

    def _prepare(self, path: Path) -> Path:
        """Make the parent, record the original, refuse to put a file where a folder is."""
        path = _abs(path)
        self.mkdir(path.parent)
        self._record(path)
        if path.is_dir() and not path.is_symlink():
            raise StepError(f"{path} is a folder; remove it first")
        return path

    def _wrote(self, path: Path, state: str) -> None:
        self.journal.append(self.step, "wrote", path=path, state=state)

    def _record(self, path: Path) -> None:
        if self.journal.original(path) is not None:
            return
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            self.journal.append(self.step, "backup", path=path, kind="absent")
            return
        mode = stat.S_IMODE(st.st_mode)
        if stat.S_ISLNK(st.st_mode):
            self.journal.append(self.step, "backup", path=path, kind="symlink",
                                link_target=str(path.readlink()))
        elif stat.S_ISDIR(st.st_mode):
            self.journal.append(self.step, "backup", path=path, kind="dir", mode=mode)
        elif stat.S_ISREG(st.st_mode):
            self.journal.append(self.step, "backup", path=path, kind="file", mode=mode,
                                backup_of=path)
        else:
            raise StepError(f"{path} is not a file, link or folder; envforge will not change it")


def _file_mode(path: Path) -> int | None:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    return stat.S_IMODE(st.st_mode) if stat.S_ISREG(st.st_mode) else None


def partial_path(path: Path) -> Path:
    """Where a file is written before it is renamed into place: a kill mid-write leaves the
    target as it was (never half-written, which an undo would take for a user's edit) and
    this sibling, which undo removes."""
    return path.with_name(f".{path.name}.envforge-partial")


def _replace(partial: Path, path: Path) -> None:
    """Rename into place; a link at ``path`` is replaced, not followed."""
    if path.is_dir() and not path.is_symlink():
        raise StepError(f"{path} is a folder; remove it first")
    partial.replace(path)


def _unlink(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()


# Windows: a file another process has open (ERROR_SHARING_VIOLATION), or one whose delete
# is still pending (ERROR_ACCESS_DENIED), cannot be removed yet.
_WINDOWS_BUSY = {32, 5}


def _busy(exc: OSError) -> bool:
    """Whether removing failed only because another process is still at work in the tree."""
    return exc.errno == errno.ENOTEMPTY or getattr(exc, "winerror", None) in _WINDOWS_BUSY


def _remove_any(path: Path, *, settle: float = 30.0) -> bool:
    """Remove whatever is at ``path``; whether something was there.

    A tree an orphaned tool (uv, killed with envforge) is still writing into makes rmtree
    fail with "Directory not empty", and on Windows with a sharing violation on the file it
    has open: it is retried until the tree stays gone."""
    if path.is_dir() and not path.is_symlink():
        deadline = time.monotonic() + settle
        while True:
            try:
                shutil.rmtree(path)
            except FileNotFoundError:
                pass
            except OSError as exc:
                if not _busy(exc) or time.monotonic() > deadline:
                    raise
            if not os.path.lexists(path):
                return True
            time.sleep(0.1)
    try:
        path.unlink()
    except FileNotFoundError:
        return False
    return True


# -- rollback ----------------------------------------------------------------------------

KEPT = "kept "  # the start of an undo line that left a changed file in place
LOST = "could not restore "  # the start of one that --force skipped
HANDED = "handed "  # the start of one that left a file to a later journal's rollback


def rollback(journal: Journal, *, registry: RegistrySeam | None = None,
             force: bool = False) -> list[str]:
    """Undo everything the journal records, newest first; one line per thing undone.

    Afterwards the journal and its backups are renamed ``*.rolled-back-<n>``, so a second
    rollback finds nothing to do. Interrupted, it is finished by running it again.
    ``force`` goes past corrupt lines and missing backups, and says what it could not undo.
    """
    undone: list[str] = []
    if force:
        entries, bad = journal.salvage()
        undone += [f"{LOST}line {n} of {journal.path}: it is corrupt" for n in bad]
    else:
        entries = journal.entries()
    if not journal.path.exists():
        _finish_archive(journal)
        return []
    if registry is None and any(e.op == "registry" for e in entries):
        raise StepError("this apply changed the Windows registry; roll it back on Windows")
    if not force:
        missing = [e for e in entries if e.op in ("backup", "handed") and e.kind == "file"
                   and not journal.backup_path(e).is_file()]
        if missing:  # refused before anything is undone: nothing half-done
            raise StepError(f"cannot restore {missing[0].path}: its backup "
                            f"{journal.backup_path(missing[0])} is missing ({len(missing)} "
                            "missing); undo again with --force: it undoes the rest and lists "
                            "what it could not restore")
    written: dict[str, set[str]] = {}
    for entry in entries:
        if entry.op == "wrote" and entry.path is not None and entry.state is not None:
            written.setdefault(_path_key(Path(entry.path)), set()).add(entry.state)
    with contextlib.ExitStack() as held:
        others = _neighbours(journal, entries, written, held)
        for entry in _undo_order(entries):
            try:
                line = _undo(journal, entry, registry, written, others)
            except StepError as exc:
                if not force:
                    raise StepError(f"{exc}; undo again with --force: it undoes the rest and "
                                    "lists what it could not restore") from None
                line = f"{LOST}{entry.path}: {exc}"
            if line:
                undone.append(line)
    if registry is not None and any(e.op == "registry" for e in entries):
        registry.broadcast_setting_change()
    _archive(journal)
    return undone


def _undo_order(entries: list[JournalEntry]) -> list[JournalEntry]:
    """Newest first, each path's first record replaced by the original handed over for it;
    then the folders other journals handed over, deepest first."""
    first: dict[str, JournalEntry] = {}
    handed: dict[str, JournalEntry] = {}
    for entry in entries:
        if entry.path is None:
            continue
        key = _path_key(Path(entry.path))
        if entry.op in ("backup", "created"):
            first.setdefault(key, entry)
        elif entry.op == "handed":
            handed[key] = entry
    order: list[JournalEntry] = []
    for entry in reversed(entries):
        if entry.op == "handed":
            continue
        at = "" if entry.path is None else _path_key(Path(entry.path))
        if at in handed and first.get(at) is entry:
            entry = handed[at].model_copy(update={"op": "backup"})
        order.append(entry)
    folders = sorted((e for k, e in handed.items() if k not in first),
                     key=lambda e: len(Path(e.path or "").parts), reverse=True)
    return order + [e.model_copy(update={"op": "created"}) for e in folders
                    if e.kind == "absent"]


def _neighbours(journal: Journal, entries: list[JournalEntry], written: dict[str, set[str]],
                held: contextlib.ExitStack) -> list[Journal]:
    """The other journals in this one's state folder that recorded a path this one wrote or
    a path inside a folder it made, each locked (held until the rollback ends)."""
    folders = [_path_key(Path(e.path)) + os.sep for e in entries  # made, or handed over
               if e.op in ("created", "handed") and e.path is not None]
    try:
        siblings = sorted(journal.state_dir.absolute().parent.iterdir())
    except OSError:
        return []
    found: list[Journal] = []
    for folder in siblings:
        if folder == journal.state_dir.absolute() or not (folder / JOURNAL_FILE).is_file():
            continue
        try:
            theirs = {_path_key(Path(e.path)) for e in Journal(folder).entries()
                      if e.path is not None and e.op in ("backup", "created")}
        except (StepError, OSError):
            continue  # a damaged journal is its own rollback's business
        if theirs & written.keys() or any(k.startswith(f) for k in theirs for f in folders):
            held.enter_context(env_lock(folder))
            found.append(Journal(folder))  # read again, under its lock
    return found


def _original_state(journal: Journal, entry: JournalEntry) -> tuple[str, int | None] | None:
    """What a file-like record restores: its state and (for a file) mode."""
    if entry.kind == "absent":
        return "absent", None
    if entry.kind == "symlink":
        return f"link:{entry.link_target}", None
    if entry.kind == "file" and entry.backup is not None:
        source = journal.backup_path(entry)
        return (state_of(source), entry.mode) if source.is_file() else None
    return None


def _hand_over(journal: Journal, entry: JournalEntry, path: Path, ours: set[str],
               others: list[Journal]) -> str | None:
    """Give this journal's original of ``path`` to the journal that changed it after this
    one wrote it (its original is what this one wrote), leaving the file alone; None when
    no journal did."""
    mine = _original_state(journal, entry)
    if mine is None:
        return None
    for other in others:
        point = other.restore_point(path)
        if point is None or point.op == "created" or point.kind not in _FILE_KINDS:
            continue
        theirs = _original_state(other, point)
        if theirs is None:
            continue
        found_ours = theirs[0] in ours  # it changed the file after this journal wrote it
        handed_before = theirs == mine and state_of(path) not in ours  # then was interrupted
        if not (found_ours or handed_before):
            continue
        if theirs != mine:
            other.append(f"handed by {journal.state_dir.name}", "handed", path=path,
                         kind=entry.kind, mode=entry.mode, link_target=entry.link_target,
                         backup_of=journal.backup_path(entry) if entry.kind == "file" else None)
        return (f"{HANDED}{path} over to {other.state_dir.name}, which changed it since: its "
                "rollback restores the original")
    return None


def _hand_over_folder(journal: Journal, path: Path, others: list[Journal]) -> str | None:
    """Give a folder this journal made, still holding another journal's files, to that
    journal: its rollback removes it if empty. None when no journal has files in it."""
    for other in others:
        if not other.recorded_inside(path):
            continue
        point = other.restore_point(path)
        if point is None:
            other.append(f"handed by {journal.state_dir.name}", "handed", path=path,
                         kind="absent")
        elif point.op != "handed":
            continue  # it recorded the folder itself: its own record decides
        return f"{HANDED}folder {path} over to {other.state_dir.name}, whose files are in it"
    return None


_FILE_KINDS = ("absent", "file", "symlink")


def _undo(journal: Journal, entry: JournalEntry, registry: RegistrySeam | None,
          written: dict[str, set[str]], others: list[Journal]) -> str | None:
    if entry.op == "registry":
        assert registry is not None and entry.key is not None and entry.name is not None
        where = f"{entry.key}\\{entry.name}"
        if entry.existed:
            assert entry.value is not None and entry.value_type is not None
            registry.set(entry.key, entry.name, entry.value, entry.value_type)
            return f"restored registry value {where}"
        if registry.get(entry.key, entry.name) is not None:
            registry.delete(entry.key, entry.name)
            return f"deleted registry value {where}"
        return None
    if entry.path is None or entry.op == "wrote":
        return None  # step markers; what was written is checked through ``written``
    path = Path(entry.path)
    if entry.op == "created":
        if path.is_dir() and not path.is_symlink():
            try:
                path.rmdir()
            except OSError:
                return _hand_over_folder(journal, path, others) or (
                    f"left folder {path}: it holds files envforge did not put there")
            return f"removed folder {path}"
        if entry.kind == "absent":
            return None  # a folder handed over: never anything else at its name
        return f"removed {path}" if _remove_any(path) else None
    if entry.kind in ("absent", "file"):
        _remove_any(partial_path(path))
    ours = written.get(_path_key(path))
    if ours is not None and entry.kind in _FILE_KINDS:
        handed = _hand_over(journal, entry, path, ours, others)
        if handed is not None:
            return handed
        kept = _keep_if_changed(journal, entry, path, ours, others)
        if kept is not None:
            return kept or None
    if entry.kind == "absent":
        return f"removed {path}" if _remove_any(path) else None
    if entry.kind == "file":
        source = journal.backup_path(entry)
        if not source.is_file():
            raise StepError(f"cannot restore {path}: its backup {source} is missing")
        _remove_any(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, path)
        if entry.mode is not None:
            path.chmod(entry.mode)
        return f"restored {path}"
    if entry.kind == "symlink":
        assert entry.link_target is not None
        if path.is_symlink() and str(path.readlink()) == entry.link_target:
            return None
        _remove_any(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.symlink_to(entry.link_target)
        return f"restored link {path} -> {entry.link_target}"
    if entry.kind == "dir":
        recreated = not (path.is_dir() and not path.is_symlink())
        if recreated:
            _remove_any(path)
            path.mkdir(parents=True)
        if entry.mode is not None:
            path.chmod(entry.mode)
        return f"recreated folder {path}" if recreated else None
    return None


def _keep_if_changed(journal: Journal, entry: JournalEntry, path: Path,
                     ours: set[str], others: list[Journal]) -> str | None:
    """None: ``path`` holds what this journal wrote, restore it. Otherwise it was changed
    since: "" when it is already the original, else keep it, put the original beside it
    (a file's backup copied to a free ``NAME.envforge-original`` name) and say so; an
    original another journal wrote is not put beside: that journal's rollback puts its own
    original (the user's) there."""
    now = state_of(path)
    if now in ours:
        return None
    if entry.kind == "absent":
        return "" if now == "absent" else (
            f"{KEPT}{path}: changed since envforge wrote it (there was nothing before)")
    if entry.kind == "symlink":
        if now == f"link:{entry.link_target}":
            return ""
        return (f"{KEPT}{path}: changed since envforge wrote it; it was a link to "
                f"{entry.link_target}")
    source = journal.backup_path(entry)
    if not source.is_file():
        raise StepError(f"cannot restore {path}: its backup {source} is missing")
    if now == state_of(source):
        return ""
    if now == "absent":
        return None  # removed since: the original goes back, nothing is lost
    below = next((o for o in others if state_of(source) in o.wrote(path)), None)
    if below is not None:
        return (f"{KEPT}{path}: changed since envforge wrote it; what it replaced was "
                f"{below.state_dir.name}'s, whose rollback puts the original beside it")
    beside = _free_name(path)
    shutil.copy2(source, beside)
    if entry.mode is not None:
        beside.chmod(entry.mode)
    return f"{KEPT}{path}: changed since envforge wrote it; its original is at {beside}"


def _free_name(path: Path) -> Path:
    for n in range(1, 1000):
        candidate = path.with_name(path.name + ".envforge-original" + ("" if n == 1 else f"-{n}"))
        if not os.path.lexists(candidate):
            return candidate
    raise StepError(f"no free name beside {path} for its original")


_ARCHIVED = re.compile(r"^journal\.rolled-back-(\d+)\.jsonl$")


def _archive(journal: Journal) -> None:
    """Rename the journal (this marks the rollback done), then its backups beside it."""
    numbers = [int(m[1]) for p in journal.state_dir.iterdir() if (m := _ARCHIVED.match(p.name))]
    n = max(numbers, default=0) + 1
    journal.path.replace(journal.state_dir / f"journal.rolled-back-{n}.jsonl")
    fsync_dir(journal.state_dir)
    journal._forget()
    _finish_archive(journal)


def _finish_archive(journal: Journal) -> None:
    """Move backups/ beside the newest rolled-back journal, if a crash left it behind."""
    if not journal.backups.is_dir() or not journal.state_dir.is_dir():
        return
    numbers = [int(m[1]) for p in journal.state_dir.iterdir() if (m := _ARCHIVED.match(p.name))]
    if not numbers:
        return
    target = journal.state_dir / f"backups.rolled-back-{max(numbers)}"
    if not target.exists():
        journal.backups.replace(target)
        fsync_dir(journal.state_dir)


# -- the environment lock ----------------------------------------------------------------

@contextlib.contextmanager
def env_lock(state_dir: Path, *, timeout: float = 5.0) -> Iterator[None]:
    """Hold the environment's apply lock; another holder makes this a BusyError after ``timeout``.

    The holder's pid sits in a sidecar file so the message can name it.
    """
    from filelock import FileLock, Timeout  # only apply and rollback take the lock

    state_dir = Path(state_dir)
    state_dir.mkdir(parents=True, exist_ok=True)
    lock = FileLock(state_dir / LOCK_FILE)
    sidecar = state_dir / LOCK_PID_FILE
    try:
        lock.acquire(timeout=timeout)
    except Timeout:
        try:
            pid = sidecar.read_text(encoding="utf-8").strip() or "unknown"
        except OSError:
            pid = "unknown"
        raise BusyError(f"another envforge is applying {state_dir.name} (pid {pid}); "
                        "try again when it finishes") from None
    try:
        sidecar.write_text(f"{os.getpid()}\n", encoding="utf-8")
        yield
    finally:
        with contextlib.suppress(OSError):
            sidecar.unlink()
        lock.release()
