"""THEANO_FLAGS and blas.ldflags split as Theano and the linker split them. Pure: shared by
observation (which folders to look into) and the rules (what a setting means)."""

from __future__ import annotations

import shlex


def parse_theano_flags(value: str) -> list[tuple[str, str]]:
    """THEANO_FLAGS as Theano splits it: shlex (posix) on commas, ``key=value`` pairs in order.

    Pairs without ``=`` are ignored (Theano warns and drops them); a later key wins.
    """
    splitter = shlex.shlex(value, posix=True)
    splitter.whitespace = ","
    splitter.whitespace_split = True
    pairs = []
    try:
        items = list(splitter)
    except ValueError:  # an unclosed quote: Theano fails the same way at import
        return []
    for item in items:
        key, sep, val = item.strip().partition("=")
        if sep:
            pairs.append((key, val))
    return pairs


def ldflags_parts(value: str) -> tuple[list[str], list[str]]:
    """(-L folders, -l names) of a blas.ldflags value; other words (``-Wl,...``) are ignored."""
    try:
        words = shlex.split(value)
    except ValueError:
        words = value.split()
    dirs: list[str] = []
    libs: list[str] = []
    for index, word in enumerate(words):
        for flag, into in (("-L", dirs), ("-l", libs)):
            if word == flag and index + 1 < len(words):
                into.append(words[index + 1])
            elif word.startswith(flag) and len(word) > 2:
                into.append(word[2:])
    return dirs, libs
