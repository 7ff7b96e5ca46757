"""Unpacking a .7z (MinGW-w64's archives) into a new or empty folder, after host/archives.py's
member scan has passed it whole: with Windows' own name rules, and no link of any kind
(MinGW's archives are made on Windows and hold none; reading a 7z link's target would
mean unpacking it first)."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from envforge.errors import ArtifactError, StepError
from envforge.host.archives import Member, MemberKind, Rules, scan_members

RULES = Rules(links=False, windows_names=True)


def sevenzip_members(files: Iterable[Any]) -> Iterator[Member]:
    """py7zr's file list as the scan reads it."""
    for member in files:
        fmt = member.st_fmt
        kind: MemberKind
        if member.is_symlink or member.is_junction:
            kind = "symlink"
        elif member.is_socket or (fmt is not None and fmt not in (stat.S_IFREG, stat.S_IFDIR)):
            kind = "special"
        else:
            kind = "dir" if member.is_directory else "file"
        yield Member(str(member.filename), kind, member.posix_mode or 0,
                     int(member.uncompressed or 0), handle=member)


def extract_7z(archive: Path, dest: Path) -> list[str]:
    """Unpack a .7z into ``dest`` (new or empty) after scanning every member; returns the names.

    Files come out writable by their owner, so the tree can be removed again on Windows.
    """
    try:
        import py7zr
        from py7zr.exceptions import AbsolutePathError, ArchiveError, PasswordRequired
    except ImportError:
        raise StepError("unpacking MinGW-w64's .7z needs py7zr: pip install py7zr") from None
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise ArtifactError(f"cannot unpack {archive} into {dest}: it is not an empty folder")
    try:
        with py7zr.SevenZipFile(archive, "r") as sz:
            scanned = scan_members(archive, sevenzip_members(sz.files),
                                   packed=archive.stat().st_size, rules=RULES)
            names = [entry.name for entry in scanned]
            sz.extractall(path=dest)
    except (ArchiveError, AbsolutePathError, PasswordRequired, EOFError, ValueError,
            KeyError) as exc:
        raise ArtifactError(f"{archive}: damaged or unsupported 7z archive ({exc})") from None
    for root, dirs, files in os.walk(dest):
        for name in (*dirs, *files):
            path = Path(root) / name
            st = path.lstat()
            if stat.S_ISLNK(st.st_mode):  # the scan refused links; never trust one that appears
                raise ArtifactError(f"{archive}: unpacking made a link at {path}")
            path.chmod(stat.S_IMODE(st.st_mode) | (stat.S_IRWXU if stat.S_ISDIR(st.st_mode)
                                                   else stat.S_IRUSR | stat.S_IWUSR))
    return names
