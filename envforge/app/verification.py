"""Verifying an applied environment: the probe run by its own Python and judged against the
lock, and ``--suite``'s run of the framework's own tests; rows for ``commands/verify`` to show.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from envforge.app.packs import installed_packs
from envforge.drift import find_drift
from envforge.envvars import EnvEdit, apply_edits
from envforge.errors import InputError, StepError
from envforge.executor import read_record
from envforge.host import proc
from envforge.host.cuda import read_driver
from envforge.packapi import Registry
from envforge.packs import FrameworkPack
from envforge.probes import probe_command
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
    from envforge.suite.framework import FrameworkSuite
    from envforge.suite.results import SuiteVerdict
    from envforge.suite.runner import SuiteSubset


def host_has_gpu(environ: dict[str, str]) -> bool:
    """A GPU is usable when a driver answers; its absence turns GPU rows into skips."""
    return read_driver(environ).version is not None


def applied_edits(ctx: StepContext, spec: str, options: str = "") -> tuple[EnvEdit, ...]:
    """The environment's activation, or one line (InputError, exit 2) with the command to run
    next: an apply that did not finish leaves a prefix with no activation, which verify and
    ``run`` refuse by name rather than crash on. ``options``: the flags the user gave
    (`` --prefix P``), repeated in the command."""
    record = read_record(ctx.state_dir)
    if record is not None and not record.get("complete"):
        raise InputError(f"{spec}: the environment at {ctx.prefix} is incomplete (an apply did "
                         f"not finish): run `envforge apply {spec}{options}` to resume it, or "
                         f"`envforge rollback {spec}{options}` to undo it")
    try:
        return load_edits(ctx.prefix)
    except (OSError, ValueError):
        raise InputError(f"{spec}: not applied at {ctx.prefix}: run `envforge apply "
                         f"{spec}{options}` first") from None


def run_probe(ctx: StepContext, request: dict[str, Any], script: Path | None = None, *,
              registry: Registry[FrameworkPack] | None = None) -> dict[str, Any]:
    """A probe's report (the kernels' pack's by default, of ``registry``: the installed
    packs unless given), from the environment's own Python with its activation applied,
    started by envforge's probe runtime."""
    python = Path(ctx.layout.python)
    if not python.is_file():
        raise StepError(f"no environment at {ctx.prefix}: run `envforge apply` first")
    env = apply_edits(load_edits(ctx.prefix), ctx.environ, pathsep=os.pathsep)
    script = script or probe_scripts(ctx.lock.expect, registry or installed_packs())[0][1]
    done = proc.run(probe_command(python, script), env=env,
                    input_text=json.dumps(request), check=False, timeout=PROBE_TIMEOUT_S)
    try:
        report: dict[str, Any] = json.loads(done.stdout)
    except ValueError:
        raise StepError(f"the probe gave no report (exit {done.returncode}): "
                        f"{done.stderr.strip()[-2000:]}") from None
    return report


def run_probes(ctx: StepContext,
               registry: Registry[FrameworkPack] | None = None) -> dict[str, Any]:
    """Every locked pack's probe, one after the other (each in its own interpreter: two
    frameworks need not import side by side), their reports merged; the core's kernels
    run in the first."""
    expect = ctx.lock.expect
    registry = registry or installed_packs()
    reports = [(pack, run_probe(ctx, build_request(expect, registry, kernels=index == 0), script))
               for index, (pack, script) in enumerate(probe_scripts(expect, registry))]
    return reports[0][1] if len(reports) == 1 else merge_reports(reports)


def verify_environment(ctx: StepContext, *, sync: str = "envforge apply SPEC --sync",
                       registry: Registry[FrameworkPack] | None = None,
                       ) -> tuple[tuple[CheckRow, ...], dict[str, Any]]:
    """Rows for every expectation the lock holds and for drift (``sync``: the command that
    restores the locked set); the probe's report alongside."""
    expect, registry = ctx.lock.expect, registry or installed_packs()
    gpu = expect.device.startswith("cuda") and host_has_gpu(dict(ctx.environ))
    packs = registry.locked(expect.packs)
    for pack in packs:
        pack.before_probe(ctx)
    report = run_probes(ctx, registry)
    rows = check_report(report, expect, registry, gpu_expected=gpu, prefix=str(ctx.prefix))
    for pack in packs:
        pack.after_probe(ctx, passed=not any(row.status == "fail" for row in rows))
    drift = find_drift(Path(ctx.layout.site_packages), ctx.lock.pypi,
                       also_expected=[c.name for c in ctx.lock.conda])
    return (*rows, *drift_rows(drift, sync=sync)), report


@dataclass(frozen=True)
class SuiteSelection:
    """What ``--suite`` runs: the lock's test group, the pack's suite and release, the
    runner's package and the subset for the lock's device."""

    lock: SuiteLock
    suite: FrameworkSuite
    release: str
    package: str
    subset: SuiteSubset


def suite_selection(ctx: StepContext,
                    registry: Registry[FrameworkPack] | None = None) -> SuiteSelection:
    """The lock's test group and its pack's subset for the lock's device; InputError
    (exit 2, before anything runs) where either is missing."""
    from envforge.suite.framework import framework_suite

    expect, group = ctx.lock.expect, ctx.lock.suite
    registry = registry or installed_packs()
    found = framework_suite(expect.versions, registry)
    runner = found[0].runner(found[1]) if found is not None else None
    if group is None or found is None or runner is None:
        what = (f"{found[0].release_name} {found[1]}" if found is not None else
                " or ".join(p.suite.release_name for p in registry if p.suite) + " absent")
        raise InputError(f"the lock for {ctx.platform} has no test group for --suite "
                         f"({what}): re-run `envforge lock` with this envforge")
    suite, release = found
    subset = suite.subset(release, expect.device)
    if subset is None:
        raise InputError(f"envforge knows no test subset of {suite.release_name} {release} "
                         f"for device {expect.device} ({suite.knowledge_file})")
    return SuiteSelection(group, suite, release, runner.package, subset)


def verify_suite(ctx: StepContext, *, workers: int | None = None, bundle: Path | None = None,
                 time_limit_s: int | None = None,
                 ) -> tuple[tuple[CheckRow, ...], SuiteVerdict | None]:
    """The framework's own tests (its pack's subset for the lock's device) run in the
    environment; rows for the verdict. ``None`` when the subset needs a GPU this host
    lacks (its row is then skipped). ``time_limit_s`` replaces the subset's own bound."""
    from envforge.bundle.sources import bundle_lookup
    from envforge.suite import runner as testsuite
    from envforge.suite.results import judge, read_run, suite_rows

    chosen = suite_selection(ctx)
    suite, release, subset = chosen.suite, chosen.release, chosen.subset
    expect = ctx.lock.expect
    if subset.device == "cuda" and not host_has_gpu(dict(ctx.environ)):
        return (CheckRow(f"suite.{subset.name}", "no failures but known-bad ones", "-", "skip",
                         "the subset needs a GPU and this host has none"),), None
    python = Path(ctx.layout.python)
    if not python.is_file():
        raise StepError(f"no environment at {ctx.prefix}: run `envforge apply` first")
    folder = testsuite.prepare_folder(chosen.lock, ctx.lock.pypi, python=python,
                                      cache=ctx.dirs.cache, bundle=bundle_lookup(bundle),
                                      offline=bundle is not None)
    count = workers or testsuite.workers_for(os.cpu_count())
    bound = time_limit_s or subset.time_limit_s
    place = hashlib.sha256(str(ctx.prefix).encode()).hexdigest()[:16]
    run_dir = ctx.dirs.cache / "suite" / "runs" / place
    junit = run_dir / "pytest-junit.xml"
    compiledirs, seed = run_dir / "compiledir", run_dir / "seed"
    seeded = suite.compiledir_seed(ctx, seed) if suite.compiledir_flag else None
    env = testsuite.suite_environ(apply_edits(load_edits(ctx.prefix), ctx.environ,
                                              pathsep=os.pathsep),
                                  folder, package=chosen.package, compiledir=compiledirs,
                                  settings=suite.settings(subset),
                                  compiledir_flag=suite.compiledir_flag,
                                  compiledir_seed=seeded or Path(ctx.layout.compiledir))
    ctx.ui.info(f"running {suite.release_name} {release}'s {subset.name} tests ({count} "
                f"workers, at most {bound}s)")
    run = testsuite.run_pytest(python, testsuite.pytest_args(folder, subset, junit=junit,
                                                             workers=count),
                               env=env, cwd=run_dir, junit=junit,
                               timeout=bound)
    results, problem = read_run(run.junit, run.returncode, run.output_tail,
                                bound_s=bound, subset=subset.name,
                                defined_in=PurePosixPath(suite.knowledge_file).name)
    verdict = judge(results, suite.known_bad(release, expect.device, expect.versions),
                    subset=subset.name,
                    problem=problem, seconds=run.seconds, workers=count)
    if suite.compiledir_flag:
        own = sorted(p for p in compiledirs.iterdir() if p.is_dir()) \
            if compiledirs.is_dir() else []
        suite.keep_compiled(ctx, own, passed=verdict.ok)
        for made in (compiledirs, seed):  # a few hundred modules per prefix, kept by the pack
            shutil.rmtree(made, ignore_errors=True)
    return suite_rows(verdict), verdict
