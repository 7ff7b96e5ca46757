"""The environment's apply lock: one apply or rollback at a time, the holder's pid named."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from envforge.errors import BusyError
from envforge.journal.store import LOCK_FILE, LOCK_PID_FILE


@contextlib.contextmanager
def env_lock(state_dir: Path, *, timeout: float = 5.0) -> Iterator[str | None]:
    """Hold the environment's apply lock; another holder makes this a BusyError after ``timeout``.

    The holder's pid sits in a sidecar file so the message can name it. Yields the pid of
    the holder this one waited for (None: the lock was free), so a caller whose plan that
    holder made stale can name it rather than blame the plan.
    """
    from filelock import FileLock, Timeout  # only apply and rollback take the lock

    state_dir = Path(state_dir)
    state_dir.mkdir(parents=True, exist_ok=True)
    lock = FileLock(state_dir / LOCK_FILE)
    sidecar = state_dir / LOCK_PID_FILE
    waited = None
    try:
        lock.acquire(timeout=0)
    except Timeout:
        waited = _holder_pid(sidecar)
        try:
            lock.acquire(timeout=timeout)
        except Timeout:
            raise BusyError(f"another envforge is applying {state_dir.name} (pid "
                            f"{_holder_pid(sidecar)}); try again when it finishes") from None
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
    from filelock import FileLock, Timeout

    if not (Path(state_dir) / LOCK_FILE).exists():
        return
    lock = FileLock(Path(state_dir) / LOCK_FILE)
    try:
        lock.acquire(timeout=0)
    except Timeout:
        raise BusyError(f"another envforge is applying {Path(state_dir).name} (pid "
                        f"{_holder_pid(Path(state_dir) / LOCK_PID_FILE)}); try again when it "
                        "finishes") from None
    lock.release()


def _holder_pid(sidecar: Path) -> str:
    try:
        return sidecar.read_text(encoding="utf-8").strip() or "unknown"
    except OSError:
        return "unknown"
