"""Environment-variable edits as data: applied to a dict for ``envforge run``, rendered
into activation scripts for shells. One description, several consumers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

from envforge.spec import Frozen

Shell = Literal["sh", "bat", "ps1"]


class EnvEdit(Frozen):
    """``set`` replaces a variable; ``prepend`` puts folders in front of a path list."""

    name: str
    op: Literal["set", "prepend"]
    value: str


def apply_edits(edits: Sequence[EnvEdit], environ: Mapping[str, str], *,
                pathsep: str) -> dict[str, str]:
    """The environment a command sees after the edits; a folder already present is moved first."""
    result = dict(environ)
    for edit in edits:
        if edit.op == "set":
            result[edit.name] = edit.value
            continue
        current = [p for p in result.get(edit.name, "").split(pathsep) if p]
        added = [p for p in edit.value.split(pathsep) if p]
        result[edit.name] = pathsep.join([*added, *(p for p in current if p not in added)])
    return result


def render_activation(edits: Sequence[EnvEdit], shell: Shell) -> str:
    """Lines a shell runs on activation (conda's activate.d, a venv's activate)."""
    lines: list[str] = []
    for edit in edits:
        if shell == "sh":
            value = edit.value.replace('"', '\\"')
            if edit.op == "set":
                lines.append(f'export {edit.name}="{value}"')
            else:
                lines.append(f'export {edit.name}="{value}${{{edit.name}:+:${edit.name}}}"')
        elif shell == "bat":
            if edit.op == "set":
                lines.append(f'@set "{edit.name}={edit.value}"')
            else:
                lines.append(f'@set "{edit.name}={edit.value};%{edit.name}%"')
        elif edit.op == "set":
            lines.append(f"$env:{edit.name} = '{edit.value}'")
        else:
            lines.append(f"$env:{edit.name} = '{edit.value};' + $env:{edit.name}")
    return "\n".join(lines) + "\n"
