"""One apply or rollback at a time, the holder's pid named."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from envforge.errors import BusyError
from envforge.journal import LOCK_PID_FILE, env_lock

_HOLDER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from envforge.journal import env_lock
    with env_lock(Path(sys.argv[1])):
        print("locked", flush=True)
        time.sleep(60)
""")


def test_env_lock_refuses_a_second_process(tmp_path: Path) -> None:
    state = tmp_path / "myenv-0123456789"
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, str(state)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(BusyError) as caught, env_lock(state, timeout=0.3):
            pass
        assert str(caught.value) == (f"another envforge is applying myenv-0123456789 "
                                     f"(pid {holder.pid}); try again when it finishes")
    finally:
        holder.kill()
        holder.wait()
    with env_lock(state, timeout=5):  # the kernel dropped the dead holder's lock
        assert (state / LOCK_PID_FILE).read_text().strip() == str(os.getpid())
    assert not (state / LOCK_PID_FILE).exists()


_FILELOCK_HOLDER = textwrap.dedent("""
    import sys, time
    from filelock import FileLock
    with FileLock(sys.argv[1]):
        print("locked", flush=True)
        time.sleep(60)
""")


@pytest.mark.posix_only("POSIX takes flock itself; Windows keeps filelock's own lock")
def test_an_envforge_holding_the_lock_through_filelock_is_waited_for(tmp_path: Path) -> None:
    """An older envforge took this lock through filelock: both are one flock."""
    from envforge.journal.store import LOCK_FILE

    state = tmp_path / "myenv-0123456789"
    state.mkdir()
    holder = subprocess.Popen([sys.executable, "-c", _FILELOCK_HOLDER, str(state / LOCK_FILE)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(BusyError), env_lock(state, timeout=0.3):
            pass
    finally:
        holder.kill()
        holder.wait()
    with env_lock(state, timeout=5):
        pass
