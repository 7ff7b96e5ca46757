"""``envforge plan|apply|rollback|status|run``: a lock made real on this host, and undone.

``apply SPEC`` plans and performs that plan; ``plan SPEC -o FILE`` saves the plan and
``apply FILE`` performs a saved one after checking that the lock and every before-state
are still what the plan was made against."""

from __future__ import annotations

import argparse
import errno
import os
import shutil
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import get_args

from envforge.app.context import default_prefix, prepare, state_dir_for
from envforge.app.packs import installed_packs
from envforge.commands import Common
from envforge.envvars import apply_edits
from envforge.errors import ExitCode, InputError
from envforge.host.outputs import check_output
from envforge.inputfile import check_regular_input
from envforge.lockfile import LockedArtifact, lock_path_for
from envforge.paths import envforge_dirs
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
from envforge.platforms import host_platform
from envforge.spec import load_spec
from envforge.steps.base import Step, StepContext
from envforge.ui import UI


def parse_artifacts(values: Sequence[str]) -> dict[str, Path]:
    found = {}
    roles = get_args(LockedArtifact.model_fields["role"].annotation)
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


def show_plan(plan: Plan, ui: UI) -> None:
    rows = []
    for step in plan.steps:
        if not step.changes:
            rows.append([step.step, "—", "nothing to do", ""])
        for change in step.changes:
            before_after = f"{change.before or '∅'} → {change.after or '…'}" \
                if (change.before or change.after) else ""
            rows.append([step.step, change.action, _short(change.target, plan.prefix),
                         before_after])
    ui.table(f"plan for {plan.spec} in {plan.prefix}", ["step", "action", "target", "change"],
             rows)
    for step in plan.steps:
        for change in step.changes:
            if change.detail.startswith("---"):
                ui.info(change.detail)


def _short(target: str, prefix: str) -> str:
    """Targets inside the environment are shown relative to it; the title names the prefix."""
    return "<env>" + target[len(prefix):] if target.startswith(prefix) else target


def _steps(ctx: StepContext, *, sync: bool) -> list[Step]:
    """The plan's steps; with ``sync``, the PyPI set is also made exactly the lock's."""
    steps = list(build_steps(ctx))
    if sync:
        from envforge.steps.sync import SyncStep

        steps.append(SyncStep())
    return steps


def run_apply(args: argparse.Namespace, ui: UI) -> int:
    check_regular_input(Path(args.spec), "spec or saved plan")  # a FIFO is refused before opened
    if args.command == "apply" and is_saved_plan(Path(args.spec)):
        return run_saved(args, ui)
    from envforge.executor import check_owner
    from envforge.journal import refuse_if_held
    from envforge.noop import NoopProbe

    lock_file = lock_path_for(Path(args.spec), args.locks_dir)
    probe = NoopProbe(args, Path(args.spec), lock_file)
    supplied = parse_artifacts(args.artifact)
    output = getattr(args, "output", None)
    if output is not None:
        check_output(output, inputs=[Path(args.spec), lock_file, *supplied.values()])
    ctx = prepare(Path(args.spec), prefix=args.prefix, artifacts=supplied,
                  bundle=args.bundle, offline=args.offline, ui=ui, check_sources=True,
                  locks_dir=args.locks_dir)
    spec_file = str(Path(args.spec).resolve())
    check_owner(ctx.state_dir, spec_file, ctx.prefix)
    refuse_if_held(ctx.state_dir)  # a plan made while another apply runs would be stale
    sync = getattr(args, "sync", False)
    steps = _steps(ctx, sync=sync)
    plan = make_plan(ctx, steps, spec=args.spec)
    if output is not None:
        _save(output, plan, ctx, args, supplied, spec_file=spec_file, sync=sync)
    dry = getattr(args, "dry_run", False) or args.command == "plan"
    if ui.json and dry:
        document = {"plan": plan.model_dump(mode="json"), "pending": plan.pending}
        ui.document("plan", {**document, "saved": str(output)} if output else document)
    elif dry or not args.yes:
        show_plan(plan, ui)
    if output is not None:
        ui.info(f"wrote the plan to {output}: `envforge apply {output}` applies exactly it")
    if dry:
        return int(ExitCode.PENDING if plan.pending else ExitCode.OK)
    if not plan.pending:
        ui.success(f"{args.spec}: nothing to do ({ctx.prefix})")
        probe.save(ctx, steps, f"{args.spec}: nothing to do ({ctx.prefix})")
        if ui.json:
            ui.document("apply", {"prefix": str(ctx.prefix), "ran": [], "changed": False})
        ui.next(verify_next(args.spec, args.prefix))
        return 0
    if not args.yes and not ui.confirm("apply these changes?", what="changes"):
        ui.info("nothing changed")
        return int(ExitCode.PENDING)
    record = {"spec": spec_file, "prefix": str(ctx.prefix),
              "platform": ctx.platform, "spec_name": Path(args.spec).stem}
    return _perform(ctx, steps, plan, record, args.spec, ui, spec=args.spec,
                    prefix=args.prefix)


def _perform(ctx: StepContext, steps: Sequence[Step], plan: Plan, record: dict[str, str],
             what: str, ui: UI, *, spec: str, prefix: str | Path | None) -> int:
    """The confirmed plan, performed: places checked writable, locked files fetched and
    checked (each --artifact a step already checked while planning is not hashed again),
    then the one executor."""
    from envforge.executor import execute

    writable([ctx.state_dir, *(Path(c.target) for s in plan.steps for c in s.changes)])
    if ctx.bundle is None and not ctx.offline:
        checked = plan.artifacts
        unchecked = {r: p for r, p in ctx.artifacts.items() if r not in checked}
        fetched = ctx.sources.prefetch(replace(ctx, artifacts=unchecked))
        ctx = replace(ctx, artifacts={**fetched, **{r: p for r, p in ctx.artifacts.items()
                                                    if r in checked}})
    ran = execute(ctx, steps, record=record, plan=plan)
    if ui.json:
        ui.document("apply", {"prefix": str(ctx.prefix), "ran": ran, "changed": bool(ran)})
    ui.success(f"applied {what} into {ctx.prefix} ({', '.join(ran)})")
    ui.next(verify_next(spec, prefix))
    return 0


def verify_next(spec: str, prefix: str | Path | None) -> str:
    """The verify command for what apply made, with apply's --prefix where one was given."""
    return f"envforge verify {spec}" + (f" --prefix {prefix}" if prefix else "")


def _save(output: Path, plan: Plan, ctx: StepContext, args: argparse.Namespace,
          supplied: dict[str, Path], *, spec_file: str, sync: bool) -> None:
    from envforge.host.archives import sha256_file

    lock = lock_path_for(Path(args.spec), args.locks_dir).resolve()
    options = PlanOptions(prefix=str(ctx.prefix),
                          locks_dir=str(args.locks_dir.resolve()) if args.locks_dir else None,
                          artifacts={role: str(path) for role, path in supplied.items()},
                          bundle=str(ctx.bundle) if ctx.bundle else None, offline=ctx.offline,
                          sync=sync)
    from envforge import __version__

    write_saved_plan(output, SavedPlan(format=PLAN_FORMAT, envforge=__version__,
                                       spec_file=spec_file,
                                       spec_sha256=sha256_file(Path(spec_file)),
                                       lock_file=str(lock),
                                       lock_sha256=sha256_file(lock), options=options,
                                       plan=plan))


def is_saved_plan(path: Path) -> bool:
    """A plan file is JSON (``{``), which no TOML spec starts with."""
    if not path.is_file():  # a FIFO would block here: the spec's reader refuses it
        return False
    try:
        with open(path, "rb") as handle:
            return handle.read(256).lstrip().startswith(b"{")
    except OSError:
        return False


def run_saved(args: argparse.Namespace, ui: UI) -> int:
    """``apply FILE``: the saved plan, refused (exit 2, nothing changed) when the lock or a
    before-state changed since it was made, or when its actions are not exactly those the
    spec, lock and options it names plan now (planned as ``apply SPEC`` plans): a saved plan
    is a proposal checked against envforge's own, never code run as written."""
    from envforge.executor import StalePlanError, check_owner, refuse_stale
    from envforge.host.archives import sha256_file

    path = Path(args.spec)
    given = [flag for flag, value in (("--prefix", args.prefix), ("--locks-dir", args.locks_dir),
                                      ("--artifact", args.artifact), ("--bundle", args.bundle),
                                      ("--offline", args.offline), ("--sync", args.sync),
                                      ("--dry-run", args.dry_run)) if value]
    if given:
        raise InputError(f"{path}: a saved plan holds its own options; {given[0]} cannot "
                         "change it (make the plan again with it)")
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
    steps = _steps(ctx, sync=opts.sync)
    try:
        refuse_stale(plan, ctx, steps)
    except StalePlanError as exc:
        raise StalePlanError(f"{path}: {exc}") from None
    fresh = make_plan(ctx, steps, spec=str(path))
    differs = first_difference(plan, fresh)
    if differs is not None:
        raise InputError(f"{path}: not the plan {saved.spec_file} and its lock make: "
                         f"{differs}; nothing was changed: make the plan again")
    plan = fresh  # equal actions; its rows are envforge's own too
    if not args.yes:
        show_plan(plan, ui)
    if not plan.pending:
        ui.success(f"{path}: nothing to do ({ctx.prefix})")
        if ui.json:
            ui.document("apply", {"prefix": str(ctx.prefix), "ran": [], "changed": False})
        return 0
    if not args.yes and not ui.confirm("apply these changes?", what="changes"):
        ui.info("nothing changed")
        return int(ExitCode.PENDING)
    record = {"spec": saved.spec_file, "prefix": str(ctx.prefix), "platform": ctx.platform,
              "spec_name": Path(saved.spec_file).stem}
    return _perform(ctx, steps, plan, record, str(path), ui, spec=saved.spec_file,
                    prefix=opts.prefix)


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


def run_rollback(args: argparse.Namespace, ui: UI) -> int:
    spec = load_spec(args.spec, installed_packs())
    dirs = envforge_dirs()
    prefix = (args.prefix or default_prefix(spec, dirs, host_platform().name)).absolute()
    state = state_dir_for(dirs, spec.name, prefix)
    if not any((state / name).exists() for name in ("journal.jsonl", "applied.json")):
        ui.success(f"{args.spec}: nothing applied at {prefix}")
        return 0
    from envforge.executor import check_owner, undo

    spec_file = str(Path(args.spec).resolve())
    if not args.force:
        check_owner(state, spec_file, prefix)  # before waiting on a running apply's lock
    undone = undo(state, spec=spec_file, force=args.force)
    if ui.json:
        ui.document("rollback", {"prefix": str(prefix), "undone": undone})
    report_undone(undone, ui)
    ui.success(f"rolled back {len(undone)} change(s) for {args.spec} at {prefix}")
    return 0


def report_undone(undone: Sequence[str], ui: UI) -> None:
    """What an undo left alone is a warning: a changed file kept, a record --force skipped;
    a file handed over to a later apply's rollback is said."""
    from envforge.journal import HANDED, KEPT, LOST

    for line in undone:
        if line.startswith((KEPT, LOST)):
            ui.warn(line)
        elif line.startswith(HANDED):
            ui.info(line)


def run_status(args: argparse.Namespace, ui: UI) -> int:
    from envforge.app.status import environments

    rows = environments(envforge_dirs())
    if ui.json:
        ui.document("status", {"environments": rows})
    else:
        ui.table("environments applied by envforge",
                 ["spec", "prefix", "platform", "state", "packages"],
                 [[r.get("spec_name"), r.get("prefix"), r.get("platform"),
                   "damaged: rollback --force" if r.get("damaged") else "applied"
                   if r.get("complete") else "incomplete (apply again or roll back)",
                   r["drift"]["summary"]] for r in rows])
        for r in rows:
            for kind in ("extra", "other_version", "modified", "missing"):
                for item in r["drift"].get(kind, [])[:20]:
                    ui.info(f"{r.get('spec_name')}: {kind.replace('_', ' ')}: {item}")
    return 0


def run_in_env(args: argparse.Namespace, ui: UI) -> int:
    from envforge.app.verification import applied_edits

    words = list(args.cmd)
    prefix = args.prefix
    locks_dir = args.locks_dir
    if "--" in words:  # envforge's own options may sit between SPEC and "--"
        options, words = words[: words.index("--")], words[words.index("--") + 1:]
        parsed = argparse.ArgumentParser(prog="envforge run", add_help=False)
        parsed.add_argument("--prefix", type=Path)
        parsed.add_argument("--locks-dir", type=Path)
        known, unknown = parsed.parse_known_args(options)
        if unknown:
            raise InputError(f"envforge run: unknown option {unknown[0]!r} before '--'")
        prefix = known.prefix or prefix
        locks_dir = known.locks_dir or locks_dir
    if not words:
        raise InputError(f"{RUN_USAGE}: no command given")
    ctx = prepare(Path(args.spec), prefix=prefix, artifacts={}, bundle=None, offline=True, ui=ui,
                  locks_dir=locks_dir)
    edits = applied_edits(ctx, args.spec, f" --prefix {prefix}" if prefix else "")
    env = apply_edits(edits, os.environ, pathsep=os.pathsep)
    _refuse_outside_pip(words[0], Path(ctx.layout.python).parent, args.spec)
    if shutil.which(words[0], path=env.get("PATH")) is None:
        raise InputError(f"envforge run: {words[0]}: command not found in the environment "
                         f"({ctx.prefix}) or on PATH")
    from envforge.host.child import run_child

    return run_child(words, env)


def _refuse_outside_pip(command: str, bin_dir: Path, spec: str) -> None:
    """``pip`` from the host's PATH would install into the host, not the environment."""
    name = Path(command).name.removesuffix(".exe")
    is_pip = (name.startswith("pip") and name.removeprefix("pip").replace(".", "").isdigit()) \
        or name == "pip"
    if is_pip and not any((bin_dir / f"{name}{ext}").is_file() for ext in ("", ".exe")):
        raise InputError(f"envforge run: the environment has no {name} (the host's would "
                         f"install outside it): add \"pip\" to [pypi] packages in {spec} and "
                         "lock and apply again, or install through the spec")


RUN_USAGE = "envforge run SPEC [--prefix P] [--locks-dir D] -- COMMAND [ARGS...]"


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser], common: Common) -> None:
    for name, help_text in (("apply", "provision the environment a spec's lock describes"),
                            ("plan", "show what apply would change, and change nothing")):
        parser = sub.add_parser(name, help=help_text)
        parser.add_argument("spec", help="the spec; for apply also a plan saved by `envforge "
                            "plan SPEC -o FILE`" if name == "apply" else "the spec")
        parser.add_argument("--prefix", type=Path, help="where the environment goes")
        parser.add_argument("--locks-dir", type=Path, default=None,
                            help="where the lock is (default: locks/ beside the specs folder)")
        parser.add_argument("--artifact", action="append", default=[], metavar="ROLE=PATH",
                            help="a file you downloaded, e.g. cudnn=cudnn-10.2-...zip")
        parser.add_argument("--bundle", type=Path, metavar="DIR",
                            help="provision from a bundle (`envforge bundle`), no network")
        parser.add_argument("--offline", action="store_true",
                            help="no network: use only envforge's cache")
        parser.add_argument("--sync", action="store_true",
                            help="also uninstall what the lock does not name and reinstall "
                                 "locked packages whose files changed")
        if name == "apply":
            parser.add_argument("--dry-run", action="store_true", help="same as plan")
        else:
            parser.add_argument("-o", "--output", type=Path, metavar="FILE",
                                help="also save the plan (JSON) for `envforge apply FILE`")
        parser.add_argument("-y", "--yes", action="store_true", help="do not ask")
        common(parser)
        parser.set_defaults(handler=run_apply)

    rollback = sub.add_parser("rollback", help="undo what apply changed, byte for byte")
    rollback.add_argument("spec")
    rollback.add_argument("--prefix", type=Path)
    rollback.add_argument("--force", action="store_true",
                          help="go past a damaged journal or record, a missing backup or "
                               "another spec's claim; lists what it could not restore")
    common(rollback)
    rollback.set_defaults(handler=run_rollback)

    status = sub.add_parser("status", help="what envforge has applied on this host")
    common(status)
    status.set_defaults(handler=run_status)

    run = sub.add_parser(
        "run", help="run a command inside an applied environment", usage=RUN_USAGE,
        description="Runs COMMAND with the environment's variables (PATH, library path, "
        "each framework's own). Put `--` before COMMAND so its own options are not taken "
        "for envforge's. "
        "Ctrl-C and SIGTERM reach COMMAND, envforge waits for it and exits with its status "
        "(128+N when signal N ended it).")
    run.add_argument("spec")
    run.add_argument("--prefix", type=Path)
    run.add_argument("--locks-dir", type=Path, default=None)
    run.add_argument("cmd", nargs=argparse.REMAINDER)
    common(run)
    run.set_defaults(handler=run_in_env)
