"""Activation: the environment's variables for shells (conda activate.d, a venv's activate)
and as data for ``envforge run``. All files live inside the prefix."""

from __future__ import annotations

import json
from pathlib import Path
from typing import assert_never

from envforge.envlayout import env_edits
from envforge.envvars import (
    EnvEdit,
    render_activation,
    render_sh_restore,
    render_sh_save,
    render_venv_block,
)
from envforge.journal import Transaction
from envforge.platforms import Os
from envforge.steps.base import Change, StepContext, text_digest

EDITS_FILE = "envforge-env.json"
_BEGIN = "# >>> envforge >>>"
_END = "# <<< envforge <<<"


def edits_for(ctx: StepContext) -> tuple[EnvEdit, ...]:
    from envforge.packs import active_packs

    packs = tuple(edit for pack in active_packs(ctx.pspec) for edit in pack.env_edits(ctx))
    return (*env_edits(ctx.layout, ctx.lock, cuda_root=ctx.cuda_root), *packs)


def activation_files(ctx: StepContext) -> dict[Path, str]:
    """Every file activation writes, with its content."""
    prefix = Path(ctx.layout.prefix)
    edits = edits_for(ctx)
    files = {prefix / EDITS_FILE: json.dumps([e.model_dump() for e in edits], indent=2) + "\n"}
    if ctx.layout.kind == "conda":
        activate_d = prefix / "etc" / "conda" / "activate.d"
        files[activate_d / "envforge.sh"] = render_sh_save(edits) + render_activation(edits,
                                                                                     "sh")
        files[activate_d / "envforge.bat"] = render_activation(edits, "bat")
        files[prefix / "etc" / "conda" / "deactivate.d" / "envforge.sh"] = \
            render_sh_restore(edits)
        return files
    match ctx.layout.platform.os:
        case Os.WINDOWS:
            scripts = prefix / "Scripts"
            files[scripts / "envforge-activate.bat"] = render_activation(edits, "bat")
            files[scripts / "envforge-activate.ps1"] = render_activation(edits, "ps1")
        case Os.LINUX:
            activate = prefix / "bin" / "activate"
            if activate.is_file():
                files[activate] = _with_block(activate.read_text(encoding="utf-8"),
                                              render_venv_block(edits))
        case _:
            assert_never(ctx.layout.platform.os)
    return files


def _with_block(script: str, block: str) -> str:
    head = script.split(_BEGIN, 1)[0].rstrip("\n")
    return f"{head}\n{_BEGIN}\n{block}{_END}\n"


def load_edits(prefix: Path) -> tuple[EnvEdit, ...]:
    path = prefix / EDITS_FILE
    return tuple(EnvEdit.model_validate(e) for e in json.loads(path.read_text(encoding="utf-8")))


class ActivationStep:
    name = "activation"

    def describe(self, ctx: StepContext) -> tuple[Change, ...]:
        changes = []
        for path, text in activation_files(ctx).items():
            current = path.read_text(encoding="utf-8") if path.is_file() else None
            if current != text:
                changes.append(Change(action="replace" if current else "create",
                                      target=str(path), before=text_digest(current),
                                      after=text_digest(text), detail=text))
        return tuple(changes)

    def apply(self, ctx: StepContext, tx: Transaction) -> None:
        for path, text in activation_files(ctx).items():
            if path.is_file() and path.read_text(encoding="utf-8") == text:
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            tx.write_text(path, text)

