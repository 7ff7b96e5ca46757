"""in_background: results and errors come back through the future, and the work is joined at
exit, never frozen mid-call as a daemon thread would be; yielding: work beside the critical
path, and what it starts, at a lower CPU priority than its caller."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from envforge.background import YIELDING_NICE, in_background, yielding
from envforge.platforms import threads_have_own_priority


def test_the_result_and_the_error_come_back_through_the_future() -> None:
    assert in_background("t", pow, 2, 10).result(timeout=10) == 1024
    with pytest.raises(ZeroDivisionError):
        in_background("t", lambda: 1 // 0).result(timeout=10)


def test_a_caller_that_fails_early_exits_only_after_the_work_finished(tmp_path: Path) -> None:
    done = tmp_path / "done"
    script = textwrap.dedent(f"""
        import time
        from pathlib import Path
        from envforge.background import in_background

        def work():
            time.sleep(0.5)
            Path({str(done)!r}).write_text("finished")

        in_background("t", work)
        raise SystemExit(1)
    """)
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=60, check=False)
    assert run.returncode == 1, run.stderr
    assert done.read_text() == "finished"


@pytest.mark.skipif(not threads_have_own_priority(), reason="a thread has no nice value of "
                    "its own here: yielding runs the work as it is")
def test_yielding_work_and_the_processes_it_starts_run_nicer_than_the_caller() -> None:
    def niceness() -> tuple[int, int]:
        child = subprocess.run(["nice"], capture_output=True, text=True, check=True)
        return os.getpriority(os.PRIO_PROCESS, threading.get_native_id()), int(child.stdout)

    caller = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    expected = min(19, caller + YIELDING_NICE)
    assert in_background("t", yielding(niceness)).result(timeout=30) == (expected, expected)
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == caller


@pytest.mark.skipif(not threads_have_own_priority(), reason="a thread has no nice value of "
                    "its own here: yielding runs the work as it is")
def test_work_already_nicer_than_the_yield_is_never_raised() -> None:
    """A lock run under ``nice -n 15``: its yielding work goes to 19, not back to 10."""
    script = ("import os, threading; from envforge.background import in_background, yielding; "
              "print(in_background('t', yielding(lambda: os.getpriority(os.PRIO_PROCESS, "
              "threading.get_native_id()))).result())")
    done = subprocess.run(["nice", "-n", "15", sys.executable, "-c", script],
                          capture_output=True, text=True, timeout=60, check=True)
    assert int(done.stdout) == 19
