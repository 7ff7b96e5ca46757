"""``envforge verify``: run the probe in the applied environment and judge it against the lock."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.text import Text

from envforge.commands import Common
from envforge.commands.apply import prepare
from envforge.drift import drift_rows, find_drift
from envforge.envvars import apply_edits
from envforge.errors import InputError, StepError
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

if TYPE_CHECKING:
    from envforge.knowledge.models import SuiteSubsetRow
    from envforge.lockfile import SuiteLock
    from envforge.suite.results import SuiteVerdict


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


def verify_environment(ctx: StepContext, *, sync: str = "envforge apply SPEC --sync",
                       ) -> tuple[tuple[CheckRow, ...], dict[str, Any]]:
    """Rows for every expectation the lock holds and for drift (``sync``: the command that
    restores the locked set); the probe's report alongside."""
    expect = ctx.lock.expect
    gpu = expect.device.startswith("cuda") and host_has_gpu(dict(ctx.environ))
    report = run_probe(ctx, build_request(expect))
    rows = check_report(report, expect, gpu_expected=gpu, prefix=str(ctx.prefix))
    drift = find_drift(Path(ctx.layout.site_packages), ctx.lock.pypi,
                       also_expected=[c.name for c in ctx.lock.conda])
    return (*rows, *drift_rows(drift, sync=sync)), report


@dataclass(frozen=True)
class _Runner:
    theano_version: str
    package: str


def suite_selection(ctx: StepContext) -> tuple[SuiteLock, _Runner, SuiteSubsetRow]:
    """The lock's test group and the knowledge base's subset for its device; InputError
    (exit 2, before anything runs) where either is missing."""
    from envforge.knowledge import suite_runner, suite_subset

    expect, suite = ctx.lock.expect, ctx.lock.suite
    theano = expect.versions.get("theano")
    runner = suite_runner(theano) if theano else None
    if suite is None or theano is None or runner is None:
        raise InputError(f"the lock for {ctx.platform} has no test group for --suite (Theano "
                         f"{theano or 'absent'}): re-run `envforge lock` with this envforge")
    subset = suite_subset(theano, expect.device)
    if subset is None:
        raise InputError(f"envforge knows no test subset of Theano-PyMC {theano} for device "
                         f"{expect.device} (envforge/knowledge/theano_suite.toml)")
    return suite, _Runner(theano, runner.package), subset


def verify_suite(ctx: StepContext, *, workers: int | None = None, bundle: Path | None = None,
                 time_limit_s: int | None = None,
                 ) -> tuple[tuple[CheckRow, ...], SuiteVerdict | None]:
    """The framework's own tests (the knowledge base's subset for the lock's device) run in
    the environment; rows for the verdict. ``None`` when the subset needs a GPU this host
    lacks (its row is then skipped). ``time_limit_s`` replaces the subset's own bound."""
    from envforge.host import testsuite
    from envforge.knowledge import known_bad_tests
    from envforge.suite.results import judge, read_run, suite_rows

    suite, runner, subset = suite_selection(ctx)
    expect = ctx.lock.expect
    theano = runner.theano_version
    if subset.device == "cuda" and not host_has_gpu(dict(ctx.environ)):
        return (CheckRow(f"suite.{subset.name}", "no failures but known-bad ones", "-", "skip",
                         "the subset needs a GPU and this host has none"),), None
    python = Path(ctx.layout.python)
    if not python.is_file():
        raise StepError(f"no environment at {ctx.prefix}: run `envforge apply` first")
    folder = testsuite.prepare_folder(suite, ctx.lock.pypi, python=python, cache=ctx.dirs.cache,
                                      bundle=bundle, offline=bundle is not None)
    count = workers or testsuite.workers_for(os.cpu_count())
    bound = time_limit_s or subset.time_limit_s
    place = hashlib.sha256(str(ctx.prefix).encode()).hexdigest()[:16]
    run_dir = ctx.dirs.cache / "suite" / "runs" / place
    junit = run_dir / "pytest-junit.xml"
    env = testsuite.suite_environ(apply_edits(load_edits(ctx.prefix), ctx.environ,
                                              pathsep=os.pathsep),
                                  folder, package=runner.package,
                                  compiledir=run_dir / "compiledir",
                                  theano_flags=subset.theano_flags)
    ctx.ui.info(f"running Theano-PyMC {theano}'s {subset.name} tests ({count} workers, at most "
                f"{bound}s)")
    run = testsuite.run_pytest(python, testsuite.pytest_args(folder, subset, junit=junit,
                                                             workers=count),
                               env=env, cwd=run_dir, junit=junit,
                               timeout=bound)
    results, problem = read_run(run.junit, run.returncode, run.output_tail,
                                bound_s=bound, subset=subset.name)
    verdict = judge(results, known_bad_tests(theano, expect.device, expect.versions),
                    subset=subset.name,
                    problem=problem, seconds=run.seconds, workers=count)
    return suite_rows(verdict), verdict


def run_verify(args: argparse.Namespace, ui: UI) -> int:
    from envforge.verify_report import to_html, to_json, to_junit, to_markdown

    if args.suite_workers is not None and args.suite_workers < 1:
        raise InputError(f"--suite-workers {args.suite_workers}: give 1 or more")
    if args.suite_time_limit is not None and args.suite_time_limit < 1:
        raise InputError(f"--suite-time-limit {args.suite_time_limit}: give 1 or more seconds")

    ctx = prepare(Path(args.spec), prefix=args.prefix, artifacts={}, bundle=None, offline=True,
                  ui=ui)
    if args.suite:
        suite_selection(ctx)
    started = time.perf_counter()
    ui.info(f"probing {ctx.prefix} (Theano compiles its kernels; the first run takes a while)")
    prefix = f" --prefix {args.prefix}" if args.prefix else ""
    rows, report = verify_environment(ctx, sync=f"envforge apply {args.spec} --sync{prefix}")
    suite = None
    if args.suite:
        suite_rows_, suite = verify_suite(ctx, workers=args.suite_workers,
                                          time_limit_s=args.suite_time_limit,
                                          bundle=args.bundle.resolve() if args.bundle else None)
        rows = (*rows, *suite_rows_)
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
        if suite is not None:
            summary += f"; Theano's {suite.subset} tests: {suite.summary()}"
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
    parser.add_argument("--suite", action="store_true",
                        help="also run a curated, time-bounded subset of Theano's own tests "
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
