"""Benchmarks: envforge's lock, no-op apply and verify, against uv, pip and conda-lock.

``make bench`` (``.venv/bin/python bench/run.py``) runs everything once, in a few minutes, and
writes ``bench/results/<name>.json`` (raw samples, machine facts) and ``bench/results/RESULTS.md``.
Every tool works in fresh folders under one scratch directory and reads no user configuration;
see bench/README.md for what each row measures and why it is the fair counterpart.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import functools
import json
import os
import platform
import pstats
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "specs" / "theano-cpu.toml"
RESULTS = ROOT / "bench" / "results"
INDEX = "https://pypi.org/simple"
PYTHON = "3.7"
# uv's and pip's names for the spec's two platforms (envforge's resolve/pypi.py uses the same).
UV_PLATFORMS = {"linux-64": "x86_64-manylinux_2_17", "win-64": "x86_64-pc-windows-msvc"}
# pip does not widen a PEP 600 tag to older glibcs as uv does (numpy 1.19.5 has only
# manylinux2010 wheels for cp37), so it is given the list envforge ranks by.
PIP_PLATFORMS = {
    "linux-64": ("manylinux_2_17_x86_64", "manylinux2014_x86_64", "manylinux_2_12_x86_64",
                 "manylinux2010_x86_64", "manylinux_2_5_x86_64", "manylinux1_x86_64",
                 "linux_x86_64"),
    "win-64": ("win_amd64",),
}
# pip for cross-platform dry runs: pip <= 24.0 fails them here with "Package 'scipy' requires a
# different Python: 3.11.7 not in '<3.11,>=3.7'" (it checks the host's Python, not 3.7's).
PIP_CROSS = "pip==26.3"
# pip that still runs on Python 3.7: the native dry run and the no-op install into the env.
PIP_PY37 = "pip==24.0"
# A proxy nobody listens on: uv, pip and requests honour it, so a command that needs the
# network fails fast under it; the no-op rows are checked with it.
DEAD_PROXY = "http://127.0.0.1:9"


class BenchError(Exception):
    """A command under measurement failed; the message carries its tail."""


@dataclass
class Series:
    """One row: repeated wall-clock samples of one command (or a sum of commands)."""

    key: str
    label: str
    command: str
    note: str = ""
    samples: list[float] = field(default_factory=list)
    parts: dict[str, list[float]] = field(default_factory=dict)
    error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {"label": self.label, "command": self.command, "note": self.note,
                               "samples_s": [round(s, 4) for s in self.samples],
                               "n": len(self.samples), "error": self.error, **self.extra}
        if self.samples:
            out.update(median_s=round(statistics.median(self.samples), 4),
                       min_s=round(min(self.samples), 4), max_s=round(max(self.samples), 4))
        if self.parts:
            out["parts_s"] = {k: [round(v, 4) for v in vs] for k, vs in self.parts.items()}
        return out

    @property
    def median(self) -> float | None:
        return statistics.median(self.samples) if self.samples else None


# --- processes ---------------------------------------------------------------------------------

# Settings of this machine that a user's would not have: a local pip mirror (PIP_*, pip.conf)
# and PYTHONDONTWRITEBYTECODE, which would make every run compile again the sources whose .pyc
# is missing or stale.
STRIPPED = ("UV_", "PIP_", "PYTHONDONTWRITEBYTECODE")


def clean_environ(**extra: str) -> dict[str, str]:
    """This process's environment without this machine's settings (see STRIPPED), plus
    ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(STRIPPED)}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1",
               PYTHONWARNINGS="ignore")
    env.update(extra)
    return env


def run(cmd: Sequence[str | Path], *, env: dict[str, str], cwd: Path | None = None,
        ok: Sequence[int] = (0,), timeout: float = 600,
        ) -> tuple[float, subprocess.CompletedProcess[str]]:
    """Run to completion; seconds of wall clock, and the result. BenchError if it failed."""
    argv = [str(c) for c in cmd]
    started = time.perf_counter()
    try:
        done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True,
                              timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise BenchError(f"timed out after {timeout}s: {shlex.join(argv)}") from None
    elapsed = time.perf_counter() - started
    if done.returncode not in ok:
        tail = (done.stderr.strip() or done.stdout.strip())[-1500:]
        raise BenchError(f"exit {done.returncode}: {shlex.join(argv)}\n{tail}")
    return elapsed, done


def fresh(scratch: Path, name: str) -> Path:
    return Path(tempfile.mkdtemp(prefix=f"{name}-", dir=scratch))


def new_project(scratch: Path) -> Path:
    """A folder with specs/theano-cpu.toml and no locks/, as a user's project would be."""
    project = fresh(scratch, "project")
    (project / "specs").mkdir()
    shutil.copy2(SPEC, project / "specs" / SPEC.name)
    return project


# --- the bench ---------------------------------------------------------------------------------

@dataclass
class Tools:
    envforge: list[str]
    uv: str
    python37: str
    pip_cross: Path  # a folder holding the ``pip`` package, run as ``python <folder>/pip``
    pip_py37: Path
    conda_lock: str | None


class Bench:
    def __init__(self, scratch: Path, reps_net: int, reps_local: int, reps_verify: int) -> None:
        self.scratch = scratch
        self.reps_net = reps_net
        self.reps_local = reps_local
        self.reps_verify = reps_verify
        self.series: dict[str, Series] = {}
        self.breakdown: dict[str, Any] = {}
        self.profile: dict[str, Any] = {}
        self.not_run: list[dict[str, str]] = []
        self.checks: dict[str, Any] = {}
        self.tools = self._tools()
        self.pypi_packages: list[str] = tomllib.loads(SPEC.read_text("utf-8"))["pypi"]["packages"]

    # -- setup --

    def _tools(self) -> Tools:
        from envforge.host.interpreters import find_interpreter
        from envforge.host.uv import uv_binary

        bindir = Path(sys.executable).parent
        envforge = [str(bindir / "envforge")] if (bindir / "envforge").is_file() \
            else [sys.executable, "-m", "envforge"]
        uv = uv_binary()
        conda_lock = str(bindir / "conda-lock") if (bindir / "conda-lock").is_file() \
            else shutil.which("conda-lock")
        return Tools(envforge=envforge, uv=uv,
                     python37=str(find_interpreter(PYTHON).executable),
                     pip_cross=self._pip_dir(uv, PIP_CROSS), pip_py37=self._pip_dir(uv, PIP_PY37),
                     conda_lock=conda_lock)

    @staticmethod
    def _pip_dir(uv: str, requirement: str) -> Path:
        """A pinned pip in a folder of its own, reused between runs (not timed)."""
        base = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
        target = base / "envforge-bench" / requirement.replace("==", "-")
        if not (target / "pip" / "__main__.py").is_file():
            run([uv, "pip", "install", "--quiet", "--no-config", "--index-url", INDEX,
                 "--target", target, requirement], env=clean_environ())
        return target

    def add(self, series: Series) -> Series:
        self.series[series.key] = series
        return series

    def sample(self, series: Series, fn: Callable[[], float | dict[str, float]]) -> None:
        """One repetition; a dict of parts is summed. A failure stops the series, not the run."""
        if series.error is not None:
            return
        try:
            result = fn()
        except BenchError as exc:
            series.error = str(exc)
            print(f"  ! {series.label}: {str(exc).splitlines()[0]}", file=sys.stderr)
            return
        if isinstance(result, dict):
            for part, seconds in result.items():
                series.parts.setdefault(part, []).append(seconds)
            result = sum(result.values())
        series.samples.append(result)
        print(f"  {series.label}: {result:.3f}s", file=sys.stderr)

    # -- commands --

    def envforge(self, *args: str | Path) -> list[str]:
        return [*self.tools.envforge, *map(str, args)]

    def envforge_env(self, home: Path, xdg_cache: Path, **extra: str) -> dict[str, str]:
        # envforge strips UV_* before it runs uv (host/uv.py uv_environ), so UV_CACHE_DIR
        # alone does not reach the lock's uv: XDG_CACHE_HOME is what points uv's cache here.
        return clean_environ(ENVFORGE_HOME=str(home), XDG_CACHE_HOME=str(xdg_cache),
                             UV_CACHE_DIR=str(xdg_cache / "uv"), **extra)

    def envforge_lock(self, env: dict[str, str], project: Path) -> float:
        return run(self.envforge("lock", "specs/theano-cpu.toml", "-q"), env=env, cwd=project)[0]

    def uv_compile(self, cache: Path, out: Path) -> dict[str, float]:
        req = self.scratch / "requirements.in"
        req.write_text("\n".join(self.pypi_packages) + "\n", encoding="utf-8")
        parts = {}
        for plat, uv_plat in UV_PLATFORMS.items():
            parts[plat], _ = run([self.tools.uv, "pip", "compile", req, "--quiet", "--no-header",
                                  "--generate-hashes", "--output-file", out / f"{plat}.txt",
                                  "--python-version", PYTHON, "--python-platform", uv_plat,
                                  "--index-url", INDEX, "--no-config"],
                                 env=clean_environ(UV_CACHE_DIR=str(cache)))
        return parts

    def pip_cross(self, cache: Path, out: Path) -> dict[str, float]:
        """Both platforms; only the packages with wheels (see README: Theano-PyMC is sdist-only,
        and pip refuses sdists for a foreign --platform unless --no-deps)."""
        wheels = [p for p in self.pypi_packages if not p.lower().startswith("theano")]
        parts = {}
        for plat, pip_plats in PIP_PLATFORMS.items():
            platform_args = [arg for tag in pip_plats for arg in ("--platform", tag)]
            parts[plat], _ = run([sys.executable, self.tools.pip_cross / "pip", "install",
                                  "--dry-run", "--quiet", "--report", out / f"pip-{plat}.json",
                                  "--ignore-installed", "--only-binary", ":all:",
                                  *platform_args, "--python-version", PYTHON,
                                  "--implementation", "cp", "--abi", "cp37m",
                                  "--target", out / f"target-{plat}", "--index-url", INDEX,
                                  *wheels], env=clean_environ(PIP_CACHE_DIR=str(cache)))
        return parts

    def pip_native(self, cache: Path, out: Path) -> float:
        """linux-64 only, by a real Python 3.7: all packages, Theano-PyMC's metadata built."""
        seconds, _ = run([self.tools.python37, self.tools.pip_py37 / "pip", "install",
                          "--dry-run", "--quiet", "--report", out / "pip-native.json",
                          "--ignore-installed", "--index-url", INDEX, *self.pypi_packages],
                         env=clean_environ(PIP_CACHE_DIR=str(cache)))
        return seconds

    # -- 1. lock --

    def bench_lock(self) -> Path:
        """Returns the project folder of the last run, locked, for the apply benchmark."""
        n = self.reps_net
        spec_rel = "specs/theano-cpu.toml"
        both = "linux-64 + win-64, summed"
        ef_cold = self.add(Series("lock.envforge.cold", "envforge lock, cold",
                                  f"envforge lock {spec_rel}",
                                  "fresh ENVFORGE_HOME, uv cache, no lock"))
        uv_cold = self.add(Series("lock.uv.cold", "uv pip compile, cold",
                                  "uv pip compile --generate-hashes --python-version 3.7 "
                                  "--python-platform {x86_64-manylinux_2_17,x86_64-pc-windows-msvc}"
                                  f" --index-url {INDEX} --no-config", f"{both}; fresh cache"))
        pip_x_cold = self.add(Series("lock.pip_cross.cold", "pip dry-run cross-platform, cold",
                                     "pip install --dry-run --report --ignore-installed "
                                     "--only-binary :all: --platform {manylinux_2_17_x86_64 "
                                     "and older manylinux tags, win_amd64} --python-version 3.7 "
                                     "--implementation cp --abi cp37m --target T numpy scipy six",
                                     f"{both}; 3 of 4 packages (no Theano-PyMC: sdist-only)"))
        pip_n_cold = self.add(Series("lock.pip_native.cold", "pip dry-run native Python 3.7, cold",
                                     "python3.7 -m pip install --dry-run --report "
                                     "--ignore-installed <all 4>",
                                     "linux-64 only; all 4 packages, builds Theano-PyMC metadata"))
        last: dict[str, Path] = {}
        print("lock: cold", file=sys.stderr)
        breakdown_home = {"project": new_project(self.scratch),
                          "home": fresh(self.scratch, "home"), "xdg": fresh(self.scratch, "xdg")}
        self.lock_breakdown("cold", self.envforge_env(breakdown_home["home"],
                                                      breakdown_home["xdg"]),
                            breakdown_home["project"])
        for _ in range(n):
            last = {"project": new_project(self.scratch), "home": fresh(self.scratch, "home"),
                    "xdg": fresh(self.scratch, "xdg"), "uv": fresh(self.scratch, "uvcache"),
                    "pip": fresh(self.scratch, "pipcache"),
                    "pip2": fresh(self.scratch, "pipcache"), "out": fresh(self.scratch, "out")}
            env = self.envforge_env(last["home"], last["xdg"])
            self.sample(ef_cold, functools.partial(self.envforge_lock, env, last["project"]))
            self.sample(uv_cold, functools.partial(self.uv_compile, last["uv"], last["out"]))
            self.sample(pip_x_cold, functools.partial(self.pip_cross, last["pip"], last["out"]))
            self.sample(pip_n_cold, functools.partial(self.pip_native, last["pip2"], last["out"]))
        self.checks["resolved"] = self._resolved_sets(last["project"], last["out"])

        ef_warm = self.add(Series("lock.envforge.warm", "envforge lock, warm",
                                  f"envforge lock {spec_rel}",
                                  "caches warm, lock file removed: resolves again"))
        uv_warm = self.add(Series("lock.uv.warm", "uv pip compile, warm", uv_cold.command,
                                  f"{both}; cache warm"))
        pip_x_warm = self.add(Series("lock.pip_cross.warm", "pip dry-run cross-platform, warm",
                                     pip_x_cold.command, f"{both}; 3 of 4 packages; cache warm"))
        pip_n_warm = self.add(Series("lock.pip_native.warm", "pip dry-run native Python 3.7, warm",
                                     pip_n_cold.command, "linux-64 only; all 4; cache warm"))
        project = last["project"]
        env = self.envforge_env(last["home"], last["xdg"])
        lock_file = project / "locks" / "theano-cpu.lock"

        def envforge_warm() -> float:
            lock_file.unlink(missing_ok=True)
            return run(self.envforge("lock", spec_rel, "-q"), env=env, cwd=project)[0]

        print("lock: warm", file=sys.stderr)
        for _ in range(n):
            self.lock_breakdown("warm", env, project)
            self.sample(ef_warm, envforge_warm)
            self.sample(uv_warm, lambda: self.uv_compile(last["uv"], last["out"]))
            self.sample(pip_x_warm, lambda: self.pip_cross(last["pip"], last["out"]))
            self.sample(pip_n_warm, lambda: self.pip_native(last["pip2"], last["out"]))

        unchanged = self.add(Series("lock.envforge.unchanged", "envforge lock, spec unchanged",
                                    f"envforge lock {spec_rel}", "lock present and fresh"))
        unchanged_offline = self.add(Series(
            "lock.envforge.unchanged_no_network", "envforge lock, unchanged, network blocked",
            f"HTTPS_PROXY={DEAD_PROXY} envforge lock {spec_rel}", "proves no network is used"))
        print("lock: unchanged", file=sys.stderr)
        blocked = self.envforge_env(last["home"], last["xdg"], HTTPS_PROXY=DEAD_PROXY,
                                    HTTP_PROXY=DEAD_PROXY, https_proxy=DEAD_PROXY,
                                    http_proxy=DEAD_PROXY)
        if not lock_file.is_file():  # the warm runs failed: lock once so the rest can go on
            with contextlib.suppress(BenchError):
                run(self.envforge("lock", spec_rel, "-q"), env=env, cwd=project)
        for _ in range(self.reps_local):
            self.sample(unchanged, lambda: run(self.envforge("lock", spec_rel, "-q"), env=env,
                                               cwd=project)[0])
        self.sample(unchanged_offline, lambda: run(self.envforge("lock", spec_rel, "-q"),
                                                   env=blocked, cwd=project)[0])
        return project

    def _resolved_sets(self, project: Path, out: Path) -> dict[str, Any]:
        """name -> version per platform from each tool, to show they resolved the same thing."""
        found: dict[str, Any] = {}
        with contextlib.suppress(OSError, KeyError, ValueError):
            lock = tomllib.loads((project / "locks" / "theano-cpu.lock").read_text("utf-8"))
            found["envforge"] = {p: {f["name"].lower(): f["version"] for f in pl.get("pypi", [])}
                                 for p, pl in lock["platforms"].items()}
        for plat in UV_PLATFORMS:
            with contextlib.suppress(OSError):
                text = (out / f"{plat}.txt").read_text("utf-8")
                found.setdefault("uv", {})[plat] = dict(
                    (m[1].lower(), m[2]) for m in re.finditer(r"^([\w.-]+)==(\S+)", text, re.M))
            with contextlib.suppress(OSError, KeyError, ValueError):
                report = json.loads((out / f"pip-{plat}.json").read_text("utf-8"))
                found.setdefault("pip_cross", {})[plat] = {
                    i["metadata"]["name"].lower(): i["metadata"]["version"]
                    for i in report["install"]}
        with contextlib.suppress(OSError, KeyError, ValueError):
            report = json.loads((out / "pip-native.json").read_text("utf-8"))
            found["pip_native"] = {"linux-64": {i["metadata"]["name"].lower():
                                                i["metadata"]["version"]
                                                for i in report["install"]}}
        return found

    def lock_breakdown(self, kind: str, env: dict[str, str], project: Path) -> None:
        """Where envforge lock's time goes: timing wrappers around its stages, in a subprocess
        with the same environment and caches as the row it sits beside (interleaved with it)."""
        if "error" in self.breakdown:
            return
        runs = self.breakdown.setdefault("runs", {"cold": [], "warm": []})
        self.breakdown["note"] = ("wall seconds inside one process; nested rows are part of "
                                  "their parent; 'python imports' is before the lock starts")
        (project / "locks" / "theano-cpu.lock").unlink(missing_ok=True)
        try:
            _, done = run([sys.executable, __file__, "--lock-breakdown-worker",
                           "specs/theano-cpu.toml"], env=env, cwd=project)
            runs[kind].append(json.loads(done.stdout))
            print(f"  lock breakdown, {kind}: {runs[kind][-1].get('run_lock total')}s",
                  file=sys.stderr)
        except (BenchError, ValueError) as exc:
            self.breakdown = {"error": str(exc)}

    # -- 2. apply no-op --

    def bench_apply(self, project: Path) -> tuple[Path, Path] | None:
        """Returns (ENVFORGE_HOME, prefix) of the applied environment, for verify."""
        spec_rel = "specs/theano-cpu.toml"
        home, xdg = fresh(self.scratch, "apply-home"), fresh(self.scratch, "xdg")
        env = self.envforge_env(home, xdg)
        first = self.add(Series("apply.envforge.first", "envforge apply, first (cold)",
                                f"envforge apply {spec_rel} --yes",
                                "fresh ENVFORGE_HOME: venv, downloads, Theano-PyMC build, debs"))
        print("apply: first", file=sys.stderr)
        prefix_box: list[Path] = []

        def first_apply() -> float:
            seconds, done = run(self.envforge("apply", spec_rel, "--yes", "--json"), env=env,
                                cwd=project)
            prefix_box.append(Path(json.loads(done.stdout)["prefix"]))
            return seconds

        self.sample(first, first_apply)
        if not prefix_box:
            return None
        prefix = prefix_box[0]
        env_python = prefix / "bin" / "python"
        req = project / "requirements-linux-64.txt"
        with contextlib.suppress(BenchError):
            run(self.envforge("export", "locks/theano-cpu.lock", "--format", "requirements",
                              "--platform", "linux-64", "-o", req), env=env, cwd=project)
        conda_lock_file = self.scratch / "conda-lock" / "conda-lock.yml"
        conda_lock_file.parent.mkdir()
        with contextlib.suppress(BenchError):
            run(self.envforge("export", "locks/theano-cpu.lock", "--format", "conda-lock",
                              "-o", conda_lock_file), env=env, cwd=project)

        reapply = self.add(Series("apply.envforge.noop", "envforge apply, no-op",
                                  f"envforge apply {spec_rel} --yes", "applied, nothing changed"))
        plan = self.add(Series("apply.envforge.plan", "envforge plan, no-op",
                               f"envforge plan {spec_rel}", "exit 0 = nothing pending"))
        uv_noop = self.add(Series(
            "apply.uv.noop", "uv pip install, no-op",
            "uv pip install --python <env>/bin/python --require-hashes -r "
            "<envforge export --format requirements> --no-config",
            "same env, same uv cache as envforge's"))
        pip_noop = self.add(Series(
            "apply.pip.noop", "pip install, no-op",
            "<env>/bin/python <pip 24.0>/pip install --require-hashes -r <exported requirements>",
            "pip 24.0 run by the env's Python (envforge's venvs have no pip; pip 24.0 is the "
            "last for Python 3.7)"))
        conda_lock = self.add(Series(
            "apply.conda_lock.render", "conda-lock render (parse only)",
            "conda-lock render --kind explicit -p linux-64 <envforge export --format conda-lock>",
            "NOT an install: conda-lock install can't run here (see not-run)"))
        uv_env = clean_environ(UV_CACHE_DIR=str(home / "cache" / "uv"))
        uv_cmd = [self.tools.uv, "pip", "install", "--python", env_python, "--require-hashes",
                  "-r", req, "--no-config"]
        pip_cmd = [env_python, self.tools.pip_py37 / "pip", "install", "--require-hashes", "-r",
                   req]
        print("apply: no-op", file=sys.stderr)
        for _ in range(self.reps_local):
            self.sample(reapply, lambda: run(self.envforge("apply", spec_rel, "--yes"), env=env,
                                             cwd=project)[0])
            self.sample(plan, lambda: run(self.envforge("plan", spec_rel), env=env,
                                          cwd=project)[0])
            self.sample(uv_noop, lambda: run(uv_cmd, env=uv_env)[0])
            self.sample(pip_noop, lambda: run(pip_cmd, env=clean_environ())[0])
            if self.tools.conda_lock is not None:
                self.sample(conda_lock, lambda: run(
                    [self.tools.conda_lock, "render", "--kind", "explicit", "-p", "linux-64",
                     conda_lock_file], env=clean_environ(), cwd=conda_lock_file.parent)[0])
        self._no_network_checks([("envforge apply", self.envforge(
            "apply", spec_rel, "--yes"), env, project), ("envforge plan", self.envforge(
                "plan", spec_rel), env, project), ("uv pip install", uv_cmd, uv_env, None),
            ("pip install", pip_cmd, clean_environ(), None)])
        self._profile_reapply(project, env)
        return home, prefix

    def _no_network_checks(
            self, commands: list[tuple[str, list[Any], dict[str, str], Path | None]]) -> None:
        proxies = {k: DEAD_PROXY for k in ("HTTPS_PROXY", "HTTP_PROXY", "https_proxy",
                                           "http_proxy")}
        results = {}
        for name, cmd, cmd_env, cwd in commands:
            try:
                seconds, _ = run(cmd, env={**cmd_env, **proxies}, cwd=cwd, timeout=120)
                results[name] = {"ok": True, "seconds": round(seconds, 4)}
            except BenchError as exc:
                results[name] = {"ok": False, "error": str(exc)[-600:]}
        self.checks["no_op_without_network"] = results

    def _profile_reapply(self, project: Path, env: dict[str, str]) -> None:
        """Where a no-op apply's time goes: imports by package, then envforge's functions."""
        try:
            _, done = run([sys.executable, "-X", "importtime", "-m", "envforge", "apply",
                           "specs/theano-cpu.toml", "--yes"], env=env, cwd=project)
            self.profile["imports"] = summarize_importtime(done.stderr)
            prof = self.scratch / "reapply.prof"
            run([sys.executable, "-m", "cProfile", "-o", prof, "-m", "envforge", "apply",
                 "specs/theano-cpu.toml", "--yes"], env=env, cwd=project)
            self.profile["functions"] = summarize_profile(prof)
        except BenchError as exc:
            self.profile["error"] = str(exc)

    # -- 3. verify --

    def bench_verify(self, project: Path, home: Path, prefix: Path) -> None:
        spec_rel = "specs/theano-cpu.toml"
        env = self.envforge_env(home, fresh(self.scratch, "xdg"))
        cmd = self.envforge("verify", spec_rel, "--json")
        first = self.add(Series("verify.first", "envforge verify, first after apply",
                                f"envforge verify {spec_rel}", "cold compile cache, and "
                                "the first import of Theano in this environment"))
        cold = self.add(Series("verify.cold", "envforge verify, compile cache emptied",
                               f"envforge verify {spec_rel}",
                               "<prefix>/theano-compiledir emptied before each run"))
        warm = self.add(Series("verify.warm", "envforge verify, second (warm)",
                               f"envforge verify {spec_rel}", "right after a cold run"))

        def verify(series: Series) -> float:
            seconds, done = run(cmd, env=env, cwd=project)
            document = json.loads(done.stdout)
            series.extra.setdefault("probe_elapsed_s", []).append(document.get("elapsed_s"))
            series.extra.setdefault("counts", []).append(document.get("counts"))
            if document.get("verdict") != "pass":
                raise BenchError(f"verify did not pass: {document.get('counts')}")
            return seconds

        compiledir = prefix / "theano-compiledir"

        def cold_verify() -> float:
            if compiledir.is_dir():
                for child in compiledir.iterdir():
                    if child.is_dir() and not child.is_symlink():
                        shutil.rmtree(child)
                    else:
                        child.unlink()
            return verify(cold)

        print("verify", file=sys.stderr)
        theano = prefix / "lib" / f"python{PYTHON}" / "site-packages" / "theano"
        first.extra["theano_pyc_files_before"] = len(list(theano.rglob("*.pyc")))
        self.sample(first, lambda: verify(first))
        first.extra["theano_pyc_files_after"] = len(list(theano.rglob("*.pyc")))
        for _ in range(self.reps_verify):
            self.sample(cold, cold_verify)
            self.sample(warm, lambda: verify(warm))
        with contextlib.suppress(BenchError):
            run(self.envforge("rollback", spec_rel), env=env, cwd=project)

    # -- startup --

    def bench_startup(self) -> None:
        env = clean_environ(ENVFORGE_HOME=str(fresh(self.scratch, "home")))
        rows = [("startup.envforge", "envforge --version", self.envforge("--version")),
                ("startup.python", "python -c pass (interpreter floor)",
                 [sys.executable, "-c", "pass"]),
                ("startup.uv", "uv --version", [self.tools.uv, "--version"])]
        if self.tools.conda_lock:
            rows.append(("startup.conda_lock", "conda-lock --version",
                         [self.tools.conda_lock, "--version"]))
        series = [(self.add(Series(key, label, shlex.join(map(str, cmd)))), cmd)
                  for key, label, cmd in rows]
        print("startup", file=sys.stderr)
        for _ in range(self.reps_local):
            for s, cmd in series:
                self.sample(s, functools.partial(lambda c: run(c, env=env)[0], cmd))

    def record_not_run(self) -> None:
        self.not_run = [
            {"what": "conda-lock lock / install (no-op)",
             "why": "conda channels (conda.anaconda.org, api.anaconda.org) are unreachable from "
                    "this machine and there is no conda, mamba or micromamba; conda-lock "
                    "install asks ensureconda to download one from api.anaconda.org and retries "
                    "until it gives up. Only its start-up and its parse of the same lock "
                    "(render) are timed."},
            {"what": "pixi install (no-op)",
             "why": "pixi is not on PyPI and not installed here, and it needs conda channels "
                    "too."},
            {"what": "pip cross-platform with Theano-PyMC",
             "why": "Theano-PyMC 1.0.5 is sdist-only; with --platform pip accepts sdists only "
                    "with --no-deps (no resolution). The cross-platform pip row resolves the "
                    "other three packages; the native row (a real Python 3.7, linux-64 only) "
                    "resolves all four and builds Theano-PyMC's metadata, as uv and envforge do."},
        ]


# --- profiling summaries -----------------------------------------------------------------------

def summarize_importtime(stderr: str) -> dict[str, Any]:
    """``-X importtime`` self times summed by top-level package: they add up to the total."""
    by_package: dict[str, int] = {}
    envforge_cumulative: dict[str, int] = {}
    for line in stderr.splitlines():
        match = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|\s?(\s*)(\S+)", line)
        if match:
            package = match[4].split(".")[0]
            by_package[package] = by_package.get(package, 0) + int(match[1])
            if package == "envforge":
                envforge_cumulative[match[4]] = int(match[2])
    total = sum(by_package.values())
    top = sorted(by_package.items(), key=lambda kv: -kv[1])[:12]
    modules = sorted(envforge_cumulative.items(), key=lambda kv: -kv[1])[:15]
    return {"total_ms": round(total / 1000, 1),
            "top_packages_ms": {k: round(v / 1000, 1) for k, v in top},
            "envforge_modules_cumulative_ms": {k: round(v / 1000, 1) for k, v in modules}}


def summarize_profile(path: Path) -> list[dict[str, Any]]:
    """envforge's own functions by cumulative time, after imports are done."""
    stats = pstats.Stats(str(path))
    rows = []
    entries = stats.stats.items()  # type: ignore[attr-defined]
    for (filename, line, name), (_, calls, _tottime, cumtime, _) in entries:
        if "/envforge/" in filename and "<module>" not in name:
            rows.append({"function": f"{filename.split('/envforge/', 1)[1]}:{line}({name})",
                         "calls": calls, "cumulative_ms": round(cumtime * 1000, 1)})
    return sorted(rows, key=lambda r: -r["cumulative_ms"])[:12]


# --- the lock breakdown worker (runs in a subprocess) ------------------------------------------

def lock_breakdown_worker(spec: str) -> dict[str, float]:
    """Run ``envforge lock`` in-process with timing wrappers around its stages."""
    started = time.perf_counter()
    import envforge.app.locking as lock_cmd
    import envforge.resolve.deb as deb
    import envforge.resolve.pypi as pypi
    from envforge.ui import UI

    timings: dict[str, float] = {"python imports": time.perf_counter() - started}
    order = ["python imports"]

    def wrap(owner: Any, attr: str, label: str) -> None:
        inner = getattr(owner, attr, None)
        if inner is None:
            return
        order.append(label)

        @functools.wraps(inner)
        def timed(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                timings[label] = timings.get(label, 0.0) + time.perf_counter() - t0

        setattr(owner, attr, timed)

    wrap(lock_cmd, "ensure_compatible", "compatibility check")
    wrap(pypi, "resolve_pypi", "PyPI: resolve_pypi (both platforms)")
    wrap(pypi.proc, "run", "  uv pip compile (subprocess)")
    wrap(pypi, "pick_files", "  pick files from pylock")
    wrap(deb, "resolve_debs", "Debian: resolve_debs (linux-64)")
    wrap(deb.HttpFetch, "__call__", "  HTTP fetch (Release, index)")
    wrap(deb, "decompress_index", "  decompress Packages.xz")
    wrap(deb, "parse_packages", "  parse Packages index")
    wrap(lock_cmd, "expectations_for", "expectations (NumPy reference kernels)")
    wrap(lock_cmd, "write_lock", "write lock file")
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(sys.stderr):
        lock_cmd.run_lock([Path(spec)], platforms=(), check=False, locks_dir=None,
                          ui=UI(json=False, quiet=True))
    timings["run_lock total"] = time.perf_counter() - t0
    order.append("run_lock total")
    return {k: round(timings[k], 4) for k in order if k in timings}


# --- machine facts and reports -----------------------------------------------------------------

def machine_info(tools: Tools) -> dict[str, Any]:
    def output(cmd: Sequence[str | Path], cwd: Path | None = None) -> str:
        try:
            return subprocess.run([str(c) for c in cmd], capture_output=True, text=True,
                                  cwd=cwd, check=False, timeout=60).stdout.strip()
        except OSError:
            return ""

    cpu = ""
    with contextlib.suppress(OSError):
        cpu = next((line.split(":", 1)[1].strip() for line in
                    Path("/proc/cpuinfo").read_text().splitlines()
                    if line.startswith("model name")), "")
    mem = ""
    with contextlib.suppress(OSError, ValueError, IndexError):
        kib = int(Path("/proc/meminfo").read_text().splitlines()[0].split()[1])
        mem = f"{kib / 2**20:.0f} GiB RAM"
    from envforge import __version__

    dirty = output(["git", "--no-optional-locks", "status", "--porcelain"], cwd=ROOT)
    version = "import sys; print(sys.version.split()[0])"
    return {
        "cpu": cpu or platform.processor(), "cores": os.cpu_count(),
        "cores_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "memory": mem, "os": platform.platform(), "python": sys.version.split()[0],
        "python_target": output([tools.python37, "-c", version]),
        "uv": output([tools.uv, "--version"]),
        "pip_cross": output([sys.executable, tools.pip_cross / "pip", "-V"]).split(" from")[0],
        "pip_py37": output([tools.python37, tools.pip_py37 / "pip", "-V"]).split(" from")[0],
        "conda_lock": output([tools.conda_lock, "--version"]) if tools.conda_lock else None,
        "envforge": __version__,
        "envforge_commit": output(["git", "rev-parse", "HEAD"], cwd=ROOT),
        "working_tree_dirty": [line[3:] for line in dirty.splitlines()],
        "load_average_at_start": os.getloadavg(),
    }


def fmt(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.2f} s"


def ratio(a: Series | None, b: Series | None) -> str:
    if a is None or b is None or not a.median or not b.median:
        return "—"
    return f"{a.median / b.median:.2f}×"


def ratios(bench: Bench, rows: Sequence[tuple[str, str, str]]) -> list[str]:
    """A table of median ÷ median, one row per (label, numerator key, denominator key)."""
    get = bench.series.get
    return ["| ratio (of medians) | value |", "|---|---:|",
            *[f"| {label} | {ratio(get(a), get(b))} |" for label, a, b in rows], ""]


def table(series: Sequence[Series | None]) -> list[str]:
    lines = ["| measurement | median | min | max | n | what |", "|---|---:|---:|---:|---:|---|"]
    for s in series:
        if s is None:
            continue
        if s.error:
            lines.append(f"| {s.label} | failed | | | {len(s.samples)} | "
                         f"{s.error.splitlines()[0][:120]} |")
            continue
        lines.append(f"| {s.label} | {fmt(s.median)} | {fmt(min(s.samples, default=None))} | "
                     f"{fmt(max(s.samples, default=None))} | {len(s.samples)} | {s.note} |")
    return lines


def _load(values: Sequence[float]) -> str:
    return "/".join(f"{v:.1f}" for v in values)


def render_markdown(bench: Bench, info: dict[str, Any], command: str, started: str,
                    duration: float, json_name: str, load_at_end: Sequence[float]) -> str:
    s = bench.series.get
    out = [
        "# envforge benchmarks: theano-cpu",
        "",
        f"Produced by `{command}` on {started} in {duration:.0f} s "
        f"(raw samples: [`{json_name}`]({json_name})).",
        "",
        f"Machine: {info['cpu']}, {info['cores']} cores ({info['cores_usable']} usable), "
        f"{info['memory']}, {info['os']}. Python {info['python']} "
        f"(target {info['python_target']}); "
        f"{info['uv']}; {info['pip_cross']} (cross-platform) and {info['pip_py37']} (Python 3.7); "
        f"{info['conda_lock']}. envforge {info['envforge']} at "
        f"`{info['envforge_commit'][:12]}`"
        + (f" with {len(info['working_tree_dirty'])} uncommitted file(s)"
           if info["working_tree_dirty"] else "") + ".",
        "",
        f"Each row is the median of n wall-clock runs (n = {bench.reps_net} for network-bound "
        f"rows, {bench.reps_local} for local ones, {bench.reps_verify} for verify), with min and "
        "max. Repetitions are interleaved across tools. Network: PyPI and Debian's archive, "
        "live, through this machine's proxy, which strips caching headers (no ETag, "
        "Last-Modified or Cache-Control), so uv's and pip's \"warm\" runs must revalidate and "
        "download again what a normal network would let them reuse. Load average (1, 5, "
        f"15 min) at start {_load(info['load_average_at_start'])}, at end "
        f"{_load(load_at_end)}: other work on this machine shares its two cores. Every "
        "command runs without this machine's UV_*, PIP_*, pip.conf and PYTHONDONTWRITEBYTECODE.",
        "",
        "## 1. Lock (specs/theano-cpu.toml, linux-64 + win-64)",
        "",
        *table([s("lock.envforge.cold"), s("lock.envforge.warm"), s("lock.envforge.unchanged"),
                s("lock.envforge.unchanged_no_network"), s("lock.uv.cold"), s("lock.uv.warm"),
                s("lock.pip_cross.cold"), s("lock.pip_cross.warm"), s("lock.pip_native.cold"),
                s("lock.pip_native.warm")]),
        "",
        *ratios(bench, [
            ("envforge cold ÷ uv pip compile cold", "lock.envforge.cold", "lock.uv.cold"),
            ("envforge warm ÷ uv pip compile warm", "lock.envforge.warm", "lock.uv.warm"),
            ("envforge unchanged ÷ uv pip compile warm", "lock.envforge.unchanged",
             "lock.uv.warm"),
            ("envforge cold ÷ pip cross-platform cold (3 of 4 packages)", "lock.envforge.cold",
             "lock.pip_cross.cold"),
            ("envforge warm ÷ pip cross-platform warm (3 of 4 packages)", "lock.envforge.warm",
             "lock.pip_cross.warm"),
            ("envforge cold (2 platforms) ÷ pip native 3.7 cold (linux-64 only)",
             "lock.envforge.cold", "lock.pip_native.cold"),
            ("envforge warm (2 platforms) ÷ pip native 3.7 warm (linux-64 only)",
             "lock.envforge.warm", "lock.pip_native.warm")]),
        *render_resolved(bench.checks.get("resolved", {})),
        *render_breakdown(bench.breakdown),
        "## 2. Apply, no-op (the environment already applied)",
        "",
        *table([s("apply.envforge.first"), s("apply.envforge.noop"), s("apply.envforge.plan"),
                s("apply.uv.noop"), s("apply.pip.noop"), s("apply.conda_lock.render")]),
        "",
        *ratios(bench, [
            ("envforge apply no-op ÷ uv pip install no-op", "apply.envforge.noop",
             "apply.uv.noop"),
            ("envforge apply no-op ÷ pip install no-op", "apply.envforge.noop", "apply.pip.noop"),
            ("envforge plan no-op ÷ envforge apply no-op", "apply.envforge.plan",
             "apply.envforge.noop"),
            ("envforge apply no-op ÷ envforge --version", "apply.envforge.noop",
             "startup.envforge")]),
        "For scale, from the issue (not measured here): pixi's no-op install is about 0.6 s, "
        "conda-lock's over two minutes.",
        "",
        *render_no_network(bench.checks.get("no_op_without_network", {})),
        *render_profile(bench.profile),
        "## 3. Verify (Theano compile cache inside the environment)",
        "",
        *table([s("verify.first"), s("verify.cold"), s("verify.warm")]),
        "",
        *ratios(bench, [
            ("first verify ÷ second verify", "verify.first", "verify.warm"),
            ("verify with emptied compile cache ÷ second verify", "verify.cold", "verify.warm")]),
        *render_pyc(bench.series.get("verify.first")),
        "## Start-up, for context",
        "",
        *table([s("startup.envforge"), s("startup.python"), s("startup.uv"),
                s("startup.conda_lock")]),
        "",
        "## Not measured here, and why",
        "",
        *[f"- **{row['what']}**: {row['why']}" for row in bench.not_run],
        "",
    ]
    return "\n".join(out)


def render_pyc(first: Series | None) -> list[str]:
    if first is None or "theano_pyc_files_after" not in first.extra:
        return []
    before, after = first.extra["theano_pyc_files_before"], first.extra["theano_pyc_files_after"]
    cause = ("apply already byte-compiled Theano, so the difference is Theano's own C compile "
             "cache" if before == after else
             "so the first verify also pays Python's byte-compilation of Theano, and the "
             "emptied-cache rows isolate Theano's own C compile cache")
    return [f"Theano's .pyc files in the environment: {before} before the first verify, "
            f"{after} after it: {cause}.", ""]


def render_resolved(resolved: dict[str, Any]) -> list[str]:
    if not resolved:
        return []
    lines = ["Resolved (last cold run), to show the tools agree:", "",
             "| tool | platform | packages |", "|---|---|---|"]
    for tool, platforms in resolved.items():
        for plat, packages in platforms.items():
            lines.append(f"| {tool} | {plat} | "
                         f"{', '.join(f'{k} {v}' for k, v in sorted(packages.items()))} |")
    return [*lines, ""]


def render_breakdown(breakdown: dict[str, Any]) -> list[str]:
    if "runs" not in breakdown:
        return [f"Lock breakdown failed: {breakdown.get('error', 'not run')}", ""] \
            if breakdown else []
    labels: list[str] = []
    for runs in breakdown["runs"].values():
        for timing in runs:
            labels += [k for k in timing if k not in labels]
    lines = ["Where `envforge lock` spends its time (in-process timers around its stages; "
             "warm = median of the warm runs):", "", "| stage | cold | warm |", "|---|---:|---:|"]
    for label in labels:
        cold = [t[label] for t in breakdown["runs"]["cold"] if label in t]
        warm = [t[label] for t in breakdown["runs"]["warm"] if label in t]
        name = label.replace("  ", "&nbsp;&nbsp;↳ ") if label.startswith("  ") else label
        lines.append(f"| {name} | {fmt(cold[0]) if cold else '—'} | "
                     f"{fmt(statistics.median(warm)) if warm else '—'} |")
    return [*lines, ""]


def render_no_network(results: dict[str, Any]) -> list[str]:
    if not results:
        return []
    lines = [f"No-op with the network blocked (HTTP(S)_PROXY={DEAD_PROXY}):", "",
             "| command | result |", "|---|---|"]
    for name, result in results.items():
        text = f"ok, {fmt(result['seconds'])}" if result["ok"] else \
            f"fails: {result['error'].splitlines()[-1][:150]}"
        lines.append(f"| {name} | {text} |")
    return [*lines, ""]


def render_profile(profile: dict[str, Any]) -> list[str]:
    if not profile:
        return []
    if "error" in profile:
        return [f"Profile of the no-op apply failed: {profile['error'][:300]}", ""]
    imports = profile["imports"]
    lines = [f"Where a no-op `envforge apply` goes: {imports['total_ms']:.0f} ms of imports "
             "(`python -X importtime`, self time summed by top-level package):", "",
             "| package | ms |", "|---|---:|",
             *[f"| {k} | {v:.0f} |" for k, v in imports["top_packages_ms"].items()], "",
             "envforge's modules by cumulative import time (nested: a module includes what it "
             "imports):", "", "| module | cumulative ms |", "|---|---:|",
             *[f"| {k} | {v:.0f} |"
               for k, v in imports.get("envforge_modules_cumulative_ms", {}).items()], "",
             "envforge's functions by cumulative time (cProfile, one no-op apply):", "",
             "| function | calls | cumulative ms |", "|---|---:|---:|",
             *[f"| `{r['function']}` | {r['calls']} | {r['cumulative_ms']:.0f} |"
               for r in profile["functions"]], ""]
    return lines


# --- main --------------------------------------------------------------------------------------

@contextlib.contextmanager
def scratch_dir(keep: bool) -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="envforge-bench-"))
    try:
        yield path
    finally:
        if keep:
            print(f"kept {path}", file=sys.stderr)
        else:
            shutil.rmtree(path, ignore_errors=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--name", default="theano-cpu",
                        help="results file stem: bench/results/NAME.json (default: theano-cpu)")
    parser.add_argument("--reps-net", type=int, default=3, help="network-bound rows (default 3)")
    parser.add_argument("--reps-local", type=int, default=5, help="local rows (default 5)")
    parser.add_argument("--reps-verify", type=int, default=3, help="verify rows (default 3)")
    parser.add_argument("--quick", action="store_true", help="one repetition of everything")
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder")
    parser.add_argument("--lock-breakdown-worker", metavar="SPEC", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.lock_breakdown_worker:
        print(json.dumps(lock_breakdown_worker(args.lock_breakdown_worker)))
        return 0
    if args.quick:
        args.reps_net = args.reps_local = args.reps_verify = 1
    rest = list(sys.argv[1:] if argv is None else argv)
    command = shlex.join([".venv/bin/python", "bench/run.py", *rest])
    if os.environ.get("MAKELEVEL") and not rest:
        command = f"make bench ({command})"
    started_at = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    t0 = time.perf_counter()
    with scratch_dir(args.keep) as scratch:
        bench = Bench(scratch, args.reps_net, args.reps_local, args.reps_verify)
        info = machine_info(bench.tools)
        bench.bench_startup()
        project = bench.bench_lock()
        applied = bench.bench_apply(project)
        if applied is not None:
            bench.bench_verify(project, *applied)
        bench.record_not_run()
    duration = time.perf_counter() - t0
    RESULTS.mkdir(parents=True, exist_ok=True)
    json_path = RESULTS / f"{args.name}.json"
    document = {
        "load_average_at_end": os.getloadavg(),
        "schema": 1, "command": command, "started": started_at, "duration_s": round(duration, 1),
        "spec": str(SPEC.relative_to(ROOT)), "machine": info,
        "reps": {"network": bench.reps_net, "local": bench.reps_local,
                 "verify": bench.reps_verify},
        "measurements": {k: v.summary() for k, v in bench.series.items()},
        "lock_breakdown": bench.breakdown, "checks": bench.checks,
        "apply_noop_profile": bench.profile, "not_run": bench.not_run,
    }
    json_path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    (RESULTS / "RESULTS.md").write_text(
        render_markdown(bench, info, command, started_at, duration, json_path.name,
                        document["load_average_at_end"]),
        encoding="utf-8")
    print(f"wrote {json_path.relative_to(ROOT)} and bench/results/RESULTS.md "
          f"in {duration:.0f} s", file=sys.stderr)
    failed = [s.label for s in bench.series.values() if s.error]
    if failed:
        print(f"failed rows: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
