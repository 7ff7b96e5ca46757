"""The one way envforge reads a file the user names: a spec, a lock, a dependency file.

Such a file must be a regular file of bounded size, checked by ``stat`` before it is opened:
a FIFO would block the command forever, ``/dev/zero`` would be read until memory ran out, and
a 50 MB requirements file took minutes. The open cannot block (``O_NONBLOCK``) and reads at
most the limit, so a file swapped for a FIFO or grown between the check and the read is
refused the same way. Every refusal is one SpecError naming the file (exit 2).
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from envforge.errors import SpecError

MIB = 1 << 20
SPEC_LIMIT = 1 * MIB  # a spec is a page of TOML
LOCK_LIMIT = 16 * MIB  # the project's locks are ~25 KB; a lock of thousands of files fits
DEPENDENCY_LIMIT = 1 * MIB  # a repository's requirements*.txt, setup.py, Pipfile.lock ...
LINE_LIMIT = 8192  # characters in one line of a dependency file: a requirement is short
# a Jupyter notebook carries its outputs (plots as base64 PNG): Hvass-Labs' TensorFlow
# tutorials run 0.3-3.9 MB for a few KB of code, which is all init reads of one
NOTEBOOK_LIMIT = 32 * MIB

_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR,
          "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f]")  # tab, newline, \f and \r are text


def read_input_file(path: Path | str, limit: int, *, missing: str = "no such file") -> bytes:
    """The bytes of ``path``, a regular file of at most ``limit`` bytes, else SpecError."""
    try:
        before = Path(path).stat()
    except FileNotFoundError:
        raise SpecError(path, missing) from None
    except OSError as exc:
        raise SpecError(path, f"cannot read it: {exc.strerror}") from None
    _check(path, before, limit)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise SpecError(path, f"cannot read it: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as handle:
        _check(path, os.fstat(fd), limit)
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise SpecError(path, _too_big(len(data), limit))
    return data


def check_regular_input(path: Path | str, what: str) -> None:
    """Refuse an input that exists but is a folder, FIFO or device before anyone opens it;
    an absent one is its reader's to name."""
    try:
        mode = Path(path).stat().st_mode
    except OSError:
        return
    if not stat.S_ISREG(mode):
        kind = next((name for test, name in _KINDS if test(mode)), "not a file")
        raise SpecError(path, f"{kind}, not a regular file: a {what} is one")


def read_input_text(path: Path | str, limit: int, *, missing: str = "no such file",
                    lenient: bool = False, max_line: int | None = None) -> str:
    """``read_input_file`` decoded as UTF-8: strictly for envforge's own formats; ``lenient``
    (a repository's files) replaces undecodable bytes but refuses NUL and control characters,
    naming the line, as it refuses a line longer than ``max_line``."""
    data = read_input_file(path, limit, missing=missing)
    try:
        text = data.decode("utf-8", errors="replace" if lenient else "strict")
    except UnicodeDecodeError as exc:
        raise SpecError(path, f"not UTF-8 text ({exc.reason})") from None
    if lenient or max_line is not None:
        for number, line in enumerate(text.splitlines(), start=1):
            if lenient and _CONTROL.search(line):
                raise SpecError(path, "a NUL or control character: not a text file",
                                line=number)
            if max_line is not None and len(line) > max_line:
                raise SpecError(path, f"a line of {len(line)} characters, more than the "
                                f"{max_line} envforge reads in one line", line=number)
    return text


def _check(path: Path | str, st: os.stat_result, limit: int) -> None:
    if not stat.S_ISREG(st.st_mode):
        kind = next((name for test, name in _KINDS if test(st.st_mode)), "not a file")
        raise SpecError(path, f"{kind}, not a regular file: envforge reads only regular files")
    if st.st_size > limit:
        raise SpecError(path, _too_big(st.st_size, limit))


def _too_big(size: int, limit: int) -> str:
    return (f"{size} bytes, more than the {limit // MIB} MiB envforge reads from such a file"
            if limit >= MIB else f"{size} bytes, more than the {limit} envforge reads")
