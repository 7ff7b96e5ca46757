"""The dynamic loader's cache as ``ldconfig -p`` lists it: read whole, then parsed. The one
reader for apply's loader links (a pack's step) and doctor's loader facts."""

from __future__ import annotations

import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path

from envforge.errors import EnvforgeError
from envforge.host import proc

_PLACES = ("/sbin/ldconfig", "/usr/sbin/ldconfig")


def ldconfig_output(argv: Sequence[str] | None = None) -> str:
    """What ``argv`` (default: the first ``ldconfig`` on PATH, in /sbin or /usr/sbin, with
    ``-p``) prints; "" where none runs or it fails. Never clipped: the cache lists
    thousands of libraries."""
    commands = [list(argv)] if argv is not None else [
        [exe, "-p"] for exe in (shutil.which("ldconfig"), *_PLACES) if exe and Path(exe).is_file()]
    for command in commands:
        try:
            done = proc.run(command, check=False, timeout=30)
        except EnvforgeError:
            continue
        if done.returncode == 0:
            return done.stdout
    return ""


def cache_entries(text: str) -> Iterator[tuple[str, str]]:
    """(name, path) of each x86-64 entry of ``ldconfig -p``'s output, in its order."""
    for line in text.splitlines():
        library, sep, path = line.strip().partition(" => ")
        name, _, flags = library.partition(" (")
        if sep and "x86-64" in flags:
            yield name, path.strip()


def parse_ldconfig(text: str, name: str) -> list[Path]:
    """The x86-64 paths ``ldconfig -p`` lists for ``name``."""
    return [Path(path) for found, path in cache_entries(text) if found == name]
