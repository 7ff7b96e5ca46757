"""proc.run: a failure keeps its command, status and output as fields; odd bytes do not crash.
proc.run_child: a signal reaches the child however early it comes."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from envforge.errors import ToolError
from envforge.host import proc


def test_a_failure_carries_its_command_status_and_output() -> None:
    script = "import sys; print('out'); sys.stderr.write('bad thing\\n'); sys.exit(3)"
    with pytest.raises(ToolError) as caught:
        proc.run([sys.executable, "-c", script])
    exc = caught.value
    assert exc.command == (sys.executable, "-c", script)
    assert (exc.returncode, exc.stdout.strip(), exc.stderr.strip()) == (3, "out", "bad thing")
    assert "exited 3" in str(exc) and "bad thing" in str(exc)


def test_undecodable_output_is_replaced_not_raised() -> None:
    done = proc.run([sys.executable, "-c", "import sys; sys.stdout.buffer.write(b'a\\xff\\xfeb')"])
    assert done.stdout == "a\ufffd\ufffdb"


def test_a_missing_command_has_no_status() -> None:
    with pytest.raises(ToolError, match="command not found") as caught:
        proc.run(["envforge-no-such-tool"])
    assert caught.value.returncode is None


@pytest.mark.posix_only("execute permission is a POSIX mode bit")
def test_a_file_that_cannot_be_run_is_a_tool_error(tmp_path: Path) -> None:
    script = tmp_path / "tool"
    script.write_text("#!/bin/sh\necho hi\n", encoding="utf-8")
    script.chmod(0o644)
    with pytest.raises(ToolError, match=f"cannot run {script}"):
        proc.run([script])


def test_a_long_log_keeps_the_tools_headline_ahead_of_its_tail() -> None:
    """uv's build failure names the package first, then the build's log: the 12-line tail
    alone would drop which package failed."""
    from envforge.host.proc import Completed, describe_failure

    log = ["  \u00d7 Failed to build `toolz==0.8.0`", "  \u251c\u2500\u25b6 The build backend "
           "returned an error", *(f"      line {n}" for n in range(30))]
    message = describe_failure(Completed(("uv", "pip", "compile"), 1, "", "\n".join(log)))
    assert "Failed to build `toolz==0.8.0`" in message
    assert message.splitlines()[-1].strip() == "line 29"
    short = describe_failure(Completed(("uv",), 1, "", "error: no\nmore"))
    assert short == "uv exited 1:\n    error: no\n    more"


@pytest.mark.posix_only("SIGTERM is forwarded on POSIX only")
def test_a_sigterm_before_the_child_exists_reaches_it_once_it_does() -> None:
    """The forwarding is in place before the child starts: a signal in that gap used to end
    envforge by default and leave the child running with envforge's output (seen in CI)."""
    script = textwrap.dedent("""
        import os, signal, subprocess
        from envforge.host import proc

        start = subprocess.Popen

        def popen(*args, **kwargs):
            os.kill(os.getpid(), signal.SIGTERM)  # lands before the child exists
            return start(*args, **kwargs)

        subprocess.Popen = popen
        print(proc.run_child(["sleep", "30"], dict(os.environ)))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60, check=False)
    assert (done.returncode, done.stdout.strip()) == (0, "143"), done.stderr
