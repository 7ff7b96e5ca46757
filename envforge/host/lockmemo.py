"""That a lock passed ``check_lock`` against its spec, remembered in envforge's cache: a warm
apply then does not derive the spec's lock tables again (about 50 ms of theano-cpu's warm
apply, a ninth of it).

The check is a pure function of the spec and the lock (as models), whether the kernels'
references were recomputed, and the code judging them: envforge's modules and knowledge and
each pack's. The record, one file per lock path, holds a digest of all of those (the code
by the stat of its files, as the no-op stamp takes it: ``noopstamp`` says why a same stat is
a same file). A lock that says anything else (a comment or a blank line aside), an edited
spec or an edited envforge gives another digest, so the check runs again and refuses what
it refused before; a record that cannot be read or written costs only that check.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Iterable
from contextlib import suppress
from pathlib import Path

from envforge import __version__
from envforge.host.atomicfile import write_atomic
from envforge.host.noopstamp import own_files, package_files, stat_of

FORMAT = 1


def code_files(modules: Iterable[str]) -> list[str]:
    """envforge's own files and, for a pack whose module lives elsewhere (a third party's),
    the Python and TOML files of its top-level package (of a lone module: that file)."""
    found = own_files()
    own_root = str(Path(__file__).resolve().parent.parent)
    roots: set[str] = set()
    for name in modules:
        module = sys.modules.get(name.partition(".")[0])
        where = getattr(module, "__file__", None)
        if where is None:
            continue
        if not hasattr(module, "__path__"):  # a lone module, not a package
            found.append(os.path.realpath(where))
            continue
        root = os.path.dirname(os.path.realpath(where))  # noqa: PTH120
        if root != own_root and root not in roots:
            roots.add(root)
            found += package_files(root)
    return found


def digest(spec_json: str, lock_json: str, *, references: bool, packs: Iterable[object]) -> str:
    """What the check's verdict rests on, as one BLAKE2 digest."""
    packs = list(packs)
    names = [str(getattr(pack, "name", "")) for pack in packs]
    files = code_files(type(pack).__module__ for pack in packs)
    key = json.dumps([FORMAT, __version__, names, references, spec_json, lock_json,
                      [(path, stat_of(path)) for path in files]])
    return hashlib.blake2b(key.encode("utf-8"), digest_size=32).hexdigest()


def record_path(folder: Path, lock_path: Path) -> Path:
    name = hashlib.blake2b(str(lock_path.absolute()).encode("utf-8"), digest_size=16).hexdigest()
    return folder / f"{name}.txt"


# record -> key: the checks this process passed, kept once its run went past its refusals
_HELD: dict[Path, str] = {}


def passed(folder: Path, lock_path: Path, key: str) -> bool:
    """Whether the lock at ``lock_path`` passed the check with this very ``key``."""
    try:
        return record_path(folder, lock_path).read_text(encoding="ascii") == key
    except (OSError, UnicodeDecodeError):
        return False


def hold(folder: Path, lock_path: Path, key: str) -> None:
    """A check that passed, kept by ``keep_held``: not before the run is past its refusals,
    so that a refused apply leaves envforge's cache as it found it."""
    _HELD[record_path(folder, lock_path)] = key


def keep_held() -> None:
    """Every held record written whole, each replacing the lock path's previous one (one
    record per lock path); one that cannot be written costs the next run the check."""
    for record, key in _HELD.items():
        with suppress(OSError):
            write_atomic(record, key.encode("ascii"))
    _HELD.clear()
