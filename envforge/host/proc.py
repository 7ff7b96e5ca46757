"""Every subprocess goes through here, so a failure always shows command, status and output.

``run`` captures a tool's output; ``run_child`` runs the user's command (``envforge run``) the
way a shell would: signals reach it once, envforge waits for it to finish, and its status is
envforge's. Ctrl-C in a terminal signals the whole foreground process group, the child
included: then envforge only waits (forwarding would interrupt the child twice, e.g. pytest in
the middle of its summary). A SIGINT sent to envforge alone (``kill -INT``, a CI runner) and
any SIGTERM are forwarded to the child. Either way envforge never kills the child itself.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from envforge.errors import ToolError
from envforge.platforms import Os, host_platform


@dataclass(frozen=True)
class Completed:
    """What a finished command returned."""

    args: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str


def run(args: Sequence[str | os.PathLike[str]], *, cwd: Path | None = None,
        env: Mapping[str, str] | None = None, input_text: str | None = None,
        check: bool = True, timeout: float | None = None) -> Completed:
    """Run a command to completion; with check, a failure raises ToolError with its output.

    Output is read as UTF-8 with undecodable bytes replaced, whatever the host's code page:
    a tool's odd byte must not turn its failure into a UnicodeDecodeError."""
    argv = tuple(str(a) for a in args)
    try:
        proc = subprocess.run(
            argv, cwd=cwd, env=None if env is None else dict(env), input=input_text,
            capture_output=True, text=True, encoding="utf-8", errors="replace",
            timeout=timeout, check=False,
        )
    except FileNotFoundError as exc:
        raise ToolError(f"command not found: {argv[0]}", command=argv) from exc
    except subprocess.TimeoutExpired as exc:
        raise ToolError(f"command timed out after {timeout}s: {shlex.join(argv)}",
                        command=argv) from exc
    except OSError as exc:  # not executable, a bad interpreter line, too many open files
        raise ToolError(f"cannot run {argv[0]}: {exc.strerror or exc}", command=argv) from exc
    done = Completed(argv, proc.returncode, proc.stdout, proc.stderr)
    if check and proc.returncode != 0:
        raise ToolError(describe_failure(done), command=argv, returncode=proc.returncode,
                        stdout=proc.stdout, stderr=proc.stderr)
    return done


_HEADLINE = re.compile("^\\s*(error:|\u00d7)")  # uv's reason; a build log may push it off the tail


def describe_failure(done: Completed) -> str:
    """One message that says what ran, how it ended and the tail of what it printed; a tool's
    own headline (uv's ``error:``, or its cross before ``Failed to build `x==1```) is kept
    ahead of the tail when a long log pushed it out."""
    lines = (done.stderr.strip() or done.stdout.strip()).splitlines()
    tail = lines[-12:]
    headline = next((line for line in lines[:-12] if _HEADLINE.match(line)), None)
    if headline is not None and not any(_HEADLINE.match(line) for line in tail):
        tail = [headline, "…", *tail]
    shown = "\n    ".join(tail) if tail else "(no output)"
    return f"{shlex.join(done.args)} exited {done.returncode}:\n    {shown}"


def end_descendants() -> None:
    """End (SIGTERM) the processes this one started and theirs, by their ids, deepest first:
    a time bound that gives up on uv must not leave uv's builds running. Linux's /proc only
    (elsewhere nothing is ended: the caller stops waiting)."""
    if host_platform().os is not Os.LINUX or not Path("/proc").is_dir():
        return
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parents[int(stat.parent.name)] = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
    ours: list[int] = []
    frontier = [os.getpid()]
    while frontier:
        children = [pid for pid, parent in parents.items() if parent in frontier]
        ours += children
        frontier = children
    for pid in reversed(ours):
        try:
            os.kill(pid, signal.SIGTERM)
        except OSError:
            continue


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
    """Run ``argv`` to completion, passing SIGINT/SIGTERM on; returns its exit status. The
    handlers are in place before the child starts: a signal in between would otherwise end
    envforge by its default action and leave the child running, holding envforge's output
    (a CI run saw it under load). One that arrives before the child exists reaches it once
    it does."""
    skip_sigint = terminal_sends_sigint()
    child: subprocess.Popen[bytes] | None = None
    early: list[int] = []

    def forward(signum: int, _frame: FrameType | None) -> None:
        if signum == signal.SIGINT and skip_sigint:
            return
        if child is None:
            early.append(signum)
        elif child.poll() is None:
            child.send_signal(signum)

    previous = {sig: signal.signal(sig, forward) for sig in FORWARDED
                if host_platform().os is not Os.WINDOWS or sig == signal.SIGINT}
    try:
        child = subprocess.Popen(list(argv), env=dict(env))
        for signum in early:
            child.send_signal(signum)
        return exit_status(child.wait())
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
