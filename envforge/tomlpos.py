"""Where each key of a TOML document sits, so errors can name a line.

tomllib gives no positions; this scanner reads table headers and ``key =`` lines,
which is all a spec or a lock uses. Arrays of tables get their index in the path.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

# No two adjacent quantifiers can share characters: each line matches in linear time
# (a lazy name between blank runs took cubic time on "[" followed by thousands of spaces).
_HEADER = re.compile(r"[ \t]*(\[\[?)([^\]]*)\]\]?[ \t]*(#.*)?$")
_NAME = r"""(?:[A-Za-z0-9_-]+|"[^"]*"|'[^']*')"""
_KEY = re.compile(rf"[ \t]*({_NAME}(?:\s*\.\s*{_NAME})*)\s*=")
_PART = re.compile(r"""\s*("[^"]*"|'[^']*'|[A-Za-z0-9_-]+)\s*""")

KeyPath = tuple[str, ...]


def _split(dotted: str) -> KeyPath:
    parts = []
    for match in _PART.finditer(dotted):
        token = match.group(1)
        parts.append(token[1:-1] if token[0] in "\"'" else token)
    return tuple(parts)


def _depth_change(value: str) -> int:
    """Net brackets opened by a value, strings and comments ignored."""
    value = re.sub(r'"(?:[^"\\]|\\.)*"|\'[^\']*\'', "", value).split("#", 1)[0]
    return value.count("[") + value.count("{") - value.count("]") - value.count("}")


def key_lines(text: str) -> dict[KeyPath, int]:
    """Map every key path (tables, keys, array-of-table items) to its 1-based line."""
    lines: dict[KeyPath, int] = {}
    table: KeyPath = ()
    array_counts: dict[KeyPath, int] = {}
    depth = 0
    in_string: str | None = None  # the quotes of a multi-line string still open
    offset = 0
    for number, full in enumerate(text.splitlines(keepends=True), start=1):
        raw, begins = full.rstrip("\r\n"), offset
        offset += len(full)
        if in_string is not None:
            if raw.count(in_string) % 2:
                in_string = None
            continue
        if depth > 0:
            depth += _depth_change(raw)
            continue
        header = _HEADER.match(raw)
        if header and header.group(2).strip():
            path = _split(header.group(2))
            if header.group(1) == "[[":
                index = array_counts.get(path, 0)
                array_counts[path] = index + 1
                lines.setdefault(path, number)
                path = (*path, str(index))
            table = path
            lines.setdefault(table, number)
            continue
        key = _KEY.match(raw)
        if key:
            path = (*table, *_split(key.group(1)))
            lines.setdefault(path, number)
            value = raw[key.end():]
            if value.lstrip(" \t").startswith("["):
                _item_lines(text, begins + len(raw) - len(value.lstrip(" \t")), path, lines)
            for quotes in ('"""', "'''"):
                if value.count(quotes) % 2:
                    in_string = quotes
                    break
            else:
                depth = max(0, _depth_change(value))
    return lines


def _item_lines(text: str, open_at: int, path: KeyPath, lines: dict[KeyPath, int]) -> None:
    """Each value of the array at ``open_at`` under ``path + (index,)``: an error about one
    pin names its own line, not the line of ``packages = [``."""
    span = _scan_array(text, open_at)
    for index, item in enumerate(span.items if span is not None else ()):
        lines.setdefault((*path, str(index)), item.line)


def line_of(lines: dict[KeyPath, int], path: Sequence[str | int]) -> int | None:
    """The line of the longest prefix of path that the document spells out."""
    keys = tuple(str(p) for p in path)
    for end in range(len(keys), 0, -1):
        if keys[:end] in lines:
            return lines[keys[:end]]
    return None


class ArrayItem(NamedTuple):
    """One value of an array: its span in the text, its 1-based line, and the string it
    spells (None for any other value)."""

    start: int
    end: int
    line: int
    value: str | None


class ArraySpan(NamedTuple):
    """Where an array sits: the offsets of its ``[`` and ``]``, and its values in order."""

    open: int
    close: int
    items: tuple[ArrayItem, ...]


def array_span(text: str, path: Sequence[str]) -> ArraySpan | None:
    """The array the key ``path`` holds, written as ``key = [ ... ]``; None where the key is
    not written so (absent, an inline table's, or not an array)."""
    number = key_lines(text).get(tuple(path))
    if number is None:
        return None
    offset = _line_offset(text, number)
    key = _KEY.match(text, offset)
    if key is None:
        return None
    at = _skip_blanks(text, key.end())
    if not text.startswith("[", at):
        return None
    return _scan_array(text, at)


def _line_offset(text: str, number: int) -> int:
    offset = 0
    for _ in range(number - 1):
        offset = text.index("\n", offset) + 1
    return offset


def _skip_blanks(text: str, at: int) -> int:
    while at < len(text) and text[at] in " \t":
        at += 1
    return at


_STRING = re.compile(r'"""(?:[^\\]|\\.)*?"""(?!")|\'\'\'.*?\'\'\'(?!\')|"(?:[^"\\\n]|\\.)*"'
                     r"|'[^'\n]*'", re.DOTALL)
_BARE = re.compile(r"[^\s,\]\}#]+")


def _scan_array(text: str, open_at: int) -> ArraySpan | None:
    """The values of the array opening at ``open_at``, nested ones skipped as one value."""
    import tomllib

    items: list[ArrayItem] = []
    depth = 0
    at = open_at
    start = 0
    line, counted = text.count("\n", 0, open_at) + 1, open_at  # lines counted once: linear

    def line_at(offset: int) -> int:
        nonlocal line, counted
        line += text.count("\n", counted, offset)
        counted = offset
        return line

    while at < len(text):
        char = text[at]
        if char == "#":
            end = text.find("\n", at)
            at = len(text) if end < 0 else end
            continue
        if char in "[{":
            if depth == 1:
                start = at
            depth += 1
            at += 1
            continue
        if char in "]}":
            depth -= 1
            at += 1
            if depth == 0:
                return ArraySpan(open_at, at - 1, tuple(items))
            if depth == 1:
                items.append(ArrayItem(start, at, line_at(start), None))
            continue
        if char in " \t\r\n,":
            at += 1
            continue
        match = _STRING.match(text, at) if char in "\"'" else _BARE.match(text, at)
        if match is None:
            return None
        if depth == 1:
            value = None
            if char in "\"'":
                try:
                    value = tomllib.loads(f"v = {match.group()}")["v"]
                except tomllib.TOMLDecodeError:
                    return None
            items.append(ArrayItem(at, match.end(), line_at(at), value))
        at = match.end()
    return None
