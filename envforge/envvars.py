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


def _names(edits: Sequence[EnvEdit]) -> list[str]:
    return list(dict.fromkeys(e.name for e in edits))


def render_sh_save(edits: Sequence[EnvEdit]) -> str:
    """sh lines, run before activation, that remember each variable it changes (and whether
    it was set), once per activation."""
    lines = ['if [ -z "${_ENVFORGE_SAVED:-}" ]; then', "    _ENVFORGE_SAVED=1"]
    for name in _names(edits):
        lines.append(f'    _ENVFORGE_OLD_{name}="${{{name}-}}"; '
                     f'_ENVFORGE_HAD_{name}="${{{name}+x}}"')
    return "\n".join([*lines, "fi"]) + "\n"


def render_sh_restore(edits: Sequence[EnvEdit]) -> str:
    """sh lines that put back what ``render_sh_save`` remembered: deactivation leaves the
    shell's THEANORC, LD_LIBRARY_PATH ... as they were, unset ones unset."""
    lines = ['if [ -n "${_ENVFORGE_SAVED:-}" ]; then']
    for name in _names(edits):
        lines += [f'    if [ -n "${{_ENVFORGE_HAD_{name}:-}}" ]; then '
                  f'export {name}="${{_ENVFORGE_OLD_{name}}}"; else unset {name}; fi',
                  f"    unset _ENVFORGE_OLD_{name} _ENVFORGE_HAD_{name}"]
    return "\n".join([*lines, "    unset _ENVFORGE_SAVED", "fi"]) + "\n"


def render_venv_block(edits: Sequence[EnvEdit]) -> str:
    """What envforge appends to a venv's bin/activate (bash/zsh, as the venv's own script):
    save, activate, and a ``deactivate`` that restores the variables, then runs the venv's
    (whose ``unset -f deactivate`` removes the wrapper with it)."""
    restore = "".join(f"    {line}\n" for line in render_sh_restore(edits).splitlines())
    wrapper = (
        "if ! declare -f deactivate | grep -q _envforge_venv_deactivate; then\n"
        '    eval "_envforge_venv_deactivate () $(declare -f deactivate | sed 1d)"\n'
        "fi\n"
        "deactivate () {\n"
        f"{restore}"
        '    _envforge_venv_deactivate "$@"\n'
        '    if [ ! "${1:-}" = "nondestructive" ]; then unset -f _envforge_venv_deactivate; fi\n'
        "}\n")
    # A second activation in one shell runs only the venv's own deactivate first: put back
    # what the first one saved before saving again.
    return render_sh_restore(edits) + render_sh_save(edits) + render_activation(edits, "sh") \
        + wrapper

