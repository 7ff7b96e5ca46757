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
import lzma
import os
import re
import shutil
import stat
import tarfile
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Literal

from envforge.confine import EscapeError, inside, relative_parts
from envforge.errors import ArtifactError

_CHUNK = 1 << 20
# Decompression bombs: an archive may unpack to at most RATIO times its own size (real
# archives here stay under 10:1; deflate's ceiling is about 1000:1), with a floor for tiny
# archives and a ceiling for all. Checked on declared sizes before anything is written.
MAX_RATIO = 100
MIN_BUDGET = 64 << 20
MAX_UNPACKED = 32 << 30
# Zip compression methods zipfile reads: stored, deflate, bzip2, lzma (not deflate64).
_ZIP_METHODS = {zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA}


def unpack_budget(packed: int) -> int:
    """The most bytes an archive of ``packed`` bytes may unpack to."""
    return min(MAX_UNPACKED, max(MIN_BUDGET, packed * MAX_RATIO))


def check_unpacked_size(archive: Path | str, packed: int, unpacked: int) -> None:
    """Refuse an archive whose contents would exceed its budget (a decompression bomb)."""
    if unpacked < 0:
        raise ArtifactError(f"{archive}: a member declares a negative size; refused")
    if unpacked > unpack_budget(packed):
        raise ArtifactError(
            f"{archive}: would unpack to {unpacked >> 20} MiB from {packed >> 20} MiB, over "
            f"the limit of {unpack_budget(packed) >> 20} MiB ({MAX_RATIO}:1, at most "
            f"{MAX_UNPACKED >> 30} GiB): refusing a likely decompression bomb")


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
        if info.flag_bits & 0x1:
            raise refuse_member(archive, info.filename, "encrypted")
        if info.compress_type not in _ZIP_METHODS:
            raise refuse_member(archive, info.filename,
                                f"unsupported compression method {info.compress_type}")
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
        if previous is not None and member.kind != "dir":
            raise refuse_member(archive, member.name, "appears twice")
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
        check_unpacked_size(archive, archive.stat().st_size, sum(_size(m) for m in members))
        for member in members:  # the whole path too, not only the name, must fit
            inside(dest, member.name, what=f"{archive}: member")
        created = not dest.exists()
        dest.mkdir(parents=True, exist_ok=True)
        try:
            _write_members(opened, members, dest, allow_setuid)
        except BaseException as exc:
            _clear(dest, remove=created)
            if isinstance(exc, (zipfile.BadZipFile, tarfile.TarError, EOFError, OSError,
                                zlib.error, lzma.LZMAError)):
                why = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
                raise ArtifactError(f"{archive}: cannot unpack into {dest} ({why}); nothing "
                                    "was left there") from None
            raise
    return [m.name for m in members]


def _size(member: _Member) -> int:
    handle = member.handle
    return handle.file_size if isinstance(handle, zipfile.ZipInfo) else handle.size


def _clear(dest: Path, *, remove: bool) -> None:
    """Remove what an interrupted unpack wrote: the folder if it made it, else its contents."""
    if remove:
        shutil.rmtree(dest, ignore_errors=True)
        return
    for child in dest.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child, ignore_errors=True)
        else:
            child.unlink(missing_ok=True)


def _write_members(opened: tarfile.TarFile | zipfile.ZipFile, members: list[_Member],
                   dest: Path, allow_setuid: bool) -> None:
    """Write the scanned members; the caller clears ``dest`` if this fails midway."""
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


def _read(opened: tarfile.TarFile | zipfile.ZipFile, member: _Member) -> IO[bytes]:
    if isinstance(opened, zipfile.ZipFile):
        assert isinstance(member.handle, zipfile.ZipInfo)
        return opened.open(member.handle)
    assert isinstance(member.handle, tarfile.TarInfo)
    handle = opened.extractfile(member.handle)
    if handle is None:
        raise ArtifactError(f"cannot read member {member.name!r}")
    return handle
