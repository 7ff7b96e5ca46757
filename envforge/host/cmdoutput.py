"""How host observation runs a command: its result as data, and the seam tests replace.

Observers take a ``Runner`` instead of calling subprocess, so doctor, the steps and verify
read the same toolkit and driver facts, and a test can observe a host built from folders.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from envforge.errors import EnvforgeError
from envforge.host import proc
from envforge.model import Frozen


class CommandOutput(Frozen):
    """A command that ran, how it ended and what it printed (stdout then stderr)."""

    argv: tuple[str, ...]
    returncode: int
    output: str


Runner = Callable[[Sequence[str]], CommandOutput | None]


def run_command(argv: Sequence[str]) -> CommandOutput | None:
    """Run a probe command; None when it cannot be started at all. The output is clipped to
    its last 8000 characters: it is evidence in a report, not data to parse whole."""
    try:
        done = proc.run(list(argv), check=False, timeout=60)
    except (EnvforgeError, OSError):
        return None
    text = (done.stdout + done.stderr).strip()
    return CommandOutput(argv=tuple(argv), returncode=done.returncode, output=text[-8000:])
