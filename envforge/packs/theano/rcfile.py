"""A .theanorc read line by line, as ConfigParser does, so edits touch only their lines.

``parse_theanorc`` says what Theano gets from a file; this module says where each key
sits, and rewrites single lines. Re-rendering the whole file would lose the user's
comments and order, and ``--fix`` promises that everything it does not fix stays
byte for byte (so that rollback, and a reader of the diff, see only the fix).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from envforge.doctor.model import FixAction


class ConfigEdit(FixAction):
    """One line-level edit of an INI config file (a framework's: Theano's .theanorc);
    everything else in the file stays byte for byte.

    ``move``: the key goes to ``new_section``/``new_key`` with its value (the old line is
    commented out); ``set``: the key gets ``value`` (added, with its section, if absent);
    ``comment-out``: the line stays as a comment saying why.
    """

    # The kind doctor --json has always written, so a reader of saved output keeps working.
    kind: Literal["theanorc-edit"] = "theanorc-edit"
    path: str
    op: Literal["move", "set", "comment-out"]
    section: str
    key: str
    new_section: str | None = None
    new_key: str | None = None
    value: str | None = None
    note: str = ""


# ConfigParser: a header is ``[name]`` on an unindented line; an option ``key = value`` or
# ``key: value``; an indented line after an option continues its value; ``#``/``;`` comment.
_HEADER = re.compile(r"\[(?P<name>.+)\]")
_OPTION = re.compile(r"(?P<key>.*?)\s*[=:]\s*(?P<value>.*)$")

LineKind = Literal["header", "option", "continuation", "comment", "blank", "other"]


@dataclass(frozen=True)
class RcLine:
    number: int  # 1-based
    kind: LineKind
    section: str | None
    key: str | None = None  # lower-cased, as ConfigParser's optionxform makes it
    value: str | None = None


def scan(text: str) -> list[RcLine]:
    lines: list[RcLine] = []
    section: str | None = None
    in_option = False
    for number, raw in enumerate(text.splitlines(), start=1):
        stripped = raw.strip()
        if not stripped:
            lines.append(RcLine(number, "blank", section))
            in_option = False
            continue
        if stripped[0] in "#;":
            lines.append(RcLine(number, "comment", section))
            continue
        if raw[0].isspace() and in_option:
            lines.append(RcLine(number, "continuation", section))
            continue
        header = _HEADER.match(stripped)
        if header:
            section = header["name"]
            lines.append(RcLine(number, "header", section))
            in_option = False
            continue
        option = _OPTION.match(stripped)
        if option and section is not None and option["key"]:
            lines.append(RcLine(number, "option", section, option["key"].lower(),
                                option["value"]))
            in_option = True
            continue
        lines.append(RcLine(number, "other", section))
        in_option = False
    return lines


def dotted(section: str, key: str) -> str:
    """The flag a (section, key) is, as ``parse_theanorc`` names it (before canonical case)."""
    return key if section == "global" else f"{section.replace('__', '.')}.{key}"


def key_lines(text: str) -> dict[str, int]:
    """Lower-cased dotted flag -> the line of its last occurrence (the one ConfigParser keeps)."""
    return {dotted(line.section, line.key).lower(): line.number for line in scan(text)
            if line.kind == "option" and line.section is not None and line.key is not None}


def _newline(text: str) -> str:
    return "\r\n" if "\r\n" in text else "\n"


def rewrite(text: str, edits: tuple[ConfigEdit, ...] | list[ConfigEdit]) -> str:
    """``text`` with the edits made; lines no edit names are kept exactly, endings included."""
    nl = _newline(text)
    raw = text.splitlines(keepends=True)
    if raw and not raw[-1].endswith(("\n", "\r")):
        raw[-1] += nl
    for edit in edits:
        raw = _apply(raw, edit, nl)
    return "".join(raw)


def _find(raw: list[str], section: str, key: str) -> list[RcLine]:
    """Every option line (with its continuation lines' numbers following) of section/key."""
    return [line for line in scan("".join(raw))
            if line.kind == "option" and line.section == section and line.key == key.lower()]


def _span(raw: list[str], number: int) -> range:
    """The line ``number`` and its continuation lines, as 0-based indices."""
    lines = scan("".join(raw))
    end = number
    while end < len(lines) and lines[end].kind == "continuation":
        end += 1
    return range(number - 1, end)


def _ending(line: str, nl: str) -> str:
    return line[len(line.rstrip("\r\n")):] or nl


def _comment_out(raw: list[str], number: int, note: str, nl: str) -> list[str]:
    out = list(raw)
    for index in _span(raw, number):
        body = out[index].rstrip("\r\n")
        out[index] = f"# {body}{_ending(out[index], nl)}"
    first = number - 1
    out.insert(first, f"# envforge doctor: {note}{_ending(raw[first], nl)}")
    return out


def _set(raw: list[str], section: str, key: str, value: str, nl: str) -> list[str]:
    found = _find(raw, section, key)
    if found:
        target = found[-1]  # ConfigParser keeps the last one
        span = _span(raw, target.number)
        line = raw[span[0]]
        match = re.match(r"(?P<head>\s*[^=:]*?\s*[=:]\s*)", line)
        head = match["head"] if match else f"{key} = "
        out = list(raw)
        out[span[0]] = f"{head}{value}{_ending(line, nl)}"
        del out[span[0] + 1:span[-1] + 1]
        return out
    return _add(raw, section, key, value, nl)


def _add(raw: list[str], section: str, key: str, value: str, nl: str) -> list[str]:
    lines = scan("".join(raw))
    headers = [line for line in lines if line.kind == "header" and line.section == section]
    out = list(raw)
    if not headers:
        if out and out[-1].strip():
            out.append(nl)
        out += [f"[{section}]{nl}", f"{key} = {value}{nl}"]
        return out
    # after the last non-blank line of the section's first block
    last = headers[0].number
    for line in lines[headers[0].number:]:
        if line.kind == "header":
            break
        if line.kind != "blank":
            last = line.number
    out.insert(last, f"{key} = {value}{nl}")
    return out


def _apply(raw: list[str], edit: ConfigEdit, nl: str) -> list[str]:
    if edit.op == "set":
        assert edit.value is not None
        return _set(raw, edit.section, edit.key, edit.value, nl)
    found = _find(raw, edit.section, edit.key)
    if not found:
        return raw
    target = found[-1]
    if edit.op == "comment-out":
        out = raw
        for line in reversed(found):
            out = _comment_out(out, line.number, edit.note, nl)
        return out
    # move: keep the value, put it under its right name, comment the old line out
    assert edit.new_section is not None and edit.new_key is not None
    value = (target.value or "").strip()
    out = raw
    for line in reversed(found):
        out = _comment_out(out, line.number, edit.note, nl)
    if _find(out, edit.new_section, edit.new_key):
        return out  # the right name is already set; it wins, as it did before
    return _add(out, edit.new_section, edit.new_key, value, nl)
