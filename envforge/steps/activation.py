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
from envforge.steps.actions import Action, StepPlan, WriteBlock, WriteFile, perform_all, with_block
from envforge.steps.base import Change, StepContext, state_of, text_digest
from envforge.steps.debs import configure_edits

EDITS_FILE = "envforge-env.json"


def edits_for(ctx: StepContext) -> tuple[EnvEdit, ...]:
    packs = tuple(edit for pack in ctx.registry.locked(ctx.lock.expect.packs)
                  for edit in pack.env_edits(ctx))
    return (*env_edits(ctx.layout, ctx.lock, cuda_root=ctx.cuda_root,
                       spec_dir=ctx.spec_dir), *configure_edits(ctx), *packs)


def activation_files(ctx: StepContext) -> tuple[dict[Path, str], dict[Path, str]]:
    """Every file activation writes, with its content; and the block it adds to each script
    the environment's tool makes (a venv's ``bin/activate``, there only once the venv is)."""
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
        return files, {}
    match ctx.layout.platform.os:
        case Os.WINDOWS:
            scripts = prefix / "Scripts"
            files[scripts / "envforge-activate.bat"] = render_activation(edits, "bat")
            files[scripts / "envforge-activate.ps1"] = render_activation(edits, "ps1")
            return files, {}
        case Os.LINUX:
            return files, {prefix / "bin" / "activate": render_venv_block(edits)}
        case _:
            assert_never(ctx.layout.platform.os)


def load_edits(prefix: Path) -> tuple[EnvEdit, ...]:
    path = prefix / EDITS_FILE
    return tuple(EnvEdit.model_validate(e) for e in json.loads(path.read_text(encoding="utf-8")))


class ActivationStep:
    name = "activation"

    def plan(self, ctx: StepContext) -> StepPlan:
        files, blocks = activation_files(ctx)
        changes: list[Change] = []
        actions: list[Action] = []
        for path, text in files.items():
            current = path.read_text(encoding="utf-8") if path.is_file() else None
            if current != text:
                changes.append(Change(action="replace" if current else "create",
                                      target=str(path), before=text_digest(current),
                                      after=text_digest(text), detail=text))
                actions.append(WriteFile(path=str(path), before=state_of(path),
                                         data=text.encode("utf-8")))
        for path, block in blocks.items():
            current = path.read_text(encoding="utf-8") if path.is_file() else None
            if current is not None and with_block(current, block) == current:
                continue
            if current is not None:
                text = with_block(current, block)
                changes.append(Change(action="replace", target=str(path),
                                      before=text_digest(current), after=text_digest(text),
                                      detail=text))
            # planned even before the venv made the script: the block goes in once it is there
            actions.append(WriteBlock(path=str(path), before=state_of(path), block=block))
        return StepPlan(step=self.name, changes=tuple(changes), actions=tuple(actions))

    def describe(self, ctx: StepContext) -> tuple[Change, ...]:
        return self.plan(ctx).changes

    def apply(self, ctx: StepContext, tx: Transaction) -> None:
        perform_all(self.plan(ctx), tx)
