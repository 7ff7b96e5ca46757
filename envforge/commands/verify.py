"""``envforge verify``: run the probe in the applied environment and judge it against the lock."""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

from rich.text import Text

from envforge.commands import Common
from envforge.commands.apply import prepare
from envforge.envvars import apply_edits
from envforge.errors import StepError
from envforge.host import proc
from envforge.host.cuda import read_driver
from envforge.steps.activation import load_edits
from envforge.steps.base import StepContext
from envforge.ui import UI
from envforge.verify import (
    PROBE_SCRIPT,
    CheckRow,
    build_request,
    check_report,
    kernel_timings,
    verdict,
)

PROBE_TIMEOUT_S = 3600.0


def host_has_gpu(environ: dict[str, str]) -> bool:
    """A GPU is usable when a driver answers; its absence turns GPU rows into skips."""
    return read_driver(environ).version is not None


def run_probe(ctx: StepContext, request: dict[str, Any]) -> dict[str, Any]:
    """The probe's report, from the environment's own Python with its activation applied."""
    python = Path(ctx.layout.python)
    if not python.is_file():
        raise StepError(f"no environment at {ctx.prefix}: run `envforge apply` first")
    env = apply_edits(load_edits(ctx.prefix), ctx.environ, pathsep=os.pathsep)
    done = proc.run([python, PROBE_SCRIPT], env=env, input_text=json.dumps(request),
                    check=False, timeout=PROBE_TIMEOUT_S)
    try:
        report: dict[str, Any] = json.loads(done.stdout)
    except ValueError:
        raise StepError(f"the probe gave no report (exit {done.returncode}): "
                        f"{done.stderr.strip()[-2000:]}") from None
    return report


def verify_environment(ctx: StepContext) -> tuple[tuple[CheckRow, ...], dict[str, Any]]:
    """Rows for every expectation the lock holds; the probe's report alongside."""
    expect = ctx.lock.expect
    gpu = expect.device.startswith("cuda") and host_has_gpu(dict(ctx.environ))
    report = run_probe(ctx, build_request(expect))
    rows = check_report(report, expect, gpu_expected=gpu, prefix=str(ctx.prefix))
    return rows, report


def run_verify(args: argparse.Namespace, ui: UI) -> int:
    from envforge.verify_report import to_html, to_json, to_junit, to_markdown

    ctx = prepare(Path(args.spec), prefix=args.prefix, artifacts={}, bundle=None, offline=True,
                  ui=ui)
    started = time.perf_counter()
    ui.info(f"probing {ctx.prefix} (Theano compiles its kernels; the first run takes a while)")
    rows, report = verify_environment(ctx)
    elapsed = time.perf_counter() - started
    code = verdict(rows)
    if args.junit:
        Path(args.junit).write_text(to_junit(rows, suite=f"envforge.verify.{ctx.pspec.platform}"),
                                    encoding="utf-8")
    if args.report:
        out = Path(args.report)
        render = to_html if out.suffix in (".html", ".htm") else to_markdown
        out.write_text(render(rows, kernel_timings(report), title=f"envforge verify: {args.spec}"),
                       encoding="utf-8")
    if args.save_probe:
        Path(args.save_probe).write_text(json.dumps(report, indent=2, sort_keys=True),
                                         encoding="utf-8")
    if ui.json:
        document = json.loads(to_json(rows, kernel_timings(report)))
        document["elapsed_s"] = round(elapsed, 3)
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
        (ui.success if code == 0 else ui.error)(summary)
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
    common(parser)
    parser.set_defaults(handler=run_verify)
