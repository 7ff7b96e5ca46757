"""Format-preserving edits of a spec's ``packages`` arrays, for ``envforge add`` / ``remove``.

A spec is TOML written by people: its comments, order and layout are theirs. An edit touches
only the characters of one array value (and, on removal, its comma and the comment that
follows it on its own line), found by ``tomlpos.array_span``. Each edit is checked by reading
the result back: the document must be the old one with exactly that value changed, or the
edit is refused (exit 2) and nothing is written.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Sequence
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from envforge.errors import InputError
from envforge.spec import load_toml
from envforge.tomlpos import ArrayItem, ArraySpan, array_span, key_lines

_COMMA = re.compile(r"[ \t]*,[ \t]*")
WIDE = 99  # a one-line array grows on its line up to this width, then a value goes below


def packages_path(platform: str | None) -> tuple[str, ...]:
    """The key ``[pypi] packages`` or ``[pypi.platform.P] packages``."""
    return ("pypi", "packages") if platform is None else ("pypi", "platform", platform,
                                                          "packages")


def requirement_name(text: str, *, where: str) -> str:
    """The normalised project name of a PEP 508 requirement; InputError naming ``where``."""
    try:
        return canonicalize_name(Requirement(text).name)
    except InvalidRequirement as exc:
        reason = str(exc).splitlines()[0] if str(exc) else "unreadable"
        raise InputError(f"{where}: {text!r} is not a requirement (PEP 508): {reason}") from None


def add_requirement(text: str, path: Sequence[str], requirement: str, *, source: str) -> str:
    """``text`` with ``requirement`` in the array at ``path``: in place of the value naming the
    same project, else after the last value, in the array's own layout."""
    name = requirement_name(requirement, where=source)
    quoted = json.dumps(requirement)
    span = array_span(text, path)
    if span is None:
        edited = _new_array(text, path, quoted, source=source)
    else:
        same = _named(span, name)
        if same:
            edited = text[:same[0].start] + quoted + text[same[0].end:]
        else:
            edited = _append(text, span, quoted)
    _check(text, edited, path, source, lambda values: _replaced(values, name, requirement))
    return edited


def remove_requirement(text: str, path: Sequence[str], name: str, *, source: str) -> str:
    """``text`` without the value of the array at ``path`` that names project ``name``, its
    comma, and the comment after it when the value has its line to itself."""
    wanted = canonicalize_name(name)
    span = array_span(text, path)
    found = _named(span, wanted) if span is not None else []
    if span is None or not found:
        held = [item.value for item in (span.items if span else ()) if item.value]
        raise InputError(f"{source}: {name} is not in {_label(path)} (it holds: "
                         f"{', '.join(held) or 'nothing'})")
    edited = text
    for item in reversed(found):  # from the end: earlier offsets stay right
        edited = _cut(edited, item)
    items = span.items
    kept = [i for i in items if i not in found]
    if items[-1] in found and _COMMA.match(text, items[-1].end) is None and kept and all(
            f.start > kept[-1].end for f in found):
        comma = _COMMA.match(edited, kept[-1].end)
        if comma is not None:  # the array had no trailing comma: it keeps none
            edited = edited[:kept[-1].end] + edited[comma.end():]
    _check(text, edited, path, source,
           lambda values: [v for v in values if _name_or_none(v) != wanted])
    return edited


def _named(span: ArraySpan, name: str) -> list[ArrayItem]:
    return [item for item in span.items
            if item.value is not None and _name_or_none(item.value) == name]


def _name_or_none(value: Any) -> str | None:
    try:
        return canonicalize_name(Requirement(value).name)
    except (InvalidRequirement, TypeError):
        return None


def _replaced(values: list[Any], name: str, requirement: str) -> list[Any]:
    at = [i for i, v in enumerate(values) if _name_or_none(v) == name]
    if not at:
        return [*values, requirement]
    out = list(values)
    out[at[0]] = requirement
    return out


def _newline(text: str) -> str:
    return "\r\n" if "\r\n" in text else "\n"


def _line_start(text: str, at: int) -> int:
    return text.rfind("\n", 0, at) + 1


def _line_end(text: str, at: int) -> int:
    """The offset of the line ending after ``at`` (its ``\\r`` where the file uses CRLF)."""
    end = text.find("\n", at)
    end = len(text) if end < 0 else end
    return end - 1 if end > 0 and text[end - 1] == "\r" else end


def _append(text: str, span: ArraySpan, quoted: str) -> str:
    """After the last value, in the array's style: one value a line (indented like the last,
    with its trailing comma or not), or several a line (on the last line while it stays
    under ``WIDE``, else below, aligned with that line's first value)."""
    newline = _newline(text)
    close_line = text.count("\n", 0, span.close) + 1
    if not span.items:
        if close_line == text.count("\n", 0, span.open) + 1:
            return text[:span.open + 1] + quoted + text[span.close:]
        at = _line_start(text, span.close)
        return text[:at] + f"    {quoted},{newline}" + text[at:]
    last = span.items[-1]
    line_start = _line_start(text, last.start)
    vertical = close_line > last.line and len({i.line for i in span.items}) == len(span.items)
    if not vertical and last.end - line_start + len(quoted) + 2 <= WIDE:
        return text[:last.end] + ", " + quoted + text[last.end:]
    first = next(i for i in span.items if i.line == last.line)
    indent = re.sub(r"\S", " ", text[line_start:first.start])
    if close_line == last.line:  # the bracket closes on this line: the value goes before it
        return text[:last.end] + "," + newline + indent + quoted + text[last.end:]
    trailing = _COMMA.match(text, last.end) is not None
    end = _line_end(text, last.end)
    return (text[:last.end] + ("" if trailing else ",") + text[last.end:end] + newline
            + indent + quoted + ("," if trailing else "") + text[end:])


def _cut(text: str, item: ArrayItem) -> str:
    """``text`` without ``item``: its whole line, comment included, where the value has the
    line to itself; else the value and the comma that joins it to its neighbour."""
    start, end = _line_start(text, item.start), _line_end(text, item.end)
    tail = _COMMA.match(text, item.end)
    rest = text[tail.end() if tail else item.end:end].lstrip(" \t")
    if not text[start:item.start].strip() and (not rest or rest.startswith("#")):
        following = text.find("\n", item.end)
        return text[:start] + (text[following + 1:] if following >= 0 else "")
    if tail and rest and not rest.startswith(("#", "]")):  # a value follows on the line
        return text[:item.start] + text[tail.end():]
    begin = len(text[:item.start].rstrip(" \t"))
    if begin > start and text[begin - 1] == ",":  # the line's last value: the comma before
        return text[:begin - 1] + text[item.end:]
    return text[:item.start] + text[tail.end() if tail else item.end:]


def _new_array(text: str, path: Sequence[str], quoted: str, *, source: str) -> str:
    """``packages = [value]`` under the table's header, or a new table at the end."""
    if tuple(path) in key_lines(text):
        raise InputError(f"{source}: {_label(path)} is not written as `packages = [...]`; "
                         "edit it by hand")
    newline = _newline(text)
    header = key_lines(text).get(tuple(path[:-1]))
    entry = f"{path[-1]} = [{quoted}]{newline}"
    if header is not None:
        lines = text.splitlines(keepends=True)
        if not lines[header - 1].lstrip().startswith("["):  # a dotted key, not a header
            raise InputError(f"{source}: [{'.'.join(path[:-1])}] is not written as a table; "
                             "edit it by hand")
        at = sum(len(line) for line in lines[:header])
        if at and not text[:at].endswith("\n"):
            entry = newline + entry
        return text[:at] + entry + text[at:]
    gap = "" if not text else newline if text.endswith("\n") else newline * 2
    return f"{text}{gap}[{'.'.join(path[:-1])}]{newline}{entry}"


def _label(path: Sequence[str]) -> str:
    return f"[{'.'.join(path[:-1])}] {path[-1]}"


def _check(before: str, after: str, path: Sequence[str], source: str,
           change: Any) -> None:
    """The edited document must read as the old one with only the array's values changed as
    meant: anything else (a layout this editor misreads) is refused, nothing written."""
    old = load_toml(before, source)
    expected = copy.deepcopy(old)
    table: Any = expected
    for key in path[:-1]:
        table = table.setdefault(key, {})
    table[path[-1]] = change(list(table.get(path[-1], [])))
    try:
        got = load_toml(after, source)
    except InputError:
        got = None
    if got != expected:
        raise InputError(f"{source}: cannot edit {_label(path)} in place (its layout is not "
                         "one this editor knows); edit it by hand")
