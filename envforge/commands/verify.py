"""``envforge verify``: parse, call ``app.verification``, render the rows and reports."""

from __future__ import annotations

import argparse
import importlib.util
import json
import time
from pathlib import Path

from rich.text import Text

from envforge.app.context import prepare
from envforge.app.packs import installed_packs
from envforge.app.verification import (
    applied_edits,
    suite_selection,
    verify_environment,
    verify_suite,
)
from envforge.commands import Common
from envforge.errors import InputError
from envforge.ui import UI
from envforge.verify import kernel_timings, verdict


def run_verify(args: argparse.Namespace, ui: UI) -> int:
    from envforge.verify_report import to_html, to_json, to_junit, to_markdown

    if args.suite_workers is not None and args.suite_workers < 1:
        raise InputError(f"--suite-workers {args.suite_workers}: give 1 or more")
    if args.suite_time_limit is not None and args.suite_time_limit < 1:
        raise InputError(f"--suite-time-limit {args.suite_time_limit}: give 1 or more seconds")

    # The lock's kernel references are recomputed where NumPy is (envforge's `resolve`
    # extra); a bundle's envforge has none, and verifies against the lock's as apply read them.
    ctx = prepare(Path(args.spec), prefix=args.prefix, artifacts={}, bundle=None, offline=True,
                  ui=ui, references=importlib.util.find_spec("numpy") is not None)
    prefix = f" --prefix {args.prefix}" if args.prefix else ""
    chosen = suite_selection(ctx) if args.suite else None  # bad arguments first, state next
    applied_edits(ctx, args.spec, prefix)
    started = time.perf_counter()
    ui.info(f"probing {ctx.prefix} (each framework builds its kernels; the first run takes "
            "a while)")
    rows, report = verify_environment(ctx, sync=f"envforge apply {args.spec} --sync{prefix}")
    suite = None
    if chosen is not None:
        suite_rows_, suite = verify_suite(ctx, workers=args.suite_workers,
                                          time_limit_s=args.suite_time_limit,
                                          bundle=args.bundle.resolve() if args.bundle else None)
        rows = (*rows, *suite_rows_)
    elapsed = time.perf_counter() - started
    code = verdict(rows)
    if args.junit:
        Path(args.junit).write_text(to_junit(rows, suite=f"envforge.verify.{ctx.platform}"),
                                    encoding="utf-8")
    if args.report:
        out = Path(args.report)
        render = to_html if out.suffix in (".html", ".htm") else to_markdown
        timings = kernel_timings(report, installed_packs())
        out.write_text(render(rows, timings, title=f"envforge verify: {args.spec}"),
                       encoding="utf-8")
    if args.save_probe:
        Path(args.save_probe).write_text(json.dumps(report, indent=2, sort_keys=True),
                                         encoding="utf-8")
    if ui.json:
        document = json.loads(to_json(rows, kernel_timings(report, installed_packs())))
        document["elapsed_s"] = round(elapsed, 3)
        if suite is not None:
            from envforge.suite.results import verdict_document

            document["suite"] = verdict_document(suite)
        ui.document("verify", document)
    else:
        env = str(ctx.prefix)
        ui.table(f"verify {args.spec} (<env> = {env})",
                 ["check", "expected", "found", "result", "why"],
                 [[r.name, r.expected.replace(env, "<env>"),
                   "= expected" if r.status == "pass" and r.found == r.expected
                   else r.found.replace(env, "<env>"), _status(r.status), r.why] for r in rows])
        passed = sum(r.status == "pass" for r in rows)
        failed = sum(r.status == "fail" for r in rows)
        skipped = sum(r.status == "skip" for r in rows)
        summary = f"{passed} passed, {failed} failed, {skipped} skipped in {elapsed:.1f}s"
        if suite is not None and chosen is not None:
            summary += f"; {chosen.suite.release_name}'s {suite.subset} tests: {suite.summary()}"
        (ui.success if code == 0 else ui.error)(summary)
        if code != 0:
            failing = next((r.name for r in rows if r.status == "fail"), None)
            look = f"the {failing} row above" if failing else "the rows above"
            written = f", {args.report}" if args.report else ""
            ui.next(f"look at {look}{written}, then `envforge doctor {args.spec}` for what on "
                    "this host explains it")
    return int(code)


def _status(status: str) -> Text:
    label, style = {"pass": ("pass", "green"), "fail": ("FAIL", "bold red"),
                    "skip": ("skip", "yellow")}.get(status, (status, ""))
    return Text(label, style=style)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser], common: Common) -> None:
    parser = sub.add_parser("verify", help="prove an applied environment does what its lock "
                                           "promised")
    parser.add_argument("spec")
    parser.add_argument("--prefix", type=Path)
    parser.add_argument("--junit", metavar="FILE", help="write JUnit XML for CI systems")
    parser.add_argument("--report", metavar="FILE",
                        help="write a Markdown (.md) or HTML (.html) report with a timing chart")
    parser.add_argument("--save-probe", metavar="FILE", help="keep the probe's raw JSON report")
    parser.add_argument("--suite", action="store_true",
                        help="also run a curated, time-bounded subset of the framework's own tests "
                             "(pytest from the lock's test group, tests from the locked sdist)")
    parser.add_argument("--suite-workers", type=int, metavar="N",
                        help="pytest workers for --suite (default: one per core)")
    parser.add_argument("--suite-time-limit", type=int, metavar="S",
                        help="stop --suite after S seconds (default: the subset's bound in "
                             "knowledge); what ran is counted and verify fails saying so")
    parser.add_argument("--bundle", type=Path, metavar="DIR",
                        help="take --suite's runner and tests from a bundle (no network)")
    common(parser)
    parser.set_defaults(handler=run_verify)
