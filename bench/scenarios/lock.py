"""Lock: ``envforge lock`` against ``uv pip compile --generate-hashes`` of the same
requirements for the same platforms, cold (fresh caches, no lock) and warm (caches full, the
spec edited: one package added), and the peak memory of each.

Warm, each tool keeps what it wrote: uv its output file, envforge its lock, and each
prefers the versions found there. Removing only envforge's lock (as this bench once did)
timed a search uv was spared: with its output kept, uv re-resolves ml75 for win-64 in
2.4 s, without it in 7.2 s (``bench/preferences.py``)."""

from __future__ import annotations

import shlex
from pathlib import Path

from bench.harness import Bench, Goal, Sample, clean_environ, summed, timed
from bench.scenarios.common import INDEX, UV_PLATFORMS, Project, Tools, new_project

EDIT = "colorama==0.4.6"  # the warm rounds' edit: a small package every size can add
TUNED_GOAL = 1.2  # issue 27: envforge's own work on top of uv's, cold and warm


def add_package(project: Project, requirement: str) -> None:
    """Edit the spec as a user would: one more PyPI package, first in its list."""
    import tomllib

    spec = project.root / project.spec
    text = spec.read_text("utf-8")
    first = tomllib.loads(text)["pypi"]["packages"][0]
    spec.write_text(text.replace(f'"{first}"', f'"{requirement}", "{first}"', 1), "utf-8")


def _compile_argv(tools: Tools, project: Project, platform: str, *extra: str) -> list[str]:
    req_in = project.root / "requirements.in"
    req_in.write_text("\n".join(project.requirements()) + "\n", encoding="utf-8")
    return [tools.uv, "pip", "compile", str(req_in), "--quiet", "--no-header",
            "--generate-hashes", "--python-version", tools.python37_version,
            "--python-platform", UV_PLATFORMS[platform], "--index-url", INDEX, "--no-config",
            "--output-file", str(project.root / f"uv-{platform}{'-tuned' if extra else ''}.txt"),
            *extra]


def _uv_compile(tools: Tools, project: Project, xdg: Path) -> Sample:
    """One uv run per platform, one after the other, as a user locking both would."""
    env = clean_environ(XDG_CACHE_HOME=str(xdg))
    return summed([timed(_compile_argv(tools, project, p), env=env)
                   for p in project.platforms()])


def _uv_compile_tuned(tools: Tools, project: Project, xdg: Path) -> Sample:
    """uv given what envforge gives it: the platforms' runs at once, each in a cache of its
    own, ``--python`` the Python 3.7 found (uv builds with it and searches for none), and
    the DNS resolver's quick retry (``envforge.host.dnsretry``)."""
    from envforge.host.dnsretry import host_retry_options

    runs = [shlex.join(_compile_argv(tools, project, p, "--python", tools.python37,
                                     "--cache-dir", str(xdg / f"uv-{p}")))
            for p in project.platforms()]
    # sh waits for each run (wait4 on sh then gives the largest one's peak memory) and
    # fails if either did
    script = "".join(f"{run} & p{k}=$!; " for k, run in enumerate(runs))
    script += " && ".join(f"wait $p{k}" for k in range(len(runs)))
    return timed(["sh", "-c", script], env=clean_environ(**host_retry_options({})))


def run_lock(bench: Bench, tools: Tools, scratch: Path, size: str) -> Project | None:
    """Returns a project holding a fresh lock (a copy of the first cold round's, taken
    before the warm rounds edit it), for the apply rows."""
    rounds = [(new_project(scratch, size, f"lock{i}"), scratch / f"{size}-lock{i}-cache")
              for i in range(bench.rounds)]

    def envforge_lock(i: int) -> Sample:
        project, cache = rounds[i]
        env = clean_environ(ENVFORGE_HOME=str(cache / "envforge"),
                            XDG_CACHE_HOME=str(cache / "xdg-envforge"))
        return timed([tools.envforge, "lock", project.spec, "-q"], env=env, cwd=project.root)

    def uv(i: int) -> Sample:
        project, cache = rounds[i]
        return _uv_compile(tools, project, cache / "xdg-uv")

    def uv_tuned(i: int) -> Sample:
        project, cache = rounds[i]
        return _uv_compile_tuned(tools, project, cache / "uv-tuned")

    cmd_e = f"envforge lock specs/{size}.toml"
    cmd_u = "uv pip compile --generate-hashes (each platform; times summed)"
    cmd_t = ("uv pip compile --generate-hashes --python P37 --cache-dir C-PLATFORM "
             "(both platforms at once)")
    for phase, what in (("cold", "fresh caches, no lock"),
                        ("warm", f"caches full, spec edited: {EDIT} added")):
        bench.paired(f"Lock ({size}, linux-64 + win-64)", bench.rounds, [
            (f"lock-{phase}-{size}", f"envforge lock, {phase} ({what})", cmd_e, envforge_lock),
            (f"uv-compile-{phase}-{size}", f"uv pip compile, {phase}", cmd_u, uv),
            (f"uv-tuned-{phase}-{size}", f"uv pip compile as envforge runs it, {phase}",
             cmd_t, uv_tuned)],
            before=(lambda i: add_package(rounds[i][0], EDIT)) if phase == "warm" else None)
        if phase == "cold":  # the apply rows take the spec as it is, with its fresh lock
            applied = _copy_project(rounds[0][0], scratch / f"{size}-locked")
        bench.goals.append(Goal(f"lock {size}, {phase} ÷ uv pip compile {phase}",
                                f"lock-{phase}-{size}", f"uv-compile-{phase}-{size}", 1.0))
        bench.goals.append(Goal(f"lock {size}, {phase} ÷ uv pip compile as envforge runs it",
                                f"lock-{phase}-{size}", f"uv-tuned-{phase}-{size}",
                                TUNED_GOAL))
        if phase == "cold":  # the work each does, where 2 cores bind the wall time
            bench.goals.append(Goal(f"lock {size}, cold, CPU ÷ uv pip compile as envforge "
                                    "runs it, CPU", f"lock-cold-{size}",
                                    f"uv-tuned-cold-{size}", None, quantity="cpu_seconds"))
    bench.goals.append(Goal(f"lock {size}, peak memory (cold) ÷ uv's", f"lock-cold-{size}",
                            f"uv-compile-cold-{size}", 2.0, quantity="peak_mb"))
    return applied if applied.lock.is_file() else None


def _copy_project(project: Project, root: Path) -> Project:
    import shutil

    shutil.copytree(project.root, root, ignore=shutil.ignore_patterns("uv-*.txt"))
    return Project(project.size, root, project.spec)
