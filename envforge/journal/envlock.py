"""The environment's apply lock: one apply or rollback at a time, the holder's pid named.

On POSIX the lock is ``flock`` on the lock file, taken here directly: the lock filelock
takes there (so an envforge that uses filelock and this one still exclude each other),
without importing filelock, whose import (asyncio) cost every apply 70 ms of CPU. Windows
keeps filelock's byte-range lock.
"""

from __future__ import annotations

import contextlib
import errno
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Protocol, assert_never

from envforge.errors import BusyError
from envforge.journal.store import LOCK_FILE, LOCK_PID_FILE
from envforge.platforms import Os, host_platform

_POLL_S = 0.05
_HELD = frozenset({errno.EAGAIN, errno.EWOULDBLOCK, errno.EACCES})


class _Lock(Protocol):
    def acquire(self, timeout: float) -> bool: ...

    def release(self) -> None: ...


class _Flock:
    """An exclusive ``flock`` on ``path``, polled until ``timeout``; the kernel drops it
    when its holder dies."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd: int | None = None

    def acquire(self, timeout: float) -> bool:
        import fcntl  # POSIX only

        deadline = time.monotonic() + timeout
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                if exc.errno not in _HELD or time.monotonic() >= deadline:
                    os.close(fd)
                    if exc.errno in _HELD:
                        return False
                    raise
                time.sleep(_POLL_S)
            else:
                self.fd = fd
                return True

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)  # closing the only descriptor releases the flock
            self.fd = None


class _Filelock:
    """filelock's lock (Windows: a byte-range lock through ``LockFileEx``)."""

    def __init__(self, path: Path) -> None:
        from filelock import FileLock

        self.lock = FileLock(path)

    def acquire(self, timeout: float) -> bool:
        from filelock import Timeout

        try:
            self.lock.acquire(timeout=timeout)
        except Timeout:
            return False
        return True

    def release(self) -> None:
        self.lock.release()


def _file_lock(path: Path) -> _Lock:
    match host_platform().os:
        case Os.LINUX:
            return _Flock(path)
        case Os.WINDOWS:
            return _Filelock(path)
        case _:
            assert_never(host_platform().os)


@contextlib.contextmanager
def env_lock(state_dir: Path, *, timeout: float = 5.0) -> Iterator[str | None]:
    """Hold the environment's apply lock; another holder makes this a BusyError after ``timeout``.

    The holder's pid sits in a sidecar file so the message can name it. Yields the pid of
    the holder this one waited for (None: the lock was free), so a caller whose plan that
    holder made stale can name it rather than blame the plan.
    """
    state_dir = Path(state_dir)
    state_dir.mkdir(parents=True, exist_ok=True)
    lock = _file_lock(state_dir / LOCK_FILE)
    sidecar = state_dir / LOCK_PID_FILE
    waited = None
    if not lock.acquire(timeout=0):
        waited = _holder_pid(sidecar)
        if not lock.acquire(timeout=timeout):
            raise BusyError(f"another envforge is applying {state_dir.name} (pid "
                            f"{_holder_pid(sidecar)}); try again when it finishes")
    try:
        sidecar.write_text(f"{os.getpid()}\n", encoding="utf-8")
        yield waited
    finally:
        with contextlib.suppress(OSError):
            sidecar.unlink()
        lock.release()


def refuse_if_held(state_dir: Path) -> None:
    """BusyError naming the pid of an envforge that holds the environment's lock now: a
    plan made while another apply changes the prefix would be stale before it is shown."""
    if not (Path(state_dir) / LOCK_FILE).exists():
        return
    lock = _file_lock(Path(state_dir) / LOCK_FILE)
    if not lock.acquire(timeout=0):
        raise BusyError(f"another envforge is applying {Path(state_dir).name} (pid "
                        f"{_holder_pid(Path(state_dir) / LOCK_PID_FILE)}); try again when it "
                        "finishes")
    lock.release()


def _holder_pid(sidecar: Path) -> str:
    try:
        return sidecar.read_text(encoding="utf-8").strip() or "unknown"
    except OSError:
        return "unknown"
