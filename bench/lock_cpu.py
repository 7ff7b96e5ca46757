"""Where a cold lock of specs/theano-cpu.toml spends its CPU (issue 27: on 2 cores the lock is
CPU-bound beside uv's runs), and what the kernels' references child costs with NumPy's BLAS
on one thread (``app/references.child_environ``) and on its own default.

    .venv/bin/python bench/lock_cpu.py [--rounds 3]

Each round locks the spec cold (a fresh ENVFORGE_HOME and XDG_CACHE_HOME, no lock) through
``cli.main`` in a Python that prints, as it exits, its own CPU (``RUSAGE_SELF``) and its
children's (``RUSAGE_CHILDREN``: uv's runs, the references child, the interpreter queries,
gpgv); then runs the references child alone for the same request twice, with and without the
BLAS variables ``child_environ`` sets, the order swapped every other round, each with an
empty cache (so it computes). Prints the medians.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness import clean_environ, timed
from bench.scenarios.common import ROOT

# the lock through cli.main, its process's and its children's CPU written as it exits
LOCK = ("import atexit, json, os, resource, sys\n"
        "def said():\n"
        "    s, c = (resource.getrusage(w) for w in (resource.RUSAGE_SELF,"
        " resource.RUSAGE_CHILDREN))\n"
        "    with open(os.environ['BENCH_CPU_OUT'], 'w') as f:\n"
        "        json.dump({'self': s.ru_utime + s.ru_stime,"
        " 'children': c.ru_utime + c.ru_stime}, f)\n"
        "atexit.register(said)\n"
        "import envforge.cli as c; sys.argv[0] = 'envforge'; raise SystemExit(c.main())\n")
BLAS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def _request(spec: Path) -> str:
    data = tomllib.loads(spec.read_text(encoding="utf-8"))
    return json.dumps({"verify": data["verify"], "float_x": data["theano"]["floatX"],
                       "packs": ["theano"]})


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    from envforge.app.references import child_environ

    spec = ROOT / "specs" / "theano-cpu.toml"
    request = _request(spec)
    scratch = Path(tempfile.mkdtemp(prefix="envforge-lockcpu-"))
    lock: dict[str, list[float]] = {"wall": [], "self": [], "children": []}
    child: dict[str, list[float]] = {"one BLAS thread": [], "BLAS default": []}
    try:
        for i in range(args.rounds):
            project = scratch / f"r{i}"
            (project / "specs").mkdir(parents=True)
            shutil.copy(spec, project / "specs" / spec.name)
            out = project / "cpu.json"
            env = clean_environ(ENVFORGE_HOME=str(project / "home"),
                                XDG_CACHE_HOME=str(project / "xdg"), BENCH_CPU_OUT=str(out))
            sample = timed([sys.executable, "-c", LOCK, "lock", f"specs/{spec.name}", "-q"],
                           env=env, cwd=project)
            used = json.loads(out.read_text(encoding="utf-8"))
            lock["wall"].append(sample.seconds)
            lock["self"].append(used["self"])
            lock["children"].append(used["children"])
            order = list(child) if i % 2 == 0 else list(reversed(child))
            for side in order:
                base = {k: v for k, v in clean_environ().items() if k not in BLAS}
                env = child_environ(base) if side == "one BLAS thread" else base
                env["ENVFORGE_HOME"] = str(project / f"refs-{side.split()[0]}")
                done = _cpu_of([sys.executable, "-m", "envforge.app.references"], request, env)
                child[side].append(done)
        print(f"cold lock of {spec.name}, {args.rounds} rounds (medians): wall "
              f"{statistics.median(lock['wall']):.2f} s; CPU: envforge's process "
              f"{statistics.median(lock['self']):.2f} s, its children "
              f"{statistics.median(lock['children']):.2f} s")
        for side, seconds in child.items():
            print(f"references child, {side}: CPU median {statistics.median(seconds):.2f} s "
                  f"(min {min(seconds):.2f}, max {max(seconds):.2f})")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


def _cpu_of(argv: list[str], stdin: str, env: dict[str, str]) -> float:
    """The CPU (user + system) of one child fed ``stdin``, by its rusage."""
    child = subprocess.Popen(argv, env=env, stdin=subprocess.PIPE,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    assert child.stdin is not None
    child.stdin.write(stdin.encode("utf-8"))
    child.stdin.close()
    _, status, usage = os.wait4(child.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"the references child failed: {' '.join(argv)}")
    return usage.ru_utime + usage.ru_stime


if __name__ == "__main__":
    raise SystemExit(main())
