"""Rollback: every record undone, newest first, each undo setting the original state.

An interrupted rollback is finished by running it again. An undo first checks the path
still holds what envforge wrote; a file changed since (by the user, another spec, doctor)
is kept, the user's original put beside it, and the line says so: undos are safe in any
order (``stack.py`` hands an original to the journal that changed the file after this one).
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import shutil
import time
from pathlib import Path

from envforge.errors import StepError
from envforge.host.windows import RegistrySeam
from envforge.journal.stack import FILE_KINDS, hand_over, hand_over_folder, neighbours
from envforge.journal.store import Journal, JournalEntry, fsync_dir, path_key, state_of
from envforge.journal.transaction import partial_path

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


KEPT = "kept "  # the start of an undo line that left a changed file in place
LOST = "could not restore "  # the start of one that --force skipped


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
            written.setdefault(path_key(Path(entry.path)), set()).add(entry.state)
    with contextlib.ExitStack() as held:
        others = neighbours(journal, entries, written, held)
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
        key = path_key(Path(entry.path))
        if entry.op in ("backup", "created"):
            first.setdefault(key, entry)
        elif entry.op == "handed":
            handed[key] = entry
    order: list[JournalEntry] = []
    for entry in reversed(entries):
        if entry.op == "handed":
            continue
        at = "" if entry.path is None else path_key(Path(entry.path))
        if at in handed and first.get(at) is entry:
            entry = handed[at].model_copy(update={"op": "backup"})
        order.append(entry)
    folders = sorted((e for k, e in handed.items() if k not in first),
                     key=lambda e: len(Path(e.path or "").parts), reverse=True)
    return order + [e.model_copy(update={"op": "created"}) for e in folders
                    if e.kind == "absent"]


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
                return hand_over_folder(journal, path, others) or (
                    f"left folder {path}: it holds files envforge did not put there")
            return f"removed folder {path}"
        if entry.kind == "absent":
            return None  # a folder handed over: never anything else at its name
        return f"removed {path}" if _remove_any(path) else None
    if entry.kind in ("absent", "file"):
        _remove_any(partial_path(path))
    ours = written.get(path_key(path))
    if ours is not None and entry.kind in FILE_KINDS:
        handed = hand_over(journal, entry, path, ours, others)
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
            path.mkdir(parents=True, exist_ok=True)
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
