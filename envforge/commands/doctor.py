"""``envforge doctor [SPEC] [--fix [--dry-run] [--yes]] [--undo] [--json] [--report FILE]``.

Observe the host once, judge it (against the spec's lock when one is given), show the
findings, exit 1 when any is an error. ``--fix`` shows the safe fixes as a plan, then
makes them through doctor's journal; ``--undo`` rolls them back.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from rich.markup import escape

from envforge.app.diagnose import examine
from envforge.app.doctorfixes import apply_fixes, plan_fixes, state_dir, undo_fixes
from envforge.app.packs import installed_packs
from envforge.commands import Common
from envforge.commands.apply import show_plan
from envforge.doctor import Finding, HostFacts, doctor_report_markdown, fix_steps, has_errors
from envforge.doctor.report import host_rows
from envforge.errors import ExitCode
from envforge.paths import envforge_dirs
from envforge.ui import UI


def _show(facts: HostFacts, findings: tuple[Finding, ...], ui: UI) -> None:
    ui.table("this host", ["", ""], host_rows(facts))
    if not findings:
        ui.success("doctor found nothing to report")
        return
    for f in findings:
        rows = [["evidence", f"{e.where}\n{e.text}" if e.kind == "command" else
                 f"{e.where}: {e.text}"] for e in f.evidence]
        if f.fix is not None:
            rows.append(["fix" + (" (--fix)" if f.fix.safe else ""), f.fix.text])
        rows.append(["source", f.source])
        ui.table(escape(f"{f.severity.upper()} {f.id}: {f.title}"), ["", ""], rows)
    errors = sum(f.severity == "error" for f in findings)
    ui.info(f"envforge doctor: {errors} error(s), {len(findings) - errors} other finding(s)")


def _exit(findings: tuple[Finding, ...]) -> int:
    return int(ExitCode.FAILED if has_errors(findings) else ExitCode.OK)


def _document(ui: UI, facts: HostFacts, findings: tuple[Finding, ...], **extra: object) -> None:
    ui.document("doctor", {"findings": [f.model_dump(mode="json") for f in findings],
                           "errors": sum(f.severity == "error" for f in findings),
                           "facts": facts.model_dump(mode="json"), **extra})


def run_doctor(args: argparse.Namespace, ui: UI) -> int:
    environ = dict(os.environ)
    state = state_dir(envforge_dirs(environ))
    if args.undo:
        undone = undo_fixes(state, force=args.force)
        if ui.json:
            ui.document("doctor-undo", {"undone": undone})
        from envforge.journal import KEPT, LOST

        for line in undone:
            (ui.warn if line.startswith((KEPT, LOST)) else ui.info)(line)
        ui.success(f"rolled back {len(undone)} change(s) made by `envforge doctor --fix`")
        return 0
    cwd = Path.cwd()
    facts, findings, _ = examine(args.spec, args.prefix, environ=environ, cwd=cwd)
    if args.report:
        args.report.write_text(doctor_report_markdown(findings, facts), encoding="utf-8")
    if not args.fix:
        if ui.json:
            _document(ui, facts, findings)
        else:
            _show(facts, findings, ui)
        return _exit(findings)
    steps = fix_steps(findings, installed_packs())
    plan = plan_fixes(steps, platform=facts.platform, where="this host")
    if not ui.json:
        _show(facts, findings, ui)
        if steps:
            show_plan(plan, ui)
    if args.dry_run:
        if ui.json:
            _document(ui, facts, findings, plan=plan.model_dump(mode="json"),
                      pending=plan.pending)
        return int(ExitCode.PENDING) if plan.pending else _exit(findings)
    if not plan.pending:
        ui.info("no safe fixes to apply")
        if ui.json:
            _document(ui, facts, findings, fixed=[])
        return _exit(findings)
    if not args.yes and not ui.confirm("apply these fixes?", what="fixes"):
        ui.info("nothing changed")
        return int(ExitCode.PENDING)
    ran = apply_fixes(plan, state)
    ui.success(f"applied {len(ran)} fix step(s); `envforge doctor --undo` puts them back")
    facts, findings, _ = examine(args.spec, args.prefix, environ=environ, cwd=cwd)
    if args.report:
        args.report.write_text(doctor_report_markdown(findings, facts), encoding="utf-8")
    if ui.json:
        _document(ui, facts, findings, fixed=ran)
    else:
        _show(facts, findings, ui)
    return _exit(findings)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser], common: Common) -> None:
    parser = sub.add_parser(
        "doctor",
        help="diagnose this host: driver, CUDA, cuDNN, compilers, each framework's config")
    parser.add_argument("spec", nargs="?", help="judge the host against this spec's lock")
    parser.add_argument("--prefix", type=Path,
                        help="the environment to judge (default: the spec's, else the "
                             "active VIRTUAL_ENV or CONDA_PREFIX)")
    parser.add_argument("--fix", action="store_true",
                        help="apply the safe fixes (the plan is shown first)")
    parser.add_argument("--dry-run", action="store_true",
                        help="with --fix: show the plan, change nothing (exit 3 if any)")
    parser.add_argument("-y", "--yes", action="store_true", help="do not ask")
    parser.add_argument("--undo", action="store_true",
                        help="roll back everything `doctor --fix` changed")
    parser.add_argument("--force", action="store_true",
                        help="with --undo: go past a damaged journal or a missing backup, "
                             "listing what it could not restore")
    parser.add_argument("--report", type=Path, metavar="FILE.md",
                        help="also write the findings as Markdown")
    common(parser)
    parser.set_defaults(handler=run_doctor)
