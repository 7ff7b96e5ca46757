"""``envforge plan|apply|rollback|status|run``: a lock made real on this host, and undone.

``apply SPEC`` plans and performs that plan; ``plan SPEC -o FILE`` saves the plan and
``apply FILE`` performs a saved one after checking that the lock and every before-state
are still what the plan was made against."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from envforge.app.applying import (
    ApplyOptions,
    Planned,
    check_saved,
    is_saved_plan,
    parse_artifacts,
    perform,
    plan_spec,
    save_plan,
)
from envforge.commands import Common
from envforge.errors import ExitCode, InputError
from envforge.host.outputs import check_output
from envforge.inputfile import check_regular_input
from envforge.lockfile import lock_path_for
from envforge.paths import envforge_dirs
from envforge.plan import Plan
from envforge.ui import UI


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


def run_apply(args: argparse.Namespace, ui: UI) -> int:
    spec = Path(args.spec)
    check_regular_input(spec, "spec or saved plan")  # a FIFO is refused before opened
    if args.command == "apply" and is_saved_plan(spec):
        return run_saved(args, ui)
    from envforge.noop import NoopProbe

    lock_file = lock_path_for(spec, args.locks_dir)
    probe = NoopProbe(args, spec, lock_file)
    options = ApplyOptions(prefix=args.prefix, locks_dir=args.locks_dir,
                           artifacts=parse_artifacts(args.artifact), bundle=args.bundle,
                           offline=args.offline, sync=getattr(args, "sync", False))
    output = getattr(args, "output", None)
    if output is not None:
        check_output(output, inputs=[spec, lock_file, *options.artifacts.values()])
    planned = plan_spec(spec, options, ui)
    plan, ctx = planned.plan, planned.ctx
    if output is not None:
        save_plan(output, planned, spec, options)
    dry = getattr(args, "dry_run", False) or args.command == "plan"
    pending = planned.pending()
    if ui.json and dry:
        document = {"plan": plan.model_dump(mode="json"), "pending": pending}
        ui.document("plan", {**document, "saved": str(output)} if output else document)
    elif dry or not args.yes:
        show_plan(plan, ui)
    if output is not None:
        ui.info(f"wrote the plan to {output}: `envforge apply {output}` applies exactly it")
    if dry:
        if pending and not plan.pending:
            ui.info(f"{ctx.prefix}: an earlier apply did not finish; `envforge apply` records "
                    "it complete (no step has anything left to change)")
        return int(ExitCode.PENDING if pending else ExitCode.OK)
    if not pending:
        ui.success(f"{args.spec}: nothing to do ({ctx.prefix})")
        probe.save(ctx, planned.steps, f"{args.spec}: nothing to do ({ctx.prefix})")
        if ui.json:
            ui.document("apply", {"prefix": str(ctx.prefix), "ran": [], "changed": False})
        ui.next(verify_next(args.spec, args.prefix))
        return 0
    if not args.yes and not ui.confirm("apply these changes?", what="changes"):
        ui.info("nothing changed")
        return int(ExitCode.PENDING)
    return _perform(planned, args.spec, ui, spec=args.spec, prefix=args.prefix)


def _perform(planned: Planned, what: str, ui: UI, *, spec: str,
             prefix: str | Path | None) -> int:
    ran = perform(planned)
    if ui.json:
        ui.document("apply", {"prefix": str(planned.ctx.prefix), "ran": ran,
                              "changed": bool(ran)})
    ui.success(f"applied {what} into {planned.ctx.prefix} ({', '.join(ran)})" if ran else
               f"{what}: nothing left to do; {planned.ctx.prefix} recorded complete")
    ui.next(verify_next(spec, prefix))
    return 0


def verify_next(spec: str, prefix: str | Path | None) -> str:
    """The verify command for what apply made, with apply's --prefix where one was given."""
    return f"envforge verify {spec}" + (f" --prefix {prefix}" if prefix else "")


def run_saved(args: argparse.Namespace, ui: UI) -> int:
    """``apply FILE``: the saved plan, once ``check_saved`` found it still envforge's own
    (exit 2, nothing changed, when not); a saved plan holds its own options."""
    path = Path(args.spec)
    given = [flag for flag, value in (("--prefix", args.prefix), ("--locks-dir", args.locks_dir),
                                      ("--artifact", args.artifact), ("--bundle", args.bundle),
                                      ("--offline", args.offline), ("--sync", args.sync),
                                      ("--dry-run", args.dry_run)) if value]
    if given:
        raise InputError(f"{path}: a saved plan holds its own options; {given[0]} cannot "
                         "change it (make the plan again with it)")
    planned, saved = check_saved(path, ui)
    plan, ctx = planned.plan, planned.ctx
    if not args.yes:
        show_plan(plan, ui)
    if not planned.pending():
        ui.success(f"{path}: nothing to do ({ctx.prefix})")
        if ui.json:
            ui.document("apply", {"prefix": str(ctx.prefix), "ran": [], "changed": False})
        return 0
    if not args.yes and not ui.confirm("apply these changes?", what="changes"):
        ui.info("nothing changed")
        return int(ExitCode.PENDING)
    return _perform(planned, str(path), ui, spec=saved.spec_file, prefix=saved.options.prefix)


def run_rollback(args: argparse.Namespace, ui: UI) -> int:
    from envforge.app.environments import roll_back

    done = roll_back(Path(args.spec), prefix=args.prefix, force=args.force)
    if done.undone is None:
        ui.success(f"{args.spec}: nothing applied at {done.prefix}")
        return 0
    if ui.json:
        ui.document("rollback", {"prefix": str(done.prefix), "undone": list(done.undone)})
    report_undone(done.undone, ui)
    ui.success(f"rolled back {len(done.undone)} change(s) for {args.spec} at {done.prefix}")
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
    from envforge.app.environments import run_in_environment

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
    return run_in_environment(args.spec, words, prefix=prefix, locks_dir=locks_dir, ui=ui)


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
