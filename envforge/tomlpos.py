"""Where each key of a TOML document sits, so errors can name a line.

tomllib gives no positions; this scanner reads table headers and ``key =`` lines,
which is all a spec or a lock uses. Arrays of tables get their index in the path.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

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
    for number, raw in enumerate(text.splitlines(), start=1):
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
            lines.setdefault((*table, *_split(key.group(1))), number)
            value = raw[key.end():]
            for quotes in ('"""', "'''"):
                if value.count(quotes) % 2:
                    in_string = quotes
                    break
            else:
                depth = max(0, _depth_change(value))
    return lines


def line_of(lines: dict[KeyPath, int], path: Sequence[str | int]) -> int | None:
    """The line of the longest prefix of path that the document spells out."""
    keys = tuple(str(p) for p in path)
    for end in range(len(keys), 0, -1):
        if keys[:end] in lines:
            return lines[keys[:end]]
    return None
