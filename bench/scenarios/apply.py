"""Apply: cold (both online) and warm (both ``--offline``) against a venv and ``uv pip install
--require-hashes`` of the same lock; the no-op against ``python -c pass``, ``uv pip sync
--offline`` and pip, stamped, after the environment was used, on the real path (no stamp: the
cheap check) and on the full path (planning); bundle
against ``pip wheel``. linux-64 only (this host)."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from bench.harness import Bench, Goal, Sample, clean_environ, summed, timed
from bench.scenarios.common import INDEX, Project, Tools, export_requirements

RACY_S = 1.1  # envforge trusts a no-op stamp only once its files are a second old


def _venv_uv_install(tools: Tools, venv: Path, requirements: Path, cache: Path, *,
                     offline: bool) -> Sample:
    env = clean_environ()
    return summed([
        timed([tools.python37, "-m", "venv", "--without-pip", venv], env=env),
        timed([tools.uv, "pip", "install", "--python", venv / "bin" / "python", "--no-config",
               "--index-url", INDEX, "--require-hashes", "--no-deps", "--cache-dir", cache,
               *(["--offline"] if offline else []), "-r", requirements], env=env)])


def run_apply(bench: Bench, tools: Tools, scratch: Path, project: Project, *, rounds: int,
              noop_rounds: int, bundle: bool) -> Path:
    """Returns the ENVFORGE_HOME of the first cold apply (one environment applied)."""
    size = project.size
    section = f"Apply ({size}, linux-64)"
    reqs = export_requirements(tools, project, scratch / f"{size}-requirements.txt")
    homes = [scratch / f"{size}-apply{i}" for i in range(rounds)]

    def envforge_apply(i: int, *, warm: bool) -> Sample:
        env = clean_environ(ENVFORGE_HOME=str(homes[i]), HOME=str(homes[i] / "home"))
        (homes[i] / "home").mkdir(parents=True, exist_ok=True)
        warm_words = ["--offline", "--prefix", str(homes[i] / "warm-env")] if warm else []
        return timed([tools.envforge, "apply", project.spec, "--yes", "-q", *warm_words],
                     env=env, cwd=project.root)

    def uv_install(i: int, *, warm: bool) -> Sample:
        venv = homes[i] / ("uv-warm-env" if warm else "uv-env")
        return _venv_uv_install(tools, venv, reqs, homes[i] / "uv-cache", offline=warm)

    cmd = f"envforge apply specs/{size}.toml --yes"
    cmd_uv = "python3.7 -m venv --without-pip V && uv pip install --require-hashes -r R"
    bench.paired(section, rounds, [
        (f"apply-cold-{size}", "envforge apply, cold (empty caches)", cmd,
         lambda i: envforge_apply(i, warm=False)),
        (f"uv-install-cold-{size}", "venv + uv pip install, cold (empty cache)", cmd_uv,
         lambda i: uv_install(i, warm=False))])
    bench.paired(section, rounds, [
        (f"apply-warm-{size}", "envforge apply --offline, warm (caches full, new prefix)",
         f"{cmd} --offline --prefix P", lambda i: envforge_apply(i, warm=True)),
        (f"uv-install-warm-{size}",
         "venv + uv pip install --offline, warm (cache full, new venv)",
         cmd_uv.replace("install", "install --offline"), lambda i: uv_install(i, warm=True))])
    bench.goals += [
        Goal(f"apply {size}, cold ÷ venv + uv pip install cold", f"apply-cold-{size}",
             f"uv-install-cold-{size}", 1.2),
        Goal(f"apply {size}, cold, CPU ÷ venv + uv pip install cold, CPU",
             f"apply-cold-{size}", f"uv-install-cold-{size}", None, quantity="cpu_seconds"),
        Goal(f"apply {size}, warm ÷ venv + uv pip install warm (both offline)",
             f"apply-warm-{size}", f"uv-install-warm-{size}", 3.0)]

    home = homes[0]
    env = clean_environ(ENVFORGE_HOME=str(home), HOME=str(home / "home"))
    prefix = home / "data" / "envs" / project.spec.stem
    python = prefix / "bin" / "python"
    words = [tools.envforge, "apply", project.spec, "--yes"]
    real = [tools.envforge, "apply", project.root / project.spec, "--yes"]  # a stamp of its own
    uv_sync = [tools.uv, "pip", "sync", "--python", python, "--no-config", "--index-url", INDEX,
               "--require-hashes", "--offline", "--cache-dir", home / "uv-cache", reqs]

    def used(i: int) -> Sample:
        """Untimed first: uv makes its .lock in the prefix again, Python writes bytecode
        beside the modules it imports, as using the environment does."""
        (prefix / ".lock").unlink(missing_ok=True)
        timed(uv_sync, env=env)
        shutil.rmtree(prefix / "lib" / "python3.7" / "site-packages" / "__pycache__",
                      ignore_errors=True)
        timed([python, "-c", "import numpy, six"], env=env)
        return timed([*words, "--offline"], env=env, cwd=project.root)

    stamps, records = home / "cache" / "noop", home / "cache" / "noop-env"

    def real_check(i: int) -> Sample:
        """Every stamp removed first (untimed): no stamp can answer, whatever the words and
        variables; the cheap check (envforge/host/noopcheck.py) or planning decides."""
        shutil.rmtree(stamps, ignore_errors=True)
        return timed([*real, "--offline"], env=env, cwd=project.root)

    def full_path(i: int) -> Sample:
        """The stamps and the check's records put aside (untimed), then put back."""
        shutil.rmtree(stamps, ignore_errors=True)
        aside = records.with_name("noop-env-aside")
        if records.is_dir():
            records.rename(aside)
        try:
            return timed([*real, "--offline"], env=env, cwd=project.root)
        finally:
            if aside.is_dir():
                shutil.rmtree(records, ignore_errors=True)
                aside.rename(records)

    noop = [
        (f"noop-{size}", "envforge apply, no-op", "envforge apply SPEC --yes",
         lambda i: timed(words, env=env, cwd=project.root)),
        (f"noop-used-{size}", "envforge apply --offline, no-op, the environment used since "
         "(uv sync made its .lock, Python its __pycache__)", "envforge apply SPEC --yes --offline",
         used),
        (f"noop-real-{size}", "envforge apply --offline, no-op, the real path (no stamp holds: "
         "each removed first; the check decides again from the lock and the environment)",
         "envforge apply SPEC --yes --offline", real_check),
        (f"noop-full-{size}", "envforge apply --offline, no-op, the full path (no stamp and no "
         "record of the cheap check: planning decides)", "envforge apply SPEC --yes --offline",
         full_path),
        (f"python-{size}", "python -c pass (envforge's interpreter)", "python -c pass",
         lambda i: timed([tools.python, "-c", "pass"], env=env)),
        (f"uv-sync-{size}", "uv pip sync --offline, no-op",
         "uv pip sync --offline --require-hashes R", lambda i: timed(uv_sync, env=env)),
        (f"pip-noop-{size}", "pip 24.0 install, no-op (run by the environment's Python)",
         "python <pip 24.0>/pip install --require-hashes --no-deps -r R",
         lambda i: timed([python, tools.pip37 / "pip", "install", "--no-deps",
                          "--require-hashes", "--index-url", INDEX, "-r", reqs], env=env)),
    ]
    for key, _, _, fn in noop:
        if not key.startswith("noop-"):
            fn(-1)  # each tool once, untimed: what a first run writes (uv's .lock) is there
    time.sleep(RACY_S)
    timed(words, env=env, cwd=project.root)  # the first no-op takes the real path: a stamp
    timed([*words, "--offline"], env=env, cwd=project.root)
    time.sleep(RACY_S)
    bench.paired(f"No-op apply ({size})", noop_rounds, noop)
    bench.goals += [
        Goal(f"no-op apply {size} ÷ python -c pass", f"noop-{size}", f"python-{size}",
             3.0 if size == "theano-cpu" else None),
        Goal(f"no-op apply {size} ÷ uv pip sync --offline", f"noop-{size}", f"uv-sync-{size}",
             None),
        Goal(f"no-op apply {size} ÷ pip install no-op", f"noop-{size}", f"pip-noop-{size}",
             None),
        Goal(f"no-op apply {size}, the environment used ÷ uv pip sync --offline",
             f"noop-used-{size}", f"uv-sync-{size}", 4.0),
        Goal(f"no-op apply {size}, real path ÷ uv pip sync --offline", f"noop-real-{size}",
             f"uv-sync-{size}", 4.0),
        Goal(f"no-op apply {size}, full path (planning) ÷ uv pip sync --offline",
             f"noop-full-{size}", f"uv-sync-{size}", None)]
    if bundle:
        _bundle(bench, tools, scratch, project, reqs, home, rounds)
    return home


def _bundle(bench: Bench, tools: Tools, scratch: Path, project: Project, reqs: Path,
            home: Path, rounds: int) -> None:
    """Warm caches both: envforge's from the apply, pip's from one untimed run."""
    size = project.size
    copy = scratch / f"{size}-bundle-project"
    shutil.copytree(project.root, copy)  # bundle records built wheels' sha256 in its lock
    env = clean_environ(ENVFORGE_HOME=str(home), HOME=str(home / "home"),
                        PIP_CACHE_DIR=str(scratch / f"{size}-pip-cache"))
    lock = copy / "locks" / project.lock.name
    pip = [tools.python37, tools.pip37 / "pip", "wheel", "--no-deps", "--require-hashes",
           "--index-url", INDEX, "-r", reqs, "-w"]
    timed([*pip, scratch / f"{size}-pip-wheels-warmup"], env=env)

    def envforge_bundle(i: int) -> Sample:
        out = scratch / f"{size}-bundle{i}"
        return timed([tools.envforge, "bundle", lock, "-o", out, "--platform", "linux-64",
                      "-q"], env=env, cwd=copy)

    bench.paired(f"Bundle ({size}, linux-64)", rounds, [
        (f"bundle-{size}", "envforge bundle, warm cache", "envforge bundle LOCK -o D",
         envforge_bundle),
        (f"pip-wheel-{size}", "pip 24.0 wheel (downloads, builds sdists), warm cache",
         "python3.7 <pip 24.0>/pip wheel --require-hashes --no-deps -r R -w D",
         lambda i: timed([*pip, scratch / f"{size}-pip-wheels{i}"], env=env))])
    bench.goals.append(Goal(f"bundle {size} ÷ pip wheel", f"bundle-{size}", f"pip-wheel-{size}",
                            None))
