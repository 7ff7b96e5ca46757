"""``envforge plan|apply|rollback|status|run``: a lock made real on this host, and undone."""

from __future__ import annotations

import argparse
import errno
import hashlib
import os
import re
import shutil
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import get_args

from envforge.commands import Common
from envforge.commands.lock import ensure_fresh
from envforge.envlayout import layout_for
from envforge.envvars import apply_edits
from envforge.errors import ExitCode, InputError
from envforge.lockcheck import check_lock
from envforge.lockfile import LockedArtifact, load_lock, lock_path_for
from envforge.paths import EnvforgeDirs, envforge_dirs
from envforge.plan import Plan, build_steps, make_plan
from envforge.platforms import host_platform
from envforge.spec import Platform, Spec, load_spec
from envforge.steps.base import Step, StepContext
from envforge.ui import UI


def default_prefix(spec: Spec, dirs: EnvforgeDirs, platform: Platform) -> Path:
    """conda: the conda installation's envs folder when there is one; else envforge's data."""
    pspec = spec.for_platform(platform)
    if pspec.environment.kind == "conda":
        from envforge.host.conda_install import conda_envs_dir

        envs = conda_envs_dir()
        if envs is not None:
            return envs / (pspec.environment.name or spec.name)
    return dirs.data / "envs" / spec.name


def env_id(prefix: Path) -> str:
    """The state folder's name: an environment is its prefix, whichever spec applied it."""
    label = re.sub(r"[^A-Za-z0-9._-]", "_", prefix.name)[:40] or "env"
    return f"{label}-{hashlib.sha256(str(prefix).encode()).hexdigest()[:10]}"


def state_dir_for(dirs: EnvforgeDirs, spec_name: str, prefix: Path) -> Path:
    """The prefix's state folder; one named after the spec by an older envforge still counts."""
    state = dirs.env_state(env_id(prefix))
    older = dirs.env_state(f"{spec_name}-{hashlib.sha256(str(prefix).encode()).hexdigest()[:10]}")
    return older if not state.exists() and older.is_dir() else state


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


def prepare(spec_path: Path, *, prefix: Path | None, artifacts: Mapping[str, Path],
            bundle: Path | None, offline: bool, ui: UI,
            environ: Mapping[str, str] | None = None, home: Path | None = None,
            locks_dir: Path | None = None, check_sources: bool = False) -> StepContext:
    """Spec + fresh lock + host facts -> the context every step reads.

    With ``check_sources`` and a bundle or ``offline``, every locked file is checked to be at
    hand and unaltered first (ArtifactError, exit 2, before anything changes)."""
    spec = load_spec(spec_path)
    platform = host_platform().name
    if platform not in spec.project.platforms:
        raise InputError(f"{spec_path}: this host is {platform}, which the spec does not target")
    lock_path = lock_path_for(spec_path, locks_dir)
    lock = load_lock(lock_path)
    ensure_fresh(spec, lock, lock_path)
    check_lock(spec, lock, lock_path)
    if platform not in lock.platforms:
        raise InputError(f"{lock_path} has no {platform} section; run `envforge lock`")
    env = dict(os.environ if environ is None else environ)
    dirs = envforge_dirs(env)
    prefix = (prefix or default_prefix(spec, dirs, platform)).absolute()
    pspec = spec.for_platform(platform)
    plock = lock.platforms[platform]
    unused = sorted(set(artifacts) - {a.role for a in plock.artifacts})
    if unused:
        raise InputError(f"--artifact {unused[0]}: {lock_path} locks no {unused[0]} archive for "
                         f"{platform}, so the file would not be used; leave it out")
    ctx = StepContext(
        platform=platform, prefix=prefix, environ=env, home=home or Path.home(),
        state_dir=state_dir_for(dirs, spec.name, prefix), artifacts=dict(artifacts),
        lock=plock, pspec=pspec, layout=layout_for(platform, plock.environment, prefix,
                                                   plock.python),
        dirs=dirs, ui=ui, bundle=bundle.resolve() if bundle else None, offline=offline,
        pypi_index=lock.meta.pypi_index or "https://pypi.org/simple",
    )
    if check_sources and (ctx.bundle is not None or offline):
        from envforge.bundle.sources import preflight

        ctx = _replace(ctx, artifacts=preflight(ctx, lock))
    if pspec.cuda is not None:
        from envforge.errors import StepError
        from envforge.steps.cuda import select_toolkit

        try:
            root = select_toolkit(ctx).root
        except StepError:
            root = None  # the CUDA step reports it with the remedy
        ctx = _replace(ctx, cuda_root=root)
    return ctx


def _replace(ctx: StepContext, **changes: object) -> StepContext:
    from dataclasses import replace

    return replace(ctx, **changes)  # type: ignore[arg-type]


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
    from envforge.executor import check_owner, execute
    from envforge.noop import NoopProbe

    probe = NoopProbe(args, Path(args.spec), lock_path_for(Path(args.spec), args.locks_dir))
    ctx = prepare(Path(args.spec), prefix=args.prefix, artifacts=parse_artifacts(args.artifact),
                  bundle=args.bundle, offline=args.offline, ui=ui, check_sources=True,
                  locks_dir=args.locks_dir)
    spec_file = str(Path(args.spec).resolve())
    check_owner(ctx.state_dir, spec_file, ctx.prefix)
    steps = _steps(ctx, sync=getattr(args, "sync", False))
    plan = make_plan(ctx, steps, spec=args.spec)
    dry = getattr(args, "dry_run", False) or args.command == "plan"
    if ui.json and dry:
        ui.document("plan", {"plan": plan.model_dump(mode="json"), "pending": plan.pending})
    elif dry or not args.yes:
        show_plan(plan, ui)
    if dry:
        return int(ExitCode.PENDING if plan.pending else ExitCode.OK)
    if not plan.pending:
        ui.success(f"{args.spec}: nothing to do ({ctx.prefix})")
        probe.save(ctx, steps, f"{args.spec}: nothing to do ({ctx.prefix})")
        if ui.json:
            ui.document("apply", {"prefix": str(ctx.prefix), "ran": [], "changed": False})
        return 0
    if not args.yes and not _confirm(ui):
        ui.info("nothing changed")
        return int(ExitCode.PENDING)
    writable([ctx.state_dir, *(Path(c.target) for s in plan.steps for c in s.changes)])
    if ctx.bundle is None and not ctx.offline:
        from envforge.bundle.sources import prefetch

        ctx = _replace(ctx, artifacts=prefetch(ctx))
        steps = _steps(ctx, sync=getattr(args, "sync", False))
    record = {"spec": spec_file, "prefix": str(ctx.prefix),
              "platform": ctx.platform, "spec_name": Path(args.spec).stem}
    ran = execute(ctx, steps, record=record)
    if ui.json:
        ui.document("apply", {"prefix": str(ctx.prefix), "ran": ran, "changed": bool(ran)})
    ui.success(f"applied {args.spec} into {ctx.prefix} ({', '.join(ran)})")
    return 0


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


def _confirm(ui: UI) -> bool:
    if not sys.stdin.isatty():
        ui.error("changes pending and no terminal to confirm them: pass --yes")
        return False
    return input("apply these changes? [y/N] ").strip().lower() in ("y", "yes")


def run_rollback(args: argparse.Namespace, ui: UI) -> int:
    spec = load_spec(args.spec)
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
    """What an undo left alone is a warning: a changed file kept, a record --force skipped."""
    from envforge.journal import KEPT, LOST

    for line in undone:
        if line.startswith((KEPT, LOST)):
            ui.warn(line)


def run_status(args: argparse.Namespace, ui: UI) -> int:
    from envforge.executor import DamagedStateError, read_record

    dirs = envforge_dirs()
    rows = []
    if dirs.state.is_dir():
        for state in sorted(dirs.state.iterdir()):
            try:
                record = read_record(state)
            except DamagedStateError as exc:
                record = {"prefix": None, "state": str(exc.path), "complete": False,
                          "damaged": str(exc)}
            if record is not None:
                rows.append({**record, "drift": _drift(record)})
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


def _drift(record: Mapping[str, object]) -> dict[str, object]:
    """The environment's PyPI packages against its lock (envforge/drift.py)."""
    from envforge.drift import find_drift
    from envforge.errors import EnvforgeError

    try:
        spec_path = Path(str(record["spec"]))
        platform: Platform = record["platform"]  # type: ignore[assignment]
        plock = load_lock(lock_path_for(spec_path)).platforms[platform]
        prefix = Path(str(record["prefix"]))
        site = Path(layout_for(platform, plock.environment, prefix, plock.python).site_packages)
    except (EnvforgeError, KeyError, OSError) as exc:
        return {"summary": f"not checked ({str(exc).splitlines()[0]})"}
    drift = find_drift(site, plock.pypi, also_expected=[c.name for c in plock.conda])
    return {"summary": drift.summary(), "extra": drift.extra,
            "other_version": drift.other_version, "modified": drift.modified,
            "missing": drift.missing}


def run_in_env(args: argparse.Namespace, ui: UI) -> int:
    from envforge.steps.activation import load_edits

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
    try:
        edits = load_edits(ctx.prefix)
    except (OSError, ValueError):
        raise InputError(f"{args.spec}: not applied at {ctx.prefix}: run `envforge apply "
                         f"{args.spec}` first") from None
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
        parser.add_argument("spec")
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
        "THEANORC). Put `--` before COMMAND so its own options are not taken for envforge's. "
        "Ctrl-C and SIGTERM reach COMMAND, envforge waits for it and exits with its status "
        "(128+N when signal N ended it).")
    run.add_argument("spec")
    run.add_argument("--prefix", type=Path)
    run.add_argument("--locks-dir", type=Path, default=None)
    run.add_argument("cmd", nargs=argparse.REMAINDER)
    common(run)
    run.set_defaults(handler=run_in_env)
