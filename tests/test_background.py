"""in_background: results and errors come back through the future, and the work is joined at
exit, never frozen mid-call as a daemon thread would be."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from envforge.background import in_background


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
