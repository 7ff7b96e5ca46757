"""Applying a spec: its plan made, or a saved plan checked, then performed through the journal.

``commands/apply`` parses the arguments, asks for confirmation and renders; what decides
anything is here: the ``--artifact`` roles, the plan of ``apply SPEC``, the staleness check
that ``apply FILE`` must pass before anything changes (the spec's and the lock's sha256, every
before-state, the actions envforge itself plans now), and the preflight of ``perform``
(places writable, every locked file fetched and checked) before the one executor runs.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from envforge.app.context import prepare
from envforge.app.packs import installed_packs
from envforge.errors import InputError
from envforge.lockfile import artifact_roles, lock_path_for
from envforge.plan import (
    PLAN_FORMAT,
    Plan,
    PlanOptions,
    SavedPlan,
    build_steps,
    first_difference,
    make_plan,
    read_saved_plan,
    special_file,
    write_saved_plan,
)
from envforge.steps.base import Step, StepContext
from envforge.ui import UI


@dataclass(frozen=True, kw_only=True)
class ApplyOptions:
    """One apply's choices, as ``apply SPEC`` takes them (``artifacts``: parse_artifacts')."""

    prefix: Path | None = None
    locks_dir: Path | None = None
    artifacts: Mapping[str, Path] = field(default_factory=dict)
    bundle: Path | None = None
    offline: bool = False
    sync: bool = False


@dataclass(frozen=True)
class Planned:
    """A plan with what performing it needs: the context and steps it was made from, and
    the record ``applied.json`` will hold (spec, prefix, platform, spec_name)."""

    ctx: StepContext
    steps: tuple[Step, ...]
    plan: Plan
    record: dict[str, str]

    def pending(self) -> bool:
        """Something for apply to do: a step's change, or an environment an earlier apply
        left unfinished (killed after its last action, or a ``--sync`` that failed), which
        performing even an empty plan records complete; "nothing to do" would leave verify
        and run refusing it."""
        from envforge.executor import read_record

        if self.plan.pending:
            return True
        record = read_record(self.ctx.state_dir)
        return record is not None and not record.get("complete")


def parse_artifacts(values: Sequence[str]) -> dict[str, Path]:
    """``ROLE=PATH`` values -> {role: resolved file}; InputError for an unknown or repeated
    role, a missing ``=`` or a path that is not a file."""
    found = {}
    roles = artifact_roles(installed_packs())
    for value in values:
        role, sep, path = value.partition("=")
        if not sep or not path:
            raise InputError(f"--artifact {value!r}: expected ROLE=PATH, e.g. cudnn=./cudnn.zip")
        if role not in roles:
            raise InputError(f"--artifact {role}: unknown role (known: {', '.join(roles)})")
        if role in found:
            raise InputError(f"--artifact {role}: given twice")
        if not Path(path).is_file():
            raise InputError(f"--artifact {role}: no such file {path}")
        found[role] = Path(path).resolve()
    return found


def steps_for(ctx: StepContext, *, sync: bool) -> tuple[Step, ...]:
    """The plan's steps; with ``sync``, the PyPI set is also made exactly the lock's."""
    steps = list(build_steps(ctx))
    if sync:
        from envforge.steps.sync import SyncStep

        steps.append(SyncStep())
    return tuple(steps)


def plan_spec(spec: Path, options: ApplyOptions, ui: UI) -> Planned:
    """``apply SPEC``'s plan: refused when another spec owns the prefix or another apply
    holds it now (a plan made meanwhile would be stale before it is shown)."""
    from envforge.executor import check_owner
    from envforge.journal import refuse_if_held

    ctx = prepare(spec, prefix=options.prefix, artifacts=options.artifacts,
                  bundle=options.bundle, offline=options.offline, ui=ui, check_sources=True,
                  locks_dir=options.locks_dir, lock_memo=True)
    spec_file = str(spec.resolve())
    check_owner(ctx.state_dir, spec_file, ctx.prefix)
    refuse_if_held(ctx.state_dir)
    steps = steps_for(ctx, sync=options.sync)
    return Planned(ctx, steps, make_plan(ctx, steps, spec=str(spec)),
                   _record(spec_file, spec.stem, ctx))


def save_plan(output: Path, planned: Planned, spec: Path, options: ApplyOptions) -> None:
    """``plan -o FILE``: the plan with the spec's and the lock's sha256 and the options it
    was made with, for ``apply FILE`` to check."""
    from envforge import __version__
    from envforge.host.archives import sha256_file

    ctx = planned.ctx
    lock = lock_path_for(spec, options.locks_dir).resolve()
    saved_options = PlanOptions(
        prefix=str(ctx.prefix),
        locks_dir=str(options.locks_dir.resolve()) if options.locks_dir else None,
        artifacts={role: str(path) for role, path in options.artifacts.items()},
        bundle=str(ctx.bundle) if ctx.bundle else None, offline=ctx.offline,
        sync=options.sync)
    spec_file = planned.record["spec"]
    write_saved_plan(output, SavedPlan(format=PLAN_FORMAT, envforge=__version__,
                                       spec_file=spec_file,
                                       spec_sha256=sha256_file(Path(spec_file)),
                                       lock_file=str(lock), lock_sha256=sha256_file(lock),
                                       options=saved_options, plan=planned.plan))


def is_saved_plan(path: Path) -> bool:
    """A plan file is JSON (``{``), which no TOML spec starts with."""
    if not path.is_file():  # a FIFO would block here: the spec's reader refuses it
        return False
    try:
        with open(path, "rb") as handle:
            return handle.read(256).lstrip().startswith(b"{")
    except OSError:
        return False


def check_saved(path: Path, ui: UI) -> tuple[Planned, SavedPlan]:
    """``apply FILE``: the saved plan as envforge plans it now, or StalePlanError/InputError
    (exit 2, nothing changed) when the spec, the lock or a before-state changed since it was
    made, or when its actions are not exactly those the spec, lock and options it names plan
    now: a saved plan is a proposal checked against envforge's own, never code run as
    written."""
    from envforge.executor import StalePlanError, check_owner, refuse_stale
    from envforge.host.archives import sha256_file

    saved = read_saved_plan(path)
    for made_from, digest in ((saved.spec_file, saved.spec_sha256),
                              (saved.lock_file, saved.lock_sha256)):
        now = sha256_file(Path(made_from)) if Path(made_from).is_file() else "absent"
        if now != digest:
            raise StalePlanError(f"{path}: the plan is stale: {made_from} changed since the "
                                 f"plan was made (sha256 {digest[:12]}…, now {now[:12]}…); "
                                 "nothing was changed: make the plan again")
    opts = saved.options
    try:  # checked as --artifact is: a known role, a regular file (a FIFO would block)
        artifacts = parse_artifacts([f"{role}={p}" for role, p in opts.artifacts.items()])
    except InputError as exc:
        raise InputError(f"{path}: options.artifacts: {exc}") from None
    ctx = prepare(Path(saved.spec_file), prefix=Path(opts.prefix), artifacts=artifacts,
                  bundle=Path(opts.bundle) if opts.bundle else None, offline=opts.offline,
                  ui=ui, check_sources=True,
                  locks_dir=Path(opts.locks_dir) if opts.locks_dir else None)
    plan = saved.plan
    if (plan.platform, plan.prefix) != (ctx.platform, str(ctx.prefix)):
        raise InputError(f"{path}: made for {plan.platform} at {plan.prefix}, not this host's "
                         f"{ctx.platform} at {ctx.prefix}; make the plan here")
    check_owner(ctx.state_dir, saved.spec_file, ctx.prefix)
    special = special_file(plan)
    if special is not None:
        raise InputError(f"{path}: not a plan envforge makes: {special}; nothing was changed")
    steps = steps_for(ctx, sync=opts.sync)
    try:
        refuse_stale(plan, ctx, steps)
    except StalePlanError as exc:
        raise StalePlanError(f"{path}: {exc}") from None
    fresh = make_plan(ctx, steps, spec=str(path))
    differs = first_difference(plan, fresh)
    if differs is not None:
        raise InputError(f"{path}: not the plan {saved.spec_file} and its lock make: "
                         f"{differs}; nothing was changed: make the plan again")
    # equal actions; the rows shown and performed are envforge's own too
    return Planned(ctx, steps, fresh, _record(saved.spec_file, Path(saved.spec_file).stem,
                                               ctx)), saved


def perform(planned: Planned) -> list[str]:
    """The confirmed plan, performed: places checked writable, locked files fetched and
    checked (each --artifact a step already checked while planning is not hashed again),
    then the one executor. The names of the steps that did something."""
    from envforge.executor import execute
    from envforge.host.lockmemo import keep_held

    ctx, plan = planned.ctx, planned.plan
    writable([ctx.state_dir, *(Path(c.target) for s in plan.steps for c in s.changes)])
    if ctx.bundle is None and not ctx.offline:
        checked = plan.artifacts
        unchecked = {r: p for r, p in ctx.artifacts.items() if r not in checked}
        fetched = ctx.sources.prefetch(replace(ctx, artifacts=unchecked))
        ctx = replace(ctx, artifacts={**fetched, **{r: p for r, p in ctx.artifacts.items()
                                                    if r in checked}})
    ran = execute(ctx, planned.steps, record=dict(planned.record), plan=plan)
    keep_held()  # the lock's check, passed at planning: the next apply reads its answer
    return ran


def writable(targets: Sequence[Path]) -> None:
    """Refuse (OSError, one line, exit 1) before the first change when a place apply will
    write is on a read-only file system or not writable: nothing half-done."""
    for target in targets:
        if not target.is_absolute():
            continue  # a registry value (win-64 user PATH), not a file
        probe = target
        while not os.path.lexists(probe) and probe != probe.parent:
            probe = probe.parent
        if probe.is_symlink() or not probe.is_dir():
            probe = probe.parent
        if os.access(probe, os.W_OK):
            continue
        readonly = hasattr(os, "statvfs") and os.statvfs(probe).f_flag & os.ST_RDONLY
        code = errno.EROFS if readonly else errno.EACCES
        raise OSError(code, os.strerror(code), str(probe))


def _record(spec_file: str, spec_name: str, ctx: StepContext) -> dict[str, str]:
    return {"spec": spec_file, "prefix": str(ctx.prefix), "platform": ctx.platform,
            "spec_name": spec_name}
