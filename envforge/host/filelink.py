"""Put a cached file's bytes at a path in an environment: a hard link where one can be made,
else a copy that shares blocks where the file system can (a reflink), else one made inside the
kernel. Used by the unpacked cache's installs (``host/wheelinstall.py``, ``host/debunpack.py``);
a file already at the path is unlinked first, never written through.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import shutil
from pathlib import Path

from envforge.platforms import Os, host_platform

_FICLONE = 0x40049409  # linux/fs.h: _IOW(0x94, 9, int)
_CHUNK = 1 << 20
# A link is not made for these: the file is copied instead.
_NO_LINK = frozenset({errno.EXDEV, errno.EMLINK, errno.EPERM, errno.EACCES, errno.ENOTSUP,
                      errno.EOPNOTSUPP, errno.ENOSYS})


def link_file(source: str, target: str, *, executable: bool) -> bool:
    """Hard-link an entry's file at ``target`` (a file there is replaced: unlinked, never
    written through); a copy (``clone_file``) where the link cannot be made. Whether it was
    linked: a copy is the caller's own file, a link is the entry's. The link is tried first:
    into a new environment nothing is there, and the unlink it would not need was a failed
    system call and a raised exception a file."""
    if _links():
        try:
            try:
                os.link(source, target)
            except FileExistsError:
                os.unlink(target)  # noqa: PTH108 (a str from a hot loop)
                os.link(source, target)
        except OSError as exc:
            if exc.errno not in _NO_LINK:
                raise
        else:
            return True
    clone_file(source, target, executable=executable)
    return False


@functools.cache
def _links() -> bool:
    """Windows refuses to remove a read-only file: a linked one would block uninstalls."""
    return host_platform().os is not Os.WINDOWS


def clone_file(source: str | Path, target: str | Path, *, executable: bool) -> None:
    """Write ``source``'s bytes into a new file at ``target`` (any file there is unlinked
    first, so nothing is written through a link), mode 0666 or 0777 less the umask."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(target)  # noqa: PTH108 (a str from a hot loop)
    mode = 0o777 if executable else 0o666
    with open(source, "rb") as src, \
            open(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode), "wb") as dst:
        if not (_reflink(src.fileno(), dst.fileno())
                or _copy_range(src.fileno(), dst.fileno(), os.fstat(src.fileno()).st_size)):
            shutil.copyfileobj(src, dst, _CHUNK)


def _reflink(src: int, dst: int) -> bool:
    """Share the blocks (btrfs, XFS); False where the file system cannot (ext4, tmpfs)."""
    if host_platform().os is Os.WINDOWS:
        return False
    import fcntl  # POSIX only

    try:
        fcntl.ioctl(dst, _FICLONE, src)
    except OSError:
        return False
    return True


def _copy_range(src: int, dst: int, size: int) -> bool:
    """Copy inside the kernel; False (nothing written) where it cannot, across devices say."""
    if not hasattr(os, "copy_file_range"):
        return False
    left = size
    try:
        while left > 0:
            done = os.copy_file_range(src, dst, left)
            if done == 0:
                break
            left -= done
    except OSError as exc:
        if left != size or exc.errno not in (errno.EXDEV, errno.ENOSYS, errno.EOPNOTSUPP,
                                             errno.EINVAL):
            raise
        return False
    return True
