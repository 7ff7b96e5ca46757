"""Journals side by side form a stack of edits per path, as a patch queue keeps one.

Every environment's journal and doctor's live in envforge's state folder. When a journal is
rolled back under a later journal's change (the later one's original is what this one
wrote), it hands its own original over to that later journal (a ``handed`` line there) and
leaves the current file alone: the later rollback then restores the user's bytes, not
envforge's. A folder it made that another journal's files still fill is handed over the same
way, and removed, if empty, by the last rollback.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from envforge.errors import StepError
from envforge.journal.envlock import env_lock
from envforge.journal.store import JOURNAL_FILE, Journal, JournalEntry, path_key, state_of

HANDED = "handed "  # the start of an undo line that left a file to a later journal's rollback
FILE_KINDS = ("absent", "file", "symlink")  # the records a hand-over can carry


def neighbours(journal: Journal, entries: list[JournalEntry], written: dict[str, set[str]],
               held: contextlib.ExitStack) -> list[Journal]:
    """The other journals in this one's state folder that recorded a path this one wrote or
    a path inside a folder it made, each locked (held until the rollback ends)."""
    folders = [path_key(Path(e.path)) + os.sep for e in entries  # made, or handed over
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
            theirs = {path_key(Path(e.path)) for e in Journal(folder).entries()
                      if e.path is not None and e.op in ("backup", "created")}
        except (StepError, OSError):
            continue  # a damaged journal is its own rollback's business
        if theirs & written.keys() or any(k.startswith(f) for k in theirs for f in folders):
            held.enter_context(env_lock(folder))
            found.append(Journal(folder))  # read again, under its lock
    return found


def original_state(journal: Journal, entry: JournalEntry) -> tuple[str, int | None] | None:
    """What a file-like record restores: its state and (for a file) mode."""
    if entry.kind == "absent":
        return "absent", None
    if entry.kind == "symlink":
        return f"link:{entry.link_target}", None
    if entry.kind == "file" and entry.backup is not None:
        source = journal.backup_path(entry)
        return (state_of(source), entry.mode) if source.is_file() else None
    return None


def hand_over(journal: Journal, entry: JournalEntry, path: Path, ours: set[str],
              others: list[Journal]) -> str | None:
    """Give this journal's original of ``path`` to the journal that changed it after this
    one wrote it (its original is what this one wrote), leaving the file alone; None when
    no journal did."""
    mine = original_state(journal, entry)
    if mine is None:
        return None
    for other in others:
        point = other.restore_point(path)
        if point is None or point.op == "created" or point.kind not in FILE_KINDS:
            continue
        theirs = original_state(other, point)
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


def hand_over_folder(journal: Journal, path: Path, others: list[Journal]) -> str | None:
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

