"""An applied environment used and undone: ``envforge run``'s variables and checks, and
``rollback``'s undo of what apply changed (``commands/apply`` renders both)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from envforge.app.context import default_prefix, prepare, state_dir_for
from envforge.app.packs import installed_packs
from envforge.envvars import apply_edits
from envforge.errors import InputError
from envforge.paths import envforge_dirs
from envforge.platforms import host_platform
from envforge.spec import load_spec
from envforge.steps.base import StepContext
from envforge.ui import UI


@dataclass(frozen=True)
class RolledBack:
    """Where a rollback looked, and what it undid (None: nothing was applied there)."""

    prefix: Path
    undone: tuple[str, ...] | None


def roll_back(spec: Path, *, prefix: Path | None, force: bool) -> RolledBack:
    """Undo what apply recorded at the spec's prefix. Only the spec that applied it may,
    unless ``force``, which also goes past a damaged journal (executor.undo)."""
    loaded = load_spec(spec, installed_packs())
    dirs = envforge_dirs()
    where = (prefix or default_prefix(loaded, dirs, host_platform().name)).absolute()
    state = state_dir_for(dirs, loaded.name, where)
    if not any((state / name).exists() for name in ("journal.jsonl", "applied.json")):
        return RolledBack(where, None)
    from envforge.executor import check_owner, undo

    spec_file = str(spec.resolve())
    if not force:
        check_owner(state, spec_file, where)  # before waiting on a running apply's lock
    return RolledBack(where, tuple(undo(state, spec=spec_file, force=force)))


def command_environment(spec: str, command: str, *, prefix: Path | None,
                        locks_dir: Path | None, ui: UI,
                        environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The variables ``command`` runs with inside the applied environment; InputError (one
    line, exit 2) for an environment not applied or not finished, a ``pip`` it lacks (the
    host's would install outside it) or a command found nowhere."""
    return _prepared(spec, command, prefix=prefix, locks_dir=locks_dir, ui=ui,
                     environ=environ)[1]


def run_in_environment(spec: str, words: Sequence[str], *, prefix: Path | None,
                       locks_dir: Path | None, ui: UI) -> int:
    """``envforge run``: ``words`` run with the environment's variables, each locked pack told
    before and after (Theano's compiled modules taken from the store and added to it); the
    command's exit status."""
    from envforge.host.proc import run_child

    ctx, env = _prepared(spec, words[0], prefix=prefix, locks_dir=locks_dir, ui=ui)
    packs = installed_packs().locked(ctx.lock.expect.packs)
    for pack in packs:
        pack.before_run(ctx)
    code = run_child(words, env)
    for pack in packs:
        pack.after_run(ctx, succeeded=code == 0)
    return code


def _prepared(spec: str, command: str, *, prefix: Path | None, locks_dir: Path | None, ui: UI,
              environ: Mapping[str, str] | None = None) -> tuple[StepContext, dict[str, str]]:
    from envforge.app.verification import applied_edits

    ctx = prepare(Path(spec), prefix=prefix, artifacts={}, bundle=None, offline=True, ui=ui,
                  locks_dir=locks_dir)
    edits = applied_edits(ctx, spec, f" --prefix {prefix}" if prefix else "")
    env = apply_edits(edits, os.environ if environ is None else environ, pathsep=os.pathsep)
    _refuse_outside_pip(command, Path(ctx.layout.python).parent, spec)
    if shutil.which(command, path=env.get("PATH")) is None:
        raise InputError(f"envforge run: {command}: command not found in the environment "
                         f"({ctx.prefix}) or on PATH")
    return ctx, env


def _refuse_outside_pip(command: str, bin_dir: Path, spec: str) -> None:
    """``pip`` from the host's PATH would install into the host, not the environment."""
    name = Path(command).name.removesuffix(".exe")
    is_pip = (name.startswith("pip") and name.removeprefix("pip").replace(".", "").isdigit()) \
        or name == "pip"
    if is_pip and not any((bin_dir / f"{name}{ext}").is_file() for ext in ("", ".exe")):
        raise InputError(f"envforge run: the environment has no {name} (the host's would "
                         f"install outside it): add \"pip\" to [pypi] packages in {spec} and "
                         "lock and apply again, or install through the spec")
