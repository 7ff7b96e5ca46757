"""Every entry under a folder, to compare a tree before and after (rollback is byte-exact)."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

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
