"""Lock: ``envforge lock`` against ``uv pip compile --generate-hashes`` of the same
requirements for the same platforms, cold (fresh caches) and warm (caches full, the lock
removed so that it resolves again), and the peak memory of each."""

from __future__ import annotations

from pathlib import Path

from bench.harness import Bench, Goal, Sample, clean_environ, summed, timed
from bench.scenarios.common import INDEX, UV_PLATFORMS, Project, Tools, new_project


def _uv_compile(tools: Tools, project: Project, xdg: Path) -> Sample:
    """One uv run per platform, one after the other, as a user locking both would."""
    req_in = project.root / "requirements.in"
    req_in.write_text("\n".join(project.requirements()) + "\n", encoding="utf-8")
    env = clean_environ(XDG_CACHE_HOME=str(xdg))
    return summed([timed([tools.uv, "pip", "compile", req_in, "--quiet", "--no-header",
                          "--generate-hashes", "--python-version", tools.python37_version,
                          "--python-platform", UV_PLATFORMS[p], "--index-url", INDEX,
                          "--no-config", "--output-file", project.root / f"uv-{p}.txt"],
                         env=env) for p in project.platforms()])


def run_lock(bench: Bench, tools: Tools, scratch: Path, size: str) -> Project | None:
    """Returns a project holding a fresh lock (the first cold round's), for the apply rows."""
    rounds = [(new_project(scratch, size, f"lock{i}"), scratch / f"{size}-lock{i}-cache")
              for i in range(bench.rounds)]

    def envforge_lock(i: int) -> Sample:
        project, cache = rounds[i]
        project.lock.unlink(missing_ok=True)
        env = clean_environ(ENVFORGE_HOME=str(cache / "envforge"),
                            XDG_CACHE_HOME=str(cache / "xdg-envforge"))
        return timed([tools.envforge, "lock", project.spec, "-q"], env=env, cwd=project.root)

    def uv(i: int) -> Sample:
        project, cache = rounds[i]
        return _uv_compile(tools, project, cache / "xdg-uv")

    cmd_e = f"envforge lock specs/{size}.toml"
    cmd_u = "uv pip compile --generate-hashes (each platform; times summed)"
    for phase, what in (("cold", "fresh caches, no lock"),
                        ("warm", "caches full, lock removed: resolves again")):
        bench.paired(f"Lock ({size}, linux-64 + win-64)", bench.rounds, [
            (f"lock-{phase}-{size}", f"envforge lock, {phase} ({what})", cmd_e, envforge_lock),
            (f"uv-compile-{phase}-{size}", f"uv pip compile, {phase}", cmd_u, uv)])
        bench.goals.append(Goal(f"lock {size}, {phase} ÷ uv pip compile {phase}",
                                f"lock-{phase}-{size}", f"uv-compile-{phase}-{size}", 1.0))
    bench.goals.append(Goal(f"lock {size}, peak memory (cold) ÷ uv's", f"lock-cold-{size}",
                            f"uv-compile-cold-{size}", 2.0, memory=True))
    first = rounds[0][0]
    return first if first.lock.is_file() else None
