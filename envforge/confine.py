"""The one rule for every path that comes from a lock, a bundle's manifest or an archive.

Such a path is data someone else wrote: it is taken relative to a root envforge chose and
must stay below it. Absolute or drive-lettered names, ``..``, backslashes, NUL, control
characters and names longer than the file system takes are refused before anything is
written, with the same words whatever the source. Link targets are judged where the link
is installed, not where it sat in its archive.
"""

from __future__ import annotations

import os
import posixpath
import re
from pathlib import Path, PurePosixPath

from envforge.errors import ArtifactError

NAME_MAX = 255  # bytes in one path component (ext4, NTFS in UTF-16 units, APFS)
PATH_MAX = 4096  # bytes in a whole path (Linux)
_DRIVE = re.compile(r"^[A-Za-z]:")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class EscapeError(ValueError):
    """Why a relative path is not acceptable; the caller names the source."""


def relative_parts(raw: str, *, single: bool = False) -> tuple[str, ...]:
    """The components of ``raw`` as a path below some root, or EscapeError saying why not.

    ``single``: one file name, no folders (a marker, a wheel's file name).
    """
    if _CONTROL.search(raw):
        raise EscapeError("control character or NUL in the name")
    text = raw.replace("\\", "/")
    if text.startswith("/") or _DRIVE.match(text):
        raise EscapeError("absolute path")
    parts = tuple(p for p in text.split("/") if p not in ("", "."))
    if ".." in parts:
        raise EscapeError("'..' leads outside the folder")
    if not parts:
        raise EscapeError("empty name")
    if single and (len(parts) != 1 or "\\" in raw or "/" in raw):
        raise EscapeError("a file name may not hold folders")
    if any(len(p.encode("utf-8", "surrogateescape")) > NAME_MAX for p in parts):
        raise EscapeError(f"a name longer than {NAME_MAX} bytes")
    if len(text.encode("utf-8", "surrogateescape")) > PATH_MAX:
        raise EscapeError(f"a path longer than {PATH_MAX} bytes")
    return parts


def check_relative(raw: str, *, single: bool = False) -> str:
    """For validators: ``raw`` when it is acceptable, else ValueError (pydantic's message)."""
    relative_parts(raw, single=single)
    return raw


def inside(root: Path, raw: str, *, what: str, single: bool = False) -> Path:
    """``root / raw`` when it stays below root, else ArtifactError naming ``what``."""
    try:
        parts = relative_parts(raw, single=single)
    except EscapeError as exc:
        raise ArtifactError(f"{what} {raw!r} refused: {exc} (it must stay inside {root})") \
            from None
    path = Path(root).joinpath(*parts)
    if len(os.fsencode(str(path))) > PATH_MAX:
        raise ArtifactError(f"{what} {raw!r} refused: {path} is longer than {PATH_MAX} bytes")
    return path


def link_target_inside(root: Path, link: Path, target: str, *, what: str) -> None:
    """Refuse a symlink ``link -> target`` that, installed at ``link``, leads outside ``root``.

    Judged on the text (as the kernel follows it from the link's folder); links already
    inside root are the caller's to have checked when they were made.
    """
    if "\0" in target or target.startswith(("/", "\\")) or _DRIVE.match(target):
        raise ArtifactError(f"{what}: link {link} -> {target!r} is absolute; refused")
    here = PurePosixPath(Path(link).parent.as_posix())
    joined = posixpath.normpath(posixpath.join(str(here), target.replace("\\", "/")))
    base = posixpath.normpath(Path(root).as_posix())
    if joined != base and not joined.startswith(base.rstrip("/") + "/"):
        raise ArtifactError(f"{what}: link {link} -> {target!r} would point outside {root} "
                            "once installed; refused")


def resolved_inside(root: Path, raw: str) -> Path:
    """``root / raw`` for a file a repository's own file names (``-r ../x.txt``), else
    EscapeError: ``raw`` normalized (``sub/..`` is no folder) must stay below ``root``, and so
    must the file it resolves to, links followed."""
    text = posixpath.normpath(raw.replace("\\", "/")) if raw else raw
    path = Path(root).joinpath(*relative_parts(text))
    base = Path(root).resolve()
    target = path.resolve()
    if target != base and not target.is_relative_to(base):
        raise EscapeError(f"a link to {target}, outside {base}")
    return path
