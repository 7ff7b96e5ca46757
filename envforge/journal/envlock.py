"""The environment's apply lock: one apply or rollback at a time, the holder's pid named."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from envforge.errors import BusyError
from envforge.journal.store import LOCK_FILE, LOCK_PID_FILE


@contextlib.contextmanager
def env_lock(state_dir: Path, *, timeout: float = 5.0) -> Iterator[None]:
    """Hold the environment's apply lock; another holder makes this a BusyError after ``timeout``.

    The holder's pid sits in a sidecar file so the message can name it.
    """
    from filelock import FileLock, Timeout  # only apply and rollback take the lock

    state_dir = Path(state_dir)
    state_dir.mkdir(parents=True, exist_ok=True)
    lock = FileLock(state_dir / LOCK_FILE)
    sidecar = state_dir / LOCK_PID_FILE
    try:
        lock.acquire(timeout=timeout)
    except Timeout:
        try:
            pid = sidecar.read_text(encoding="utf-8").strip() or "unknown"
        except OSError:
            pid = "unknown"
        raise BusyError(f"another envforge is applying {state_dir.name} (pid {pid}); "
                        "try again when it finishes") from None
    try:
        sidecar.write_text(f"{os.getpid()}\n", encoding="utf-8")
        yield
    finally:
        with contextlib.suppress(OSError):
            sidecar.unlink()
        lock.release()
