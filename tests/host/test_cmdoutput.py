"""host/cmdoutput: a probe command's result as data, for doctor's and host/cuda's observers."""

from __future__ import annotations

import sys
from pathlib import Path

from envforge.host.cmdoutput import run_command


def test_a_command_s_status_and_output_stdout_then_stderr() -> None:
    out = run_command([sys.executable, "-c",
                       "import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)"])
    assert out is not None
    assert (out.returncode, out.output) == (3, "out\nerr")
    assert out.argv == (sys.executable, "-c", out.argv[2])


def test_long_output_keeps_its_tail_and_a_missing_command_is_none(tmp_path: Path) -> None:
    out = run_command([sys.executable, "-c", "print('x' * 9000 + 'END')"])
    assert out is not None and len(out.output) == 8000 and out.output.endswith("END")
    assert run_command([str(tmp_path / "no-such-tool")]) is None
