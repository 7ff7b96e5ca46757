"""A plan = the steps a lock needs on this host, each with the rows it shows and the typed
actions the executor will perform, exactly those (``steps/actions.py``).

Which steps apply follows from the lock alone (the spec is only checked, by its hash); what
each would do comes from observing the host once, here, which never changes anything. A plan
can be saved (``envforge plan SPEC -o FILE``) with the lock's sha256 and applied later
(``envforge apply FILE``), which refuses it if the lock or any before-state changed.
"""

from __future__ import annotations

import json
import re
import stat
from collections.abc import Sequence
from itertools import zip_longest
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import Field, ValidationError

from envforge import __version__
from envforge.errors import InputError
from envforge.inputfile import read_input_file
from envforge.model import Frozen
from envforge.platforms import PLATFORMS, Os
from envforge.steps.actions import (
    Action,
    CopyFile,
    Observes,
    PlansActions,
    RunStep,
    StepPlan,
)
from envforge.steps.base import Step, StepContext, after

if TYPE_CHECKING:
    from envforge.host.windows import RegistrySeam

__all__ = ["PLAN_FORMAT", "Plan", "PlanOptions", "SavedPlan", "StepPlan", "build_steps",
           "first_difference", "make_plan", "plan_step", "read_saved_plan", "special_file",
           "write_saved_plan"]

PLAN_FORMAT = 1
PLAN_MAX_BYTES = 16 * 1024 * 1024  # a plan carries its files' bytes; the largest is KiBs
PLAN_MAX_DEPTH = 32  # a plan nests 6 deep; json.loads recurses once per level


class Plan(Frozen):
    spec: str
    platform: str
    prefix: str
    steps: tuple[StepPlan, ...]

    @property
    def pending(self) -> bool:
        return any(s.changes for s in self.steps)

    @property
    def artifacts(self) -> dict[str, str]:
        """role -> sha256 of each ``--artifact`` a step already checked while planning."""
        return {role: sha for s in self.steps for role, sha in s.artifacts.items()}


class PlanOptions(Frozen):
    """What ``apply FILE`` needs to rebuild the context the plan was made in."""

    prefix: str
    locks_dir: str | None = None
    artifacts: dict[str, str] = Field(default_factory=dict)
    bundle: str | None = None
    offline: bool = False
    sync: bool = False


class SavedPlan(Frozen):
    """``envforge plan -o``'s file: the plan, and what it was made from."""

    format: Literal[1]
    envforge: str
    spec_file: str
    spec_sha256: str
    lock_file: str
    lock_sha256: str
    options: PlanOptions
    plan: Plan


def build_steps(ctx: StepContext, *, registry: RegistrySeam | None = None) -> list[Step]:
    """The ordered steps this environment needs; later steps rely on earlier ones.

    ``registry`` is where a win-64 user PATH is written: the real one on Windows when not
    given; elsewhere that step is planned only with a registry passed in (tests).
    """
    from envforge.steps.activation import ActivationStep
    from envforge.steps.env import EnvironmentStep, PrefixStep

    lock, inputs = ctx.lock, ctx.inputs
    steps: list[Step] = [PrefixStep()]
    if lock.deb:
        from envforge.steps.debs import DebUnpackStep

        steps.append(DebUnpackStep())
    steps.append(EnvironmentStep())
    if lock.conda:
        from envforge.steps.conda import CondaInstallStep

        steps.append(CondaInstallStep())
    if lock.pypi:
        from envforge.steps.pypi import PypiInstallStep

        steps.append(PypiInstallStep())
    if inputs.compiler is not None:
        from envforge.steps.compiler import CompilerStep

        steps.append(CompilerStep())
    if lock.expect.cuda is not None:
        from envforge.steps.cuda import CudaToolkitStep

        steps.append(CudaToolkitStep())
        cudnn = next((a for a in lock.artifacts if a.role == "cudnn"), None)
        if cudnn is not None:
            from envforge.steps.cudnn import CudnnInstallStep

            steps.append(CudnnInstallStep(cudnn))
    for pack in ctx.registry.locked(lock.expect.packs):
        steps.extend(pack.steps(ctx))
    steps.append(ActivationStep())
    if PLATFORMS[ctx.platform].os is Os.WINDOWS and inputs.path_scope == "user":
        if registry is None:
            from envforge.host.windows import host_registry

            registry = host_registry()
        if registry is not None:
            from envforge.steps.userpath import UserPathStep

            steps.append(UserPathStep(registry))
    return steps


def make_plan(ctx: StepContext, steps: Sequence[Step], *, spec: str) -> Plan:
    """Each step planned once, with what the steps before it found (``steps.base.after``)."""
    planned = []
    for step in steps:
        planned.append(plan_step(step, ctx))
        ctx = after(step, ctx)
    return Plan(spec=spec, platform=ctx.platform, prefix=str(ctx.prefix), steps=tuple(planned))


def plan_step(step: Step, ctx: StepContext) -> StepPlan:
    """A step's file actions, or for a step whose work is a tool's, one ``RunStep``."""
    if isinstance(step, PlansActions):
        return step.plan(ctx)
    changes = step.describe(ctx)
    if not changes:
        return StepPlan(step=step.name, changes=())
    run = (RunStep(step=step.name, before=step.observe(ctx)) if isinstance(step, Observes)
           else RunStep(step=step.name, within=str(ctx.layout.prefix)))
    return StepPlan(step=step.name, changes=changes, actions=(run,))


def write_saved_plan(path: Path, saved: SavedPlan) -> None:
    path.write_text(saved.model_dump_json(indent=2) + "\n", encoding="utf-8")


def read_saved_plan(path: Path) -> SavedPlan:
    """A saved plan, or InputError (one line naming the file, and the line or key).

    Its file is read only when it is a regular one under ``PLAN_MAX_BYTES`` (a FIFO or a
    device given as FILE would block or never end), its JSON only when nested at most
    ``PLAN_MAX_DEPTH`` deep, and its types strictly: ``"yes"`` is not a bool."""
    text = _plan_text(path)
    depth = json_depth(text)
    if depth > PLAN_MAX_DEPTH:
        raise InputError(f"{path}: not a plan: its JSON nests {depth} deep (a plan: at most "
                         f"{PLAN_MAX_DEPTH})")
    try:
        data = json.loads(text)
    except ValueError as exc:
        line = getattr(exc, "lineno", "?")
        raise InputError(f"{path}:{line}: not a plan (JSON): {exc}") from None
    if isinstance(data, dict) and data.get("format") not in (None, PLAN_FORMAT):
        raise InputError(f"{path}: format: {data.get('format')!r}, this envforge reads plans of "
                         f"format {PLAN_FORMAT}; make the plan again")
    if isinstance(data, dict) and data.get("envforge") not in (None, __version__):
        raise InputError(f"{path}: envforge: made by envforge {data.get('envforge')}, this is "
                         f"{__version__}; make the plan again (`envforge plan SPEC -o {path}`)")
    try:
        return SavedPlan.model_validate_json(text, strict=True)
    except ValidationError as exc:
        error = exc.errors()[0]
        key = ".".join(str(part) for part in error["loc"]) or "(top)"
        raise InputError(f"{path}: {key}: {error['msg']}") from None


def _plan_text(path: Path) -> str:
    try:
        return read_input_file(path, PLAN_MAX_BYTES).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: cannot read the plan: {exc}") from None


_STRINGS = re.compile(r'"(?:[^"\\]++|\\.)*+"')  # possessive: no backtracking
_BRACKETS = re.compile(r"[\[\]{}]")


def json_depth(text: str) -> int:
    """How deep ``text``'s arrays and objects nest, strings left out: counted before parsing,
    as a document nested 100,000 deep exhausts the parser's recursion."""
    depth = deepest = 0
    for bracket in _BRACKETS.findall(_STRINGS.sub("", text)):
        if bracket in "[{":
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth -= 1
    return deepest


def first_difference(saved: Plan, fresh: Plan) -> str | None:
    """Where ``saved``'s typed actions first differ from ``fresh``'s (the plan the same spec,
    lock and options make now), or None: a saved plan is applied only as the plan envforge
    itself would make, never as written."""
    for old, new in zip_longest(saved.steps, fresh.steps):
        if old is None or new is None or old.step != new.step:
            return (f"step {old.step if old else '(none)'} where the spec plans step "
                    f"{new.step if new else '(none)'}")
        for number, (was, now) in enumerate(zip_longest(old.actions, new.actions), start=1):
            if was != now:
                same = _what(was) == _what(now)
                return (f"step {old.step}, action {number}: {_what(was)}"
                        + (" with other contents or before-state" if same
                           else f" where the spec plans {_what(now)}"))
        if old.artifacts != new.artifacts:
            return f"step {old.step}: other artifacts' sha256"
    return None


def special_file(plan: Plan) -> str | None:
    """The first path an action names (or copies from) that is a FIFO, device or socket:
    checking a before-state reads it, and reading one would block or never end."""
    for planned in plan.steps:
        for action in planned.actions:
            if isinstance(action, RunStep):
                continue
            paths = [action.path, *([action.source] if isinstance(action, CopyFile) else [])]
            for name in paths:
                try:
                    mode = Path(name).lstat().st_mode
                except OSError:
                    continue
                if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode)):
                    return f"step {planned.step}: {name} is a special file"
    return None


def _what(action: Action | None) -> str:
    if action is None:
        return "nothing"
    if isinstance(action, RunStep):
        return f"run {action.step}"
    return f"{action.kind} {action.path}"
