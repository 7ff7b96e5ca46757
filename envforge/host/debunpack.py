"""Unpack a .deb into a folder without root or dpkg, refusing anything that could escape it.

A .deb is an ``ar`` archive whose ``data.tar.*`` member holds the files. Every member is
checked before the first byte is written, and the paths are resolved as if the target
folder were ``/``: absolute symlink targets (Debian ships ``/etc/alternatives/...`` ones)
are rewritten to relative ones that stay inside it. Maintainer scripts are not run.

From envforge's cache (``host/unpacked.py``) the checks read the cached data.tar's headers as
they would the archive's, and each regular file is hard-linked from the entry's unpacked copy,
found by the member's checked name.
"""

from __future__ import annotations

import errno
import gzip
import io
import lzma
import os
import shutil
import stat
import tarfile
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Protocol

from envforge.errors import ArtifactError
from envforge.host.archives import Rules, check_unpacked_size, scan_members
from envforge.host.filelink import link_file
from envforge.host.unarchive import tar_members

_AR_MAGIC = b"!<arch>\n"
_AR_HEADER = 60
_MAX_HOPS = 40  # symlinks followed while resolving one path, as the kernel's limit


@dataclass(frozen=True)
class UnpackResult:
    """What an unpack wrote, in creation order (undo in reverse), and links left dangling."""

    written: tuple[Path, ...]
    dangling: tuple[tuple[Path, str], ...]  # (link, its target as written) not found in root


@dataclass(frozen=True)
class CachedDeb:
    """A .deb's entry in the unpacked cache, checked: its data.tar decompressed, and each of
    its regular files at ``files / NAME`` (NAME as ``scan_members`` gives it), read-only."""

    data_tar: Path
    files: Path


# --- reading the archive ---------------------------------------------------------------

def ar_members(handle: IO[bytes], *, source: str = "archive") -> Iterator[tuple[str, int, int]]:
    """(name, offset, size) of each member of a System V / GNU ``ar`` archive."""
    total = os.fstat(handle.fileno()).st_size
    if handle.read(len(_AR_MAGIC)) != _AR_MAGIC:
        raise ArtifactError(f"{source}: not a .deb (no ar archive header)")
    while True:
        header = handle.read(_AR_HEADER)
        if not header:
            return
        if len(header) != _AR_HEADER or header[58:60] != b"`\n":
            raise ArtifactError(f"{source}: corrupt ar member header")
        name = header[0:16].decode("ascii", "replace").rstrip(" ").removesuffix("/")
        field = header[48:58].decode("ascii", "replace").strip()
        if not field.isdigit():  # "-61" looped forever: a size is decimal digits only
            raise ArtifactError(f"{source}: corrupt ar member size {field!r} for {name!r}")
        size = int(field)
        offset = handle.tell()
        if offset + size > total:
            raise ArtifactError(f"{source}: truncated ({name} is cut short)")
        yield name, offset, size
        handle.seek(offset + size + (size & 1))  # members are padded to even offsets


class _Slice(io.RawIOBase):
    """A read-only window on part of a file, so a member decompresses as a stream."""

    def __init__(self, handle: IO[bytes], offset: int, size: int) -> None:
        super().__init__()
        handle.seek(offset)
        self._handle = handle
        self._left = size

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        data = self._handle.read(min(len(view), self._left))
        view[: len(data)] = data
        self._left -= len(data)
        return len(data)


class _Readable(Protocol):
    def read(self, size: int = -1, /) -> bytes: ...


def _decompressor(name: str, raw: io.BufferedReader, deb: Path) -> _Readable:
    if name == "data.tar.xz":
        return lzma.open(raw)
    if name == "data.tar.gz":
        return gzip.GzipFile(fileobj=raw, mode="rb")
    if name == "data.tar":
        return raw
    if name == "data.tar.zst":
        try:
            import zstandard  # type: ignore[import-not-found, unused-ignore]
        except ImportError:
            raise ArtifactError(
                f"{deb}: data.tar.zst needs the 'zstandard' Python module "
                "(pip install zstandard); Debian bookworm packages use xz") from None
        reader: _Readable = zstandard.ZstdDecompressor().stream_reader(raw)
        return reader
    raise ArtifactError(f"{deb}: unsupported member {name}")


def decompress_data_tar(deb: Path, scratch: IO[bytes]) -> None:
    """Decompress the .deb's data.tar member into ``scratch``."""
    with open(deb, "rb") as handle:
        members = list(ar_members(handle, source=str(deb)))
        if not members or members[0][0] != "debian-binary":
            raise ArtifactError(f"{deb}: not a .deb (first member is not debian-binary)")
        handle.seek(members[0][1])
        if not handle.read(members[0][2]).startswith(b"2."):
            raise ArtifactError(f"{deb}: unsupported .deb format version")
        data = [m for m in members if m[0].startswith("data.tar")]
        if not data:
            raise ArtifactError(f"{deb}: no data.tar member")
        name, offset, size = data[0]
        stream = _decompressor(name, io.BufferedReader(_Slice(handle, offset, size)), deb)
        packed = os.fstat(handle.fileno()).st_size
        written = 0
        try:
            while chunk := stream.read(1 << 20):
                written += len(chunk)
                check_unpacked_size(f"{deb} ({name})", packed, written)
                scratch.write(chunk)
        except (lzma.LZMAError, OSError, EOFError) as exc:
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            raise ArtifactError(f"{deb}: cannot decompress {name}: {why}") from None
    scratch.seek(0)


def regular_files(deb: Path, handle: IO[bytes]) -> Iterator[tuple[str, int, IO[bytes]]]:
    """The decompressed data.tar's regular files, each as (its name as the scan checked it,
    its mode, its bytes): the members an unpack's scan lets through, the name the unpack
    finds them by in the cache (``host/unpacked.py``)."""
    try:
        with tarfile.open(fileobj=handle, mode="r:") as tar:
            for scanned in scan_members(deb, tar_members(tar), packed=deb.stat().st_size,
                                        rules=_RULES):
                if scanned.member.kind != "file":
                    continue
                info = scanned.member.handle
                assert isinstance(info, tarfile.TarInfo)
                source = tar.extractfile(info)
                if source is None:
                    raise ArtifactError(f"{deb}: cannot read {info.name} from the package")
                with source:
                    yield scanned.name, info.mode, source
    except tarfile.TarError as exc:
        raise ArtifactError(f"{deb}: corrupt data.tar: {exc}") from None


# --- planning: every check happens before anything is written ----------------------------

@dataclass(frozen=True)
class _Entry:
    kind: str  # "dir", "file", "symlink", "hardlink"
    path: str  # physical path inside the root, no symlink components
    member: tarfile.TarInfo
    link: str = ""  # symlink text to write, or the hardlink's physical source
    name: str = ""  # a file's member name as scanned: where a cache entry keeps its bytes


_RULES = Rules(through_links=True, rooted=True, setuid=True)  # set-uid bits are dropped


class _Tree:
    """The root as it will be after the members so far: disk contents plus planned ones."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.planned: dict[str, tuple[str, str]] = {}  # path -> (kind, symlink text)

    def kind(self, path: str) -> tuple[str, str] | None:
        if path in self.planned:
            return self.planned[path]
        full = self.root / path
        if full.is_symlink():
            return "symlink", str(full.readlink())
        if full.is_dir():
            return "dir", ""
        if full.exists():
            return "file", ""
        return None

    def resolve(self, path: str, *, follow_last: bool = True) -> str | None:
        """The physical path inside the root, following symlinks; None if it escapes."""
        pending = [p for p in path.split("/") if p]
        pending.reverse()
        done: list[str] = []
        hops = 0
        while pending:
            part = pending.pop()
            if part in ("", "."):
                continue
            if part == "..":
                if not done:
                    return None
                done.pop()
                continue
            here = "/".join([*done, part])
            found = self.kind(here)
            if found is not None and found[0] == "symlink" and (pending or follow_last):
                hops += 1
                if hops > _MAX_HOPS:
                    return None
                if found[1].startswith("/"):
                    return None  # only on-disk links can be absolute: the OS would leave root
                pending.extend(reversed([p for p in found[1].split("/") if p]))
                continue
            done.append(part)
        return "/".join(done)


def _plan(tar: tarfile.TarFile, root: Path, deb: Path, replace: bool) -> list[_Entry]:
    """host/archives.py's scan of the package alone, then its place in the root as it is on
    disk: through folders (or links to them) earlier packages left, never out of it."""
    tree = _Tree(root)
    entries: list[_Entry] = []
    for scanned in scan_members(deb, tar_members(tar), packed=deb.stat().st_size, rules=_RULES):
        member, name = scanned.member, scanned.name
        assert isinstance(member.handle, tarfile.TarInfo)
        info = member.handle
        parent, _, base = name.rpartition("/")
        where = tree.resolve(parent) if parent else ""
        if where is None:
            raise ArtifactError(f"{deb}: {member.raw!r} would be written outside the target")
        if not _is_folder_path(tree, where):
            raise ArtifactError(f"{deb}: {member.raw!r} is inside something not a folder")
        path = f"{where}/{base}" if where else base
        existing = tree.kind(path)
        if member.kind == "dir":
            if existing is None:
                tree.planned[path] = ("dir", "")
                entries.append(_Entry("dir", path, info))
            elif existing[0] != "dir" and not _links_to_dir(tree, path):
                raise ArtifactError(f"{deb}: {name} is a folder in the package but not in {root}")
            continue  # an existing folder, or a link to one as dpkg keeps it, is left as is
        if existing is not None:
            if path in tree.planned:
                raise ArtifactError(f"{deb}: {name} appears twice in the package")
            if existing[0] == "dir" or not replace:
                raise ArtifactError(f"{deb}: {name} already exists in {root}")
        if member.kind == "file":
            tree.planned[path] = ("file", "")
            entries.append(_Entry("file", path, info, name=name))
        elif member.kind == "symlink":
            text = scanned.link or "."
            tree.planned[path] = ("symlink", text)
            if tree.resolve(path) is None:
                raise ArtifactError(f"{deb}: symlink {name} -> {member.link} points "
                                    "outside the target (or loops)")
            entries.append(_Entry("symlink", path, info, text))
        else:
            source = tree.resolve(scanned.link or "", follow_last=False)
            if source is None or tree.planned.get(source, ("",))[0] != "file":
                raise ArtifactError(
                    f"{deb}: hard link {name} -> {member.link} is not to a file of the package")
            tree.planned[path] = ("file", "")
            entries.append(_Entry("hardlink", path, info, source))
    for entry in entries:  # again on the whole tree: a later link can change an earlier one
        if entry.kind == "symlink" and tree.resolve(entry.path) is None:
            raise ArtifactError(f"{deb}: symlink {entry.path} -> {entry.member.linkname} "
                                "points outside the target once the package is unpacked")
    return entries


def _is_folder_path(tree: _Tree, path: str) -> bool:
    """Whether every component of a physical path is a folder or not there yet."""
    parts = path.split("/") if path else []
    for end in range(1, len(parts) + 1):
        found = tree.kind("/".join(parts[:end]))
        if found is None:
            return True
        if found != ("dir", ""):
            return False
    return True


def _links_to_dir(tree: _Tree, path: str) -> bool:
    target = tree.resolve(path)
    return target is not None and tree.kind(target) == ("dir", "")


# --- writing -------------------------------------------------------------------------------

def unpack_deb(deb: Path, root: Path, *, replace: bool = False,
               cached: CachedDeb | None = None) -> UnpackResult:
    """Extract the .deb's files under ``root`` and list what was written.

    Nothing is written if any member is unsafe. Setuid, setgid and sticky bits are dropped;
    folders stay writable by their owner so a rollback can remove their contents. An
    existing file is an error unless ``replace`` (then it is overwritten, and listed).
    If writing fails midway, what this call wrote is removed before the error is raised.
    ``cached`` is the package's checked entry in the unpacked cache (``host/unpacked.py``):
    its data.tar is read instead of the archive's, and regular files are linked from it.
    """
    root = root.resolve()
    if cached is not None:
        with open(cached.data_tar, "rb") as handle:
            return _unpack_tar(deb, handle, root, replace, cached.files)
    with tempfile.TemporaryFile() as scratch:
        decompress_data_tar(deb, scratch)
        return _unpack_tar(deb, scratch, root, replace, None)


def _unpack_tar(deb: Path, handle: IO[bytes], root: Path, replace: bool,
                files: Path | None) -> UnpackResult:
    try:
        with tarfile.open(fileobj=handle, mode="r:") as tar:
            entries = _plan(tar, root, deb, replace)
            written: list[Path] = []
            try:
                _make_dirs(root, written)
                for entry in entries:
                    _write(tar, handle, entry, root, written, files)
            except OSError as exc:  # ENOSPC, EROFS, EACCES...: one line, nothing left
                _undo(written)
                raise ArtifactError(f"{deb}: cannot unpack into {root}: "
                                    f"{exc.strerror or exc}; nothing was left there") from None
            except BaseException:
                _undo(written)
                raise
    except tarfile.TarError as exc:
        raise ArtifactError(f"{deb}: corrupt data.tar: {exc}") from None
    dangling = tuple((root / e.path, e.link) for e in entries
                     if e.kind == "symlink" and not (root / e.path).exists())
    return UnpackResult(tuple(written), dangling)


def _write(tar: tarfile.TarFile, handle: IO[bytes], entry: _Entry, root: Path,
           written: list[Path], files: Path | None) -> None:
    """Write one planned member. A regular file from a cache entry (``files``) is a hard
    link to the entry's file and is left as it is: it is the entry's inode, so a chmod or
    utime here would change the mode and mtime the entry's check reads (the entry would be
    made again on its next use) and the deb's mode could make it writable. It keeps the
    entry's read-only mode (execute bits as the deb's) and time; a copy, where no link can
    be made, is this tree's own file and gets the deb's mode and time."""
    target = root / entry.path
    _make_dirs(target.parent, written)
    mode = stat.S_IMODE(entry.member.mode) & 0o777
    if entry.kind == "dir":
        if not target.is_dir():  # else a parent created it a moment ago
            target.mkdir()
            written.append(target)
        target.chmod(mode | 0o700)
        return
    if target.is_symlink() or target.exists():  # only reached with replace=True
        target.unlink()
    if entry.kind == "symlink":
        target.symlink_to(entry.link)
        written.append(target)
    elif entry.kind == "hardlink":
        os.link(root / entry.link, target)
        written.append(target)
    elif files is not None:
        written.append(target)  # before the link, so a failed copy is undone too
        if not link_file(f"{files}/{entry.name}", str(target), executable=bool(mode & 0o111)):
            target.chmod(mode)
            os.utime(target, (entry.member.mtime, entry.member.mtime))
    else:
        source = tar.extractfile(entry.member)
        if source is None:
            raise ArtifactError(f"cannot read {entry.member.name} from the package")
        with source, open(target, "xb") as out:
            written.append(target)  # before the copy, so a failed copy is undone too
            if not _copy_in_kernel(handle, entry.member, out):
                shutil.copyfileobj(source, out)
        target.chmod(mode)
        os.utime(target, (entry.member.mtime, entry.member.mtime))


def _copy_in_kernel(handle: IO[bytes], member: tarfile.TarInfo, out: IO[bytes]) -> bool:
    """Copy a member's bytes straight from the uncompressed data.tar's file into ``out``
    (``copy_file_range`` from the member's offset: no pass through Python's buffers, most
    of a warm deb unpack); False, nothing written, where the kernel cannot (another file
    system on an old kernel, a sparse member, a tar that is not a file)."""
    if not hasattr(os, "copy_file_range") or member.issparse():
        return False
    try:
        source = handle.fileno()
    except (OSError, io.UnsupportedOperation):
        return False
    offset, left = member.offset_data, member.size
    try:
        while left > 0:
            done = os.copy_file_range(source, out.fileno(), left, offset)
            if done == 0:
                raise ArtifactError(f"{member.name}: the package's data ends "
                                    f"{left} bytes early")
            offset += done
            left -= done
    except OSError as exc:
        if left != member.size or exc.errno not in (errno.EXDEV, errno.ENOSYS,
                                                     errno.EOPNOTSUPP, errno.EINVAL):
            raise
        return False
    return True


def _make_dirs(folder: Path, written: list[Path]) -> None:
    """Create ``folder`` and its missing parents, recording each one created."""
    missing = []
    while not folder.is_dir():
        missing.append(folder)
        folder = folder.parent
    for path in reversed(missing):
        path.mkdir()
        written.append(path)


def _undo(written: list[Path]) -> None:
    for path in reversed(written):
        try:
            if path.is_dir() and not path.is_symlink():
                path.rmdir()
            else:
                path.unlink()
        except OSError:
            pass  # best effort: the original error is what the caller needs to see
