"""Verifying an applied environment: the probe run by its own Python and judged against the
lock, and ``--suite``'s run of the framework's own tests; rows for ``commands/verify`` to show.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from envforge.drift import find_drift
from envforge.envvars import apply_edits
from envforge.errors import InputError, StepError
from envforge.host import proc
from envforge.host.cuda import read_driver
from envforge.steps.activation import load_edits
from envforge.steps.base import StepContext
from envforge.verify import (
    CheckRow,
    build_request,
    check_report,
    drift_rows,
    merge_reports,
    probe_scripts,
)

PROBE_TIMEOUT_S = 3600.0

if TYPE_CHECKING:
    from envforge.lockfile import SuiteLock
    from envforge.packs.theano.knowledge import SuiteSubsetRow
    from envforge.suite.results import SuiteVerdict


def host_has_gpu(environ: dict[str, str]) -> bool:
    """A GPU is usable when a driver answers; its absence turns GPU rows into skips."""
    return read_driver(environ).version is not None


def run_probe(ctx: StepContext, request: dict[str, Any],
              script: Path | None = None) -> dict[str, Any]:
    """A probe's report (the kernels' pack's by default), from the environment's own Python
    with its activation applied."""
    python = Path(ctx.layout.python)
    if not python.is_file():
        raise StepError(f"no environment at {ctx.prefix}: run `envforge apply` first")
    env = apply_edits(load_edits(ctx.prefix), ctx.environ, pathsep=os.pathsep)
    script = script or probe_scripts(ctx.lock.expect)[0][1]
    done = proc.run([python, script], env=env,
                    input_text=json.dumps(request), check=False, timeout=PROBE_TIMEOUT_S)
    try:
        report: dict[str, Any] = json.loads(done.stdout)
    except ValueError:
        raise StepError(f"the probe gave no report (exit {done.returncode}): "
                        f"{done.stderr.strip()[-2000:]}") from None
    return report


def run_probes(ctx: StepContext) -> dict[str, Any]:
    """Every locked pack's probe, one after the other (each in its own interpreter: two
    frameworks need not import side by side), their reports merged; the core's kernels
    run in the first."""
    expect = ctx.lock.expect
    reports = [(pack, run_probe(ctx, build_request(expect, kernels=index == 0), script))
               for index, (pack, script) in enumerate(probe_scripts(expect))]
    return reports[0][1] if len(reports) == 1 else merge_reports(reports)


def verify_environment(ctx: StepContext, *, sync: str = "envforge apply SPEC --sync",
                       ) -> tuple[tuple[CheckRow, ...], dict[str, Any]]:
    """Rows for every expectation the lock holds and for drift (``sync``: the command that
    restores the locked set); the probe's report alongside."""
    expect = ctx.lock.expect
    gpu = expect.device.startswith("cuda") and host_has_gpu(dict(ctx.environ))
    report = run_probes(ctx)
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
    from envforge.packs.theano.knowledge import suite_runner, suite_subset

    expect, suite = ctx.lock.expect, ctx.lock.suite
    theano = expect.versions.get("theano")
    runner = suite_runner(theano) if theano else None
    if suite is None or theano is None or runner is None:
        raise InputError(f"the lock for {ctx.platform} has no test group for --suite (Theano "
                         f"{theano or 'absent'}): re-run `envforge lock` with this envforge")
    subset = suite_subset(theano, expect.device)
    if subset is None:
        raise InputError(f"envforge knows no test subset of Theano-PyMC {theano} for device "
                         f"{expect.device} (envforge/packs/theano/theano_suite.toml)")
    return suite, _Runner(theano, runner.package), subset


def verify_suite(ctx: StepContext, *, workers: int | None = None, bundle: Path | None = None,
                 time_limit_s: int | None = None,
                 ) -> tuple[tuple[CheckRow, ...], SuiteVerdict | None]:
    """The framework's own tests (the knowledge base's subset for the lock's device) run in
    the environment; rows for the verdict. ``None`` when the subset needs a GPU this host
    lacks (its row is then skipped). ``time_limit_s`` replaces the subset's own bound."""
    from envforge.bundle.sources import bundle_lookup
    from envforge.packs.theano.knowledge import known_bad_tests
    from envforge.suite import runner as testsuite
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
                                      bundle=bundle_lookup(bundle), offline=bundle is not None)
    count = workers or testsuite.workers_for(os.cpu_count())
    bound = time_limit_s or subset.time_limit_s
    place = hashlib.sha256(str(ctx.prefix).encode()).hexdigest()[:16]
    run_dir = ctx.dirs.cache / "suite" / "runs" / place
    junit = run_dir / "pytest-junit.xml"
    env = testsuite.suite_environ(apply_edits(load_edits(ctx.prefix), ctx.environ,
                                              pathsep=os.pathsep),
                                  folder, package=runner.package,
                                  compiledir=run_dir / "compiledir",
                                  settings=("THEANO_FLAGS", subset.theano_flags))
    ctx.ui.info(f"running Theano-PyMC {theano}'s {subset.name} tests ({count} workers, at most "
                f"{bound}s)")
    run = testsuite.run_pytest(python, testsuite.pytest_args(folder, subset, junit=junit,
                                                             workers=count),
                               env=env, cwd=run_dir, junit=junit,
                               timeout=bound)
    results, problem = read_run(run.junit, run.returncode, run.output_tail,
                                bound_s=bound, subset=subset.name,
                                defined_in="theano_suite.toml")
    verdict = judge(results, known_bad_tests(theano, expect.device, expect.versions),
                    subset=subset.name,
                    problem=problem, seconds=run.seconds, workers=count)
    return suite_rows(verdict), verdict
