"""Running a command as envforge's child the way a shell would: signals reach it once, envforge
waits for it to finish, and its status is envforge's.

Ctrl-C in a terminal signals the whole foreground process group, the child included: then
envforge only waits (forwarding would interrupt the child twice, e.g. pytest in the middle of
its summary). A SIGINT sent to envforge alone (``kill -INT``, a CI runner) and any SIGTERM
are forwarded to the child. Either way envforge never kills the child itself.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from types import FrameType

from envforge.platforms import Os, host_platform

FORWARDED = (signal.SIGINT, signal.SIGTERM)


def terminal_sends_sigint(stdin_fd: int = 0) -> bool:
    """Whether a Ctrl-C reaches the child by itself: envforge is the terminal's foreground
    process group, which the child shares."""
    try:
        return os.isatty(stdin_fd) and os.tcgetpgrp(stdin_fd) == os.getpgrp()
    except OSError:
        return False


def exit_status(returncode: int) -> int:
    """A child killed by signal N exits 128 + N, as shells report it."""
    return 128 - returncode if returncode < 0 else returncode


def run_child(argv: Sequence[str], env: Mapping[str, str]) -> int:
    """Run ``argv`` to completion, passing SIGINT/SIGTERM on; returns its exit status."""
    child = subprocess.Popen(list(argv), env=dict(env))
    skip_sigint = terminal_sends_sigint()

    def forward(signum: int, _frame: FrameType | None) -> None:
        if signum == signal.SIGINT and skip_sigint:
            return
        if child.poll() is None:
            child.send_signal(signum)

    previous = {sig: signal.signal(sig, forward) for sig in FORWARDED
                if host_platform().os is not Os.WINDOWS or sig == signal.SIGINT}
    try:
        return exit_status(child.wait())
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
