"""Where ``make test``'s CPU goes (issue 27's CI goal): each test's own CPU and its child
processes' (``RUSAGE_SELF`` and ``RUSAGE_CHILDREN`` around its setup, call and teardown),
summed per test file.

    .venv/bin/python bench/suite_cpu.py [-o OUT.jsonl] [PYTEST ARGS...]

Runs the suite as ``make test`` does (``-m "not gpu and not fleet"``, 4 workers, whole files
per worker) with this module as a pytest plugin, then prints the totals and the files that
took the most. A child counts once it has been waited for, as ``subprocess.run`` does.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_OUT = "ENVFORGE_SUITE_CPU_OUT"


def _cpu() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    """One line per test in the file ``ENVFORGE_SUITE_CPU_OUT`` names (appended: workers
    write whole lines)."""
    own, children = _cpu()
    start = time.monotonic()
    yield
    own_after, children_after = _cpu()
    with open(os.environ[_OUT], "a", encoding="utf-8") as out:
        out.write(json.dumps({"id": item.nodeid, "own": own_after - own,
                              "children": children_after - children,
                              "wall": time.monotonic() - start}) + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--out", type=Path, help="keep the per-test lines here")
    parser.add_argument("--top", type=int, default=15)
    args, pytest_args = parser.parse_known_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="suite-cpu-")) / "tests.jsonl"
    out.unlink(missing_ok=True)
    env = {**os.environ, _OUT: str(out),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "bench.suite_cpu",
               "-m", "not gpu and not fleet", "-n", "4", "--dist", "loadfile",
               "--no-loadscope-reorder", *pytest_args]
    done = subprocess.run(command, cwd=ROOT, env=env, check=False)
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    own = sum(r["own"] for r in rows)
    children = sum(r["children"] for r in rows)
    print(f"{len(rows)} tests: {own + children:.0f} CPU-s, {children:.0f} of it in child "
          f"processes (pytest exit {done.returncode}; per test: {out})")
    per_file: collections.Counter[str] = collections.Counter()
    wall: collections.Counter[str] = collections.Counter()
    for r in rows:
        name = r["id"].split("::", 1)[0]
        per_file[name] += r["own"] + r["children"]
        wall[name] += r["wall"]
    total = own + children or 1.0
    for name, cpu in per_file.most_common(args.top):
        print(f"{cpu:7.0f} CPU-s {cpu / total:6.1%} {wall[name]:6.0f} s  {name}")
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
