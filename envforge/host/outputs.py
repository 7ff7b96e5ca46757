"""Every ``-o`` a command writes goes through ``check_output`` before anything is made.

A command's output must not be one of its own inputs (``plan specs/x.toml -o specs/x.toml``
would replace the spec with plan JSON), a FIFO or device (opening one blocks or writes
nowhere), an existing folder where a file is meant, or a file in a missing folder. Each is
one line and exit 2, checked before the command changes anything.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from envforge.errors import InputError

__all__ = ["check_output", "same_file"]


def same_file(one: Path, other: Path) -> bool:
    """The same file by resolved path, or by device and inode (a hard link, a bind mount)."""
    if one.resolve() == other.resolve():
        return True
    try:
        return one.samefile(other)
    except OSError:
        return False


def check_output(path: Path, *, inputs: Iterable[Path] = (), kind: Literal["file", "folder"]
                 = "file", option: str = "-o", make_parents: bool = False) -> None:
    """Refuse (InputError) an output ``path`` that is one of ``inputs``, a special file, the
    wrong kind of existing entry, or (without ``make_parents``) a file in a missing folder.

    With ``make_parents`` the missing folders are the command's to make, so the nearest
    existing one must be a folder. A folder output may neither hold an input (the command
    may replace what is in it) nor lie inside one (a copy of it would copy itself)."""
    where = f"{option} {path}"
    for given in inputs:
        if same_file(path, given):
            raise InputError(f"{where}: that is the command's own input {given}; pick "
                             "another output")
        if kind == "folder" and _overlap(given, path):
            raise InputError(f"{where}: overlaps the command's input {given} (one holds the "
                             "other); pick a folder apart from it")
    try:
        mode = path.stat().st_mode
    except (FileNotFoundError, NotADirectoryError):
        mode = None
    except OSError as exc:
        raise InputError(f"{where}: cannot be written: {exc.strerror}") from None
    if mode is not None and not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        raise InputError(f"{where}: a special file (FIFO, device or socket), not a "
                         f"{kind}; pick a regular {kind}")
    if mode is not None and kind == "file" and stat.S_ISDIR(mode):
        raise InputError(f"{where}: is a folder; name the file to write")
    if mode is not None and kind == "folder" and not stat.S_ISDIR(mode):
        raise InputError(f"{where}: exists and is not a folder")
    if mode is None:
        _check_parent(path, where, make_parents=make_parents)


def _check_parent(path: Path, where: str, *, make_parents: bool) -> None:
    parent = path.absolute().parent
    if make_parents:
        while not os.path.lexists(parent) and parent != parent.parent:
            parent = parent.parent
    if not parent.is_dir():
        what = "is not a folder" if os.path.lexists(parent) else "does not exist"
        raise InputError(f"{where}: the folder {parent} {what}; make it first or pick "
                         "another output")


def _overlap(one: Path, other: Path) -> bool:
    first, second = one.resolve(), other.resolve()
    return first.is_relative_to(second) or second.is_relative_to(first)
