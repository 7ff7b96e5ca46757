"""Unpacking the .zip and .tar(.gz/.xz/.bz2) archives users hand envforge (cuDNN, suites)
into a new or empty folder, after host/archives.py's member scan has passed them whole."""

from __future__ import annotations

import lzma
import os
import shutil
import stat
import tarfile
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from envforge.confine import inside
from envforge.errors import ArtifactError
from envforge.host.archives import Member, Rules, Scanned, refuse_member, scan_members

_CHUNK = 1 << 20
# Zip compression methods zipfile reads: stored, deflate, bzip2, lzma (not deflate64).
_ZIP_METHODS = {zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA}


def tar_members(tar: tarfile.TarFile) -> Iterator[Member]:
    """A tar's members as the scan reads them (a .deb's data.tar too)."""
    for info in tar.getmembers():
        if info.issym():
            yield Member(info.name, "symlink", info.mode, 0, info.linkname, info)
        elif info.islnk():
            yield Member(info.name, "hardlink", info.mode, 0, info.linkname, info)
        elif info.isdir():
            yield Member(info.name, "dir", info.mode, 0, None, info)
        elif info.isfile():
            yield Member(info.name, "file", info.mode, info.size, None, info)
        else:
            yield Member(info.name, "special", info.mode, 0, None, info)


def _zip_members(archive: Path, zf: zipfile.ZipFile) -> Iterator[Member]:
    for info in zf.infolist():
        if info.flag_bits & 0x1:
            raise refuse_member(archive, info.filename, "encrypted")
        if info.compress_type not in _ZIP_METHODS:
            raise refuse_member(archive, info.filename,
                                f"unsupported compression method {info.compress_type}")
        unix = info.external_attr >> 16 if info.create_system == 3 else 0
        kind = stat.S_IFMT(unix)
        mode = stat.S_IMODE(unix)
        if info.is_dir() or kind == stat.S_IFDIR:
            yield Member(info.filename, "dir", mode or 0o755, 0, None, info)
        elif kind == stat.S_IFLNK:
            target = zf.read(info).decode("utf-8", errors="strict")
            yield Member(info.filename, "symlink", 0o777, 0, target, info)
        elif kind in (0, stat.S_IFREG):
            yield Member(info.filename, "file", mode or 0o644, info.file_size, None, info)
        else:
            yield Member(info.filename, "special", mode, 0, None, info)


def _open(archive: Path) -> tarfile.TarFile | zipfile.ZipFile:
    if not archive.is_file():
        raise ArtifactError(f"{archive}: no such file")
    if zipfile.is_zipfile(archive):
        return zipfile.ZipFile(archive)
    try:
        return tarfile.open(archive, "r:*")
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise ArtifactError(f"{archive}: not a zip or tar archive ({exc})") from None


def _scan(archive: Path, opened: tarfile.TarFile | zipfile.ZipFile,
          allow_setuid: bool) -> list[Scanned]:
    try:
        members = list(_zip_members(archive, opened) if isinstance(opened, zipfile.ZipFile)
                       else tar_members(opened))
    except (tarfile.TarError, zipfile.BadZipFile, EOFError, UnicodeDecodeError) as exc:
        raise ArtifactError(f"{archive}: damaged archive ({exc})") from None
    return scan_members(archive, members, packed=archive.stat().st_size,
                        rules=Rules(setuid=allow_setuid))


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
        members = _scan(archive, opened, allow_setuid)
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


def _write_members(opened: tarfile.TarFile | zipfile.ZipFile, members: list[Scanned],
                   dest: Path, allow_setuid: bool) -> None:
    """Write the scanned members; the caller clears ``dest`` if this fails midway."""
    dirs: list[tuple[Path, int]] = []
    keep = stat.S_ISUID | stat.S_ISGID if allow_setuid else 0
    for entry in members:
        target = dest / entry.name
        target.parent.mkdir(parents=True, exist_ok=True)
        mode = entry.member.mode
        if entry.member.kind == "dir":
            target.mkdir(exist_ok=True)
            dirs.append((target, (mode & (0o777 | keep)) | 0o700))
            continue
        if os.path.lexists(target):
            target.unlink()
        assert entry.link is not None or entry.member.kind == "file"
        if entry.member.kind == "symlink":
            target.symlink_to(entry.link or "")
        elif entry.member.kind == "hardlink":
            shutil.copy2(dest / (entry.link or ""), target)
        else:
            with _read(opened, entry) as src, open(target, "xb") as dst:
                shutil.copyfileobj(src, dst, _CHUNK)
            target.chmod((mode & (0o777 | keep)) | 0o600)
    for folder, folder_mode in reversed(dirs):
        folder.chmod(folder_mode)


def _read(opened: tarfile.TarFile | zipfile.ZipFile, entry: Scanned) -> IO[bytes]:
    handle = entry.member.handle
    if isinstance(opened, zipfile.ZipFile):
        assert isinstance(handle, zipfile.ZipInfo)
        return opened.open(handle)
    assert isinstance(handle, tarfile.TarInfo)
    source = opened.extractfile(handle)
    if source is None:
        raise ArtifactError(f"cannot read member {entry.name!r}")
    return source
