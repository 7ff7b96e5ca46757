"""Wheels unpacked once into envforge's cache, keyed by the archive's sha256 (uv's model);
likewise each .deb: its data.tar decompressed (an unpack checks its headers) and the tar's
regular files unpacked beside it, named by their checked member names (an unpack links them).

An entry is made only from a wheel whose sha256 was just checked against the lock: each
member is written into a temporary folder while its sha256 (its RECORD row; a deb's, which
nothing reads, is left empty) and size are taken, a manifest
records them with each file's stat, the files are made read-only and the folder is renamed
into place, so an entry is whole or absent, and a second apply making the same entry keeps
the first one's.

On use each file's stat (size, mode, mtime, inode) is compared with the manifest, with no
re-hash (uv's way: a full hash only when made): every file's mtime is set, when made, to a
whole second before then, so writing into it moves its mtime, replacing it changes its
inode, a chmod making it writable changes its mode, removing it fails the stat. An entry
that differs is removed and made again from the archive, never installed from. What this
misses is a write that sets mtime back on purpose, by someone who can write to envforge's
cache; the archives themselves are hashed against the lock again whenever their stat
differs from their last hash's (``host/fetch.py``), which setting mtime back does too.

Installs hard-link an entry's files into the environment (``host/filelink.py``, uv's
default on Linux): one system call a file; a deb's once the data.tar's headers have passed
the checks the archive's would (``host/debunpack.py``). They stay read-only there, so an
edit made in the environment needs a chmod or root; one that happens anyway reaches the
entry, is seen by the stat check on the entry's next use, and the entry is made again (the
environments linked to it keep the edit, as uv's do). Where a link cannot be made (another
file system, too many links, Windows, whose read-only files cannot be removed) the file is
copied (``clone_file``: a reflink where the file system shares blocks, else
``copy_file_range``).
"""

from __future__ import annotations

import base64
import contextlib
import errno
import hashlib
import json
import os
import re
import shutil
import stat
import tempfile
import time
import zipfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, NamedTuple

from envforge.errors import ArtifactError
from envforge.host.archives import (
    check_unpacked_size,
    safe_member_name,
    verify_artifact,
)
from envforge.host.debunpack import CachedDeb, decompress_data_tar, regular_files
from envforge.host.wheelplan import WheelPlan, plan_wheel
from envforge.host.zipread import mapped_zip

_VERSION = 1
_SHA256 = re.compile(r"[0-9a-f]{64}")
_MANIFEST = "manifest.json"
_DATA_TAR = "data.tar"
_FILES = "files"
_TREE = "tree"  # a deb entry's regular files, under files/ beside its data.tar
_READ_ONLY = stat.S_IFREG | 0o444
_EXECUTABLE = stat.S_IFREG | 0o555
_CHUNK = 1 << 20
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
_BY_DESCRIPTOR = os.chmod in os.supports_fd and os.utime in os.supports_fd


class CachedFile(NamedTuple):
    """One member as it is unpacked: its archive path, the RECORD-style hash, its stat."""

    path: str
    size: int
    sha256: str  # urlsafe base64, no padding, as RECORD spells it ("" for a deb's)
    executable: bool
    inode: int


@dataclass(frozen=True)
class UnpackedWheel:
    """An entry checked against its manifest: ``root / paths[i]`` holds member i's bytes;
    a wheel's also says how it installs (``host/wheelplan.py``). Columns, as the manifest
    keeps them, not an object a member: an entry is read on every use, and ml75's 12,300
    rows were most of the check's Python (json's lists, their garbage collection)."""

    root: Path
    paths: tuple[str, ...]
    sizes: tuple[int, ...]
    sha256: tuple[str, ...]  # urlsafe base64, no padding, as RECORD spells it
    executable: frozenset[int]  # the members' indexes
    plan: WheelPlan | None = None


def entry_path(cache: Path, sha256: str, kind: str = "wheels") -> Path:
    """Where the entry for an archive of this sha256 lives; the hash names a folder, so it
    must be 64 hex digits (a lock's ``../`` never reaches the file system)."""
    if not _SHA256.fullmatch(sha256):
        raise ArtifactError(f"sha256 {sha256!r} is not 64 lowercase hex digits")
    return cache / f"{kind}-v{_VERSION}" / sha256[:2] / sha256


def unpacked_wheel(cache: Path, wheel: Path, sha256: str, *,
                   checked: bool = False) -> UnpackedWheel:
    """The checked entry for the wheel whose sha256 must be ``sha256``, made if missing or
    altered (then the wheel is hashed first, unless ``checked``: the caller's ``obtain``
    hashed it just now; and its member names checked)."""
    def make(root: Path, mtime_ns: int) -> tuple[list[CachedFile], WheelPlan]:
        if not checked:
            verify_artifact(wheel, sha256)
        files = _extract(wheel, root, mtime_ns)
        return files, plan_wheel(wheel.name, [(f.path, f.sha256, f.size) for f in files],
                                 lambda path: (root / path).read_text(encoding="utf-8"))
    return _entry(entry_path(cache, sha256), make, wheel=True)


def unpacked_deb(cache: Path, deb: Path, sha256: str, *,
                 checked: bool = False) -> CachedDeb:
    """The .deb's data.tar decompressed (lzma is most of an unpack's time) and its regular
    files unpacked, checked and made as a wheel's entry is. The kind is "debtrees": the
    "debs" entries of older envforges held the data.tar alone, and one sharing this cache
    would take these for altered ones (and this one theirs), each making them again."""
    def make(root: Path, mtime_ns: int) -> tuple[list[CachedFile], None]:
        if not checked:
            verify_artifact(deb, sha256)
        return _decompress(deb, root, mtime_ns), None
    entry = _entry(entry_path(cache, sha256, "debtrees"), make, wheel=False)
    return CachedDeb(entry.root / _DATA_TAR, entry.root / _TREE)


_Make = Callable[[Path, int], tuple[list[CachedFile], WheelPlan | None]]


def _entry(entry: Path, make: _Make, *, wheel: bool) -> UnpackedWheel:
    found = _checked(entry, wheel=wheel)
    if found is not None:
        return found
    if entry.exists():
        _discard(entry)
    return _make(entry, make, wheel=wheel)


def _checked(entry: Path, *, wheel: bool) -> UnpackedWheel | None:
    """The entry if every file stats as its manifest says; None when missing or altered (or
    its manifest is of an older form: a wheel's without a plan, one a row a member)."""
    try:
        manifest = json.loads((entry / _MANIFEST).read_bytes())
        found = _unpacked(entry / _FILES, manifest, wheel=wheel)
        inodes, mtime_ns = manifest["inodes"], manifest["mtime_ns"]
        if len(inodes) != len(found.paths):
            return None
    except (OSError, ValueError, KeyError, TypeError):
        return None
    prefix = f"{found.root}/"  # a str: pathlib's parsing would cost more than the stat
    lstat = os.lstat
    for path, size, inode in zip(found.paths, found.sizes, inodes, strict=True):
        try:
            st = lstat(prefix + path)
        except OSError:
            return None
        if st.st_mode | 0o111 != _EXECUTABLE or st.st_size != size \
                or st.st_mtime_ns != mtime_ns or st.st_ino != inode:
            return None
    return found


def _unpacked(root: Path, manifest: dict[str, Any], *, wheel: bool) -> UnpackedWheel:
    """The entry a manifest describes; ValueError, KeyError or TypeError where it is not an
    entry's manifest (the check then makes the entry again)."""
    paths, sizes, sha256 = (tuple(manifest[k]) for k in ("paths", "sizes", "sha256"))
    executable = frozenset(manifest["executable"])
    if not len(paths) == len(sizes) == len(sha256):
        raise ValueError("columns of different lengths")
    plan = WheelPlan.from_json(manifest["wheel"], len(paths)) if wheel else None
    return UnpackedWheel(root, paths, sizes, sha256, executable, plan)


def _make(entry: Path, make: _Make, *, wheel: bool) -> UnpackedWheel:
    entry.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=".tmp-", dir=entry.parent))
    try:
        mtime_ns = _entry_time()
        files, plan = make(scratch / _FILES, mtime_ns)
        manifest: dict[str, Any] = {
            "paths": [f.path for f in files], "sizes": [f.size for f in files],
            "sha256": [f.sha256 for f in files],
            "executable": [i for i, f in enumerate(files) if f.executable],
            "inodes": [f.inode for f in files], "mtime_ns": mtime_ns}
        if plan is not None:
            manifest["wheel"] = plan.to_json()
        (scratch / _MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
        try:
            scratch.rename(entry)
        except OSError as exc:  # another apply made it first: keep theirs if it is whole
            if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                raise
            theirs = _checked(entry, wheel=wheel)
            if theirs is None:
                raise ArtifactError(f"{entry}: a cache entry appeared mid-way and does not "
                                    "match its manifest; remove it and apply again") from None
            return theirs
    finally:
        if scratch.exists():
            shutil.rmtree(scratch, ignore_errors=True)
    return _unpacked(entry / _FILES, manifest, wheel=wheel)


def _extract(wheel: Path, root: Path, mtime_ns: int) -> list[CachedFile]:
    files = []
    packed = wheel.stat().st_size
    total = 0
    made: set[str] = set()  # folders made: one mkdir each, not one a member
    try:
        with mapped_zip(wheel) as archive:
            for info in archive.infos:
                if info.is_dir():
                    continue
                name = safe_member_name(wheel, info.filename)
                total += info.file_size
                check_unpacked_size(wheel, packed, total)
                folder = name.rpartition("/")[0]
                if folder not in made:
                    os.makedirs(f"{root}/{folder}", exist_ok=True)  # noqa: PTH103 (a hot loop)
                    made.add(folder)
                mode = info.external_attr >> 16
                executable = bool(mode and stat.S_ISREG(mode) and mode & 0o111)
                files.append(_write(f"{root}/{name}", name, archive.read(info),
                                    executable=executable, mtime_ns=mtime_ns))
    except (zipfile.BadZipFile, OSError) as exc:
        raise ArtifactError(f"{wheel}: not a readable wheel ({exc})") from None
    return files


def _write(target: str, name: str, pieces: Iterable[bytes | memoryview], *, executable: bool,
           mtime_ns: int, hashed: bool = True) -> CachedFile:
    """A new file of ``pieces``, read-only, of the entry's mtime, and its manifest row; by
    its descriptor where the host allows (no path walk a call: Linux), else by its path.
    Not ``hashed``: the row's sha256 is empty (a deb's member: nothing reads it)."""
    digest = hashlib.sha256() if hashed else None
    mode = stat.S_IMODE(_EXECUTABLE if executable else _READ_ONLY)
    fd = os.open(target, _CREATE, 0o644)
    try:
        for piece in pieces:
            if digest is not None:
                digest.update(piece)
            done = os.write(fd, piece)
            while done < len(piece):
                done += os.write(fd, piece[done:])
        if _BY_DESCRIPTOR:
            os.utime(fd, ns=(mtime_ns, mtime_ns))
            os.chmod(fd, mode)  # noqa: PTH101 (a descriptor)
        st = os.fstat(fd)
    finally:
        os.close(fd)
    if not _BY_DESCRIPTOR:
        os.utime(target, ns=(mtime_ns, mtime_ns))
        os.chmod(target, mode)  # noqa: PTH101 (a str from a hot loop)
    return CachedFile(name, st.st_size, "" if digest is None else _record_hash(digest.digest()),
                      executable, st.st_ino)


def _decompress(deb: Path, root: Path, mtime_ns: int) -> list[CachedFile]:
    """The data.tar, then each regular file the scan let through at ``tree/NAME``: the
    name is the checked one (``host/archives.py``), never the tar's own spelling. Their
    rows' sha256 are empty: a wheel's member hashes are its RECORD, a deb has no such list,
    and nothing reads them (the archive was checked against the lock; an entry in use is
    checked by stat), so hashing them was 88 MB of sha256 for OpenBLAS alone, its data.tar
    read back whole for it."""
    root.mkdir()
    target = root / _DATA_TAR
    with open(target, "x+b") as out:
        decompress_data_tar(deb, out)
        files = [_finish(target, _DATA_TAR, executable=False, mtime_ns=mtime_ns)]
        for name, mode, source in regular_files(deb, out):
            member = root / _TREE / name
            try:
                member.parent.mkdir(parents=True, exist_ok=True)
                files.append(_write(str(member), f"{_TREE}/{name}",
                                    iter(partial(source.read, _CHUNK), b""),
                                    executable=bool(mode & 0o111), mtime_ns=mtime_ns,
                                    hashed=False))
            except (FileExistsError, NotADirectoryError, IsADirectoryError):
                raise ArtifactError(f"{deb}: {name} is inside another file of the package, "
                                    "or holds one") from None
    return files


def _finish(target: Path, name: str, *, executable: bool, mtime_ns: int) -> CachedFile:
    """Give a written file the entry's mtime, make it read-only, and its (unhashed) row."""
    os.utime(target, ns=(mtime_ns, mtime_ns))
    target.chmod(stat.S_IMODE(_EXECUTABLE if executable else _READ_ONLY))
    st = os.lstat(target)
    return CachedFile(name, st.st_size, "", executable, st.st_ino)


def _record_hash(digest: bytes) -> str:
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def _entry_time() -> int:
    """Every file of an entry gets one mtime, a whole second before the entry is begun: a
    later write sets the clock's time, so it is seen even within the clock tick the entry
    was made in; an entry's own time (not a fixed one) keeps Python's (mtime, size) check
    of a ``.pyc`` apart across versions of a module. The manifest keeps it once."""
    return (time.time_ns() // 10**9 - 1) * 10**9


def _discard(entry: Path) -> None:
    """Move an altered entry aside, then remove it: readers see it whole or absent."""
    aside = Path(tempfile.mkdtemp(prefix=".bad-", dir=entry.parent))
    with contextlib.suppress(FileNotFoundError):  # another apply removed it first
        entry.rename(aside / "entry")
    shutil.rmtree(aside, ignore_errors=True)
