"""Hashes and safe unpacking of the archives users hand envforge (cuDNN, MinGW, bundles).

An archive is scanned whole before anything is written: one bad member refuses the
lot, naming the archive and the member. Refused: absolute names, ``..`` escapes,
links (symbolic or hard) that lead outside, members reached through a link, device
files and FIFOs, and set-uid/set-gid bits unless allowed. Link targets are resolved
the way the kernel would, following the archive's own links, so ``a -> .`` then
``b -> a/../x`` is caught even though ``a/../x`` looks harmless as text.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import stat
import tarfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Literal

from envforge.confine import EscapeError, relative_parts
from envforge.errors import ArtifactError

_CHUNK = 1 << 20


def sha256_file(path: Path) -> str:
    """The hex sha256 of a file, read in chunks (cuDNN archives run to gigabytes)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def verify_artifact(path: Path, sha256: str) -> None:
    """Refuse a missing file or one whose hash differs from the lock's."""
    if not Path(path).is_file():
        raise ArtifactError(f"{path}: no such file")
    found = sha256_file(path)
    if found != sha256.lower():
        raise ArtifactError(f"{path}: sha256 mismatch, the file was tampered with or is not the "
                            f"one locked: expected {sha256.lower()}, found {found}")


MemberKind = Literal["file", "dir", "symlink", "hardlink"]


@dataclass(frozen=True)
class _Member:
    name: str  # normalised: relative, "/"-separated, no "." parts
    kind: MemberKind
    mode: int
    link: str | None  # symlink target as written, or the hardlink's normalised member name
    handle: tarfile.TarInfo | zipfile.ZipInfo


_DRIVE = re.compile(r"^[A-Za-z]:")


def safe_member_name(archive: Path, raw: str) -> str:
    """A member's name made relative, or ArtifactError: absolute, escaping, too long."""
    try:
        return "/".join(relative_parts(raw))
    except EscapeError as exc:
        raise refuse_member(archive, raw, str(exc)) from None


def refuse_member(archive: Path, member: str, why: str) -> ArtifactError:
    return ArtifactError(f"{archive}: refusing to unpack member {member!r}: {why}")


def _tar_members(archive: Path, tar: tarfile.TarFile) -> Iterator[_Member]:
    for info in tar.getmembers():
        name = safe_member_name(archive, info.name)
        if info.issym():
            yield _Member(name, "symlink", info.mode, info.linkname, info)
        elif info.islnk():
            try:
                target = safe_member_name(archive, info.linkname)
            except ArtifactError:
                raise refuse_member(archive, info.name,
                              f"hard link to {info.linkname!r} leads outside") from None
            yield _Member(name, "hardlink", info.mode, target, info)
        elif info.isdir():
            yield _Member(name, "dir", info.mode, None, info)
        elif info.isfile():
            yield _Member(name, "file", info.mode, None, info)
        else:
            raise refuse_member(archive, info.name, "device file, FIFO or other special file")


def _zip_members(archive: Path, zf: zipfile.ZipFile) -> Iterator[_Member]:
    for info in zf.infolist():
        name = safe_member_name(archive, info.filename)
        unix = info.external_attr >> 16 if info.create_system == 3 else 0
        kind = stat.S_IFMT(unix)
        mode = stat.S_IMODE(unix)
        if info.is_dir() or kind == stat.S_IFDIR:
            yield _Member(name, "dir", mode or 0o755, None, info)
        elif kind == stat.S_IFLNK:
            target = zf.read(info).decode("utf-8", errors="strict")
            yield _Member(name, "symlink", 0o777, target, info)
        elif kind in (0, stat.S_IFREG):
            yield _Member(name, "file", mode or 0o644, None, info)
        else:
            raise refuse_member(archive, info.filename, "device file, FIFO or other special file")


def _resolve(links: dict[str, str], start: list[str], target: str,
             hops: int = 0) -> list[str] | None:
    """Where ``target``, read from folder ``start``, leads inside the archive; None: outside."""
    text = target.replace("\\", "/")
    if text.startswith("/") or _DRIVE.match(text) or hops > 40:
        return None
    current = list(start)
    for part in text.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if not current:
                return None
            current.pop()
            continue
        current.append(part)
        joined = "/".join(current)
        if joined in links:
            resolved = _resolve(links, current[:-1], links[joined], hops + 1)
            if resolved is None:
                return None
            current = resolved
    return current


def _scan(archive: Path, members: list[_Member], allow_setuid: bool) -> None:
    kinds: dict[str, MemberKind] = {}
    links: dict[str, str] = {}
    for member in members:
        previous = kinds.get(member.name)
        if previous is not None and previous != member.kind:
            raise refuse_member(archive, member.name,
                                f"appears both as {previous} and {member.kind}")
        kinds[member.name] = member.kind
        if member.kind == "symlink":
            assert member.link is not None
            links[member.name] = member.link
    seen_files: set[str] = set()
    for member in members:
        parts = member.name.split("/")
        for depth in range(1, len(parts)):
            if "/".join(parts[:depth]) in links:
                raise refuse_member(archive, member.name, "it would be written through a link")
        if member.mode & (stat.S_ISUID | stat.S_ISGID) and not allow_setuid:
            raise refuse_member(archive, member.name, "set-uid or set-gid bit")
        if member.kind == "symlink":
            assert member.link is not None
            if _resolve(links, parts[:-1], member.link) is None:
                raise refuse_member(archive, member.name, f"link to {member.link!r} leads outside")
        elif member.kind == "hardlink":
            if member.link not in seen_files:
                raise refuse_member(archive, member.name,
                              f"hard link to {member.link!r}, which is not a file before it")
        elif member.kind == "file":
            seen_files.add(member.name)


def _open(archive: Path) -> tarfile.TarFile | zipfile.ZipFile:
    if not archive.is_file():
        raise ArtifactError(f"{archive}: no such file")
    if zipfile.is_zipfile(archive):
        return zipfile.ZipFile(archive)
    try:
        return tarfile.open(archive, "r:*")
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise ArtifactError(f"{archive}: not a zip or tar archive ({exc})") from None


def _members(archive: Path, opened: tarfile.TarFile | zipfile.ZipFile) -> list[_Member]:
    try:
        if isinstance(opened, zipfile.ZipFile):
            return list(_zip_members(archive, opened))
        return list(_tar_members(archive, opened))
    except (tarfile.TarError, zipfile.BadZipFile, EOFError, UnicodeDecodeError) as exc:
        raise ArtifactError(f"{archive}: damaged archive ({exc})") from None


def extract_archive(archive: Path, dest: Path, *, allow_setuid: bool = False) -> list[str]:
    """Unpack a .zip or .tar(.gz/.xz/.bz2) into ``dest``, which must be new or empty.

    An empty destination means no link left there beforehand can redirect a write.
    Returns the member names written. Nothing is written if any member is refused.
    """
    archive = Path(archive)
    dest = Path(dest)
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise ArtifactError(f"cannot unpack {archive} into {dest}: it is not an empty folder")
    with _open(archive) as opened:
        members = _members(archive, opened)
        _scan(archive, members, allow_setuid)
        dest.mkdir(parents=True, exist_ok=True)
        dirs: list[tuple[Path, int]] = []
        for member in members:
            target = dest / member.name
            target.parent.mkdir(parents=True, exist_ok=True)
            keep = stat.S_ISUID | stat.S_ISGID if allow_setuid else 0
            if member.kind == "dir":
                target.mkdir(exist_ok=True)
                dirs.append((target, (member.mode & (0o777 | keep)) | 0o700))
            elif member.kind == "symlink":
                assert member.link is not None
                if os.path.lexists(target):
                    target.unlink()
                target.symlink_to(member.link)
            elif member.kind == "hardlink":
                assert member.link is not None
                if os.path.lexists(target):
                    target.unlink()
                shutil.copy2(dest / member.link, target)
            else:
                if os.path.lexists(target):
                    target.unlink()
                with _read(opened, member) as src, open(target, "xb") as dst:
                    shutil.copyfileobj(src, dst, _CHUNK)
                target.chmod((member.mode & (0o777 | keep)) | 0o600)
        for folder, mode in reversed(dirs):
            folder.chmod(mode)
    return [m.name for m in members]


def _read(opened: tarfile.TarFile | zipfile.ZipFile, member: _Member) -> IO[bytes]:
    if isinstance(opened, zipfile.ZipFile):
        assert isinstance(member.handle, zipfile.ZipInfo)
        return opened.open(member.handle)
    assert isinstance(member.handle, tarfile.TarInfo)
    handle = opened.extractfile(member.handle)
    if handle is None:
        raise ArtifactError(f"cannot read member {member.name!r}")
    return handle
