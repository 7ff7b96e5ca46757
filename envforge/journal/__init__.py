"""The apply journal: every change is written down, durably, before it is made.

Nothing is lost: the first time a path (or registry value) is touched, its prior state
is recorded — absent, file bytes copied to ``backups/<seq>`` with the mode, a link's
target, a folder — and only then is it changed (``transaction``); later touches record
nothing more. Every write is journaled too (``wrote``: the state envforge is about to
leave). ``rollback`` undoes the records newest first and restores a path only if it still
holds what envforge wrote (``undo``); journals side by side hand an original over to the
one that changed the file later (``stack``), so undos are safe in any order. One apply or
rollback holds an environment at a time (``envlock``); ``store`` is the file format.
"""

from envforge.journal.envlock import env_lock, refuse_if_held
from envforge.journal.stack import HANDED
from envforge.journal.store import (
    BACKUPS_DIR,
    JOURNAL_FILE,
    LOCK_FILE,
    LOCK_PID_FILE,
    Journal,
    JournalEntry,
    Kind,
    Op,
    fsync_dir,
    naming,
    state_of,
)
from envforge.journal.transaction import Transaction, partial_path
from envforge.journal.undo import KEPT, LOST, rollback

__all__ = [
    "BACKUPS_DIR",
    "HANDED",
    "JOURNAL_FILE",
    "KEPT",
    "LOCK_FILE",
    "LOCK_PID_FILE",
    "LOST",
    "Journal",
    "JournalEntry",
    "Kind",
    "Op",
    "Transaction",
    "env_lock",
    "fsync_dir",
    "naming",
    "partial_path",
    "refuse_if_held",
    "rollback",
    "state_of",
]
