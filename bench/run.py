"""Benchmarks: envforge against uv, pip and the bare interpreter, in paired rounds.

``make bench`` (``.venv/bin/python bench/run.py``) runs the scenarios in ``bench/scenarios/``
(lock, apply, no-op, bundle, start-up) for the sizes asked, prints every ratio with its goal
and whether it is met, and writes ``bench/results/<name>.json`` (every sample, machine
facts) and ``bench/results/RESULTS.md``. Tools run as commands only: nothing here reaches
into envforge's internals. See bench/README.md for why each pair is the fair one.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness import Bench, load_average, markdown, ratio_line
from bench.scenarios.apply import run_apply
from bench.scenarios.common import ROOT, SIZES, find_tools, locked_files
from bench.scenarios.lock import run_lock
from bench.scenarios.startup import run_startup

RESULTS = ROOT / "bench" / "results"


def _git(*args: str) -> str:
    done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True,
                          check=False)
    return done.stdout.strip()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=",".join(SIZES),
                        help=f"comma-separated, of {', '.join(SIZES)}")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of the lock pairs")
    parser.add_argument("--apply-rounds", type=int, default=2,
                        help="rounds of the cold/warm apply and bundle pairs (the longest)")
    parser.add_argument("--bundle-sizes", default="theano-cpu",
                        help="sizes whose bundle is measured (comma-separated)")
    parser.add_argument("--local-rounds", type=int, default=9,
                        help="rounds of the local pairs (no-op, start-up)")
    parser.add_argument("--only", choices=("lock", "apply", "startup"), action="append",
                        help="run only these scenarios (repeatable; apply locks first)")
    parser.add_argument("--name", default="bench", help="results/<name>.json")
    parser.add_argument("--no-markdown", action="store_true", help="leave RESULTS.md alone")
    parser.add_argument("--markdown", default="RESULTS.md",
                        help="results/<this> is the markdown written (a partial run's own)")
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder")
    args = parser.parse_args(argv)
    sizes = [s for s in args.sizes.split(",") if s]
    unknown = [s for s in sizes if s not in SIZES]
    if unknown:
        parser.error(f"unknown size {unknown[0]}")
    only = set(args.only or ("lock", "apply", "startup"))

    started, clock = dt.datetime.now(dt.UTC), time.perf_counter()
    load_start = load_average()
    scratch = Path(tempfile.mkdtemp(prefix="envforge-bench-"))
    bench = Bench(rounds=args.rounds)
    tools = find_tools(Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
                       / "envforge-bench")
    counts: dict[str, int] = {}
    status_home = None
    try:
        for size in sizes:
            print(f"== {size}", flush=True)
            project = run_lock(bench, tools, scratch, size) if only & {"lock", "apply"} \
                else None
            if project is not None:
                counts[size] = locked_files(project)
            if "apply" in only and project is not None:
                home = run_apply(bench, tools, scratch, project, rounds=args.apply_rounds,
                                 noop_rounds=args.local_rounds,
                                 bundle=size in args.bundle_sizes.split(","))
                status_home = status_home or home
        if "startup" in only:
            print("== start-up", flush=True)
            run_startup(bench, tools, status_home, args.local_rounds)
    finally:
        if not args.keep:
            shutil.rmtree(scratch, ignore_errors=True)
    seconds = time.perf_counter() - clock
    command = shlex.join([".venv/bin/python", "bench/run.py", *(argv or sys.argv[1:])])
    header = [
        "# envforge benchmarks", "",
        f"Produced by `{command}` on {started:%Y-%m-%d %H:%M} UTC in {seconds:.0f} s "
        f"(samples: [`{args.name}.json`]({args.name}.json)).", "",
        f"Machine: {os.cpu_count()} cores, load average (1/5/15 min) {load_start} at start, "
        f"{load_average()} at end: other jobs share this machine, so absolute times vary; "
        "the ratios are taken within each round (the tools of one round run back to back, "
        "in an order reversed every other round). Rounds: "
        f"{args.rounds} for lock, {args.apply_rounds} for cold/warm apply and bundle, "
        f"{args.local_rounds} for the no-op and start-up. "
        f"envforge at `{_git('rev-parse', '--short=12', 'HEAD')}`"
        + (" with uncommitted changes" if _git("status", "--porcelain", "--", "envforge",
                                                 "bench", ":!bench/results") else "")
        + f"; uv at `{tools.uv}`, Python {tools.python37_version} for the environments.", "",
        "Locked files per size (linux-64): " + ", ".join(f"{s} {n}" for s, n in counts.items())
        + ". A goal is judged by the median of the per-round ratios.",
    ]
    bench.notes += [
        "What each lock row does. `uv pip compile` (the goal's baseline): the spec's "
        "requirements and what envforge adds for Theano, `--generate-hashes`, once per "
        "platform, one after the other, as a user locking both would type it (uv finds a "
        "Python for builds itself). envforge lock: the same two resolutions (each with "
        "every file's hash), run at once, each given `--python` the Python 3.7 envforge "
        "found (uv builds Theano-PyMC's metadata with it and skips its own interpreter "
        "search, which runs pyenv's shims here: about a second per run), the platform "
        "that is not the host's in a uv cache of its own, and glibc's resolver told to ask "
        "again after 1 s, not 5, for a lost DNS reply (`RES_OPTIONS`, envforge.host.dnsretry: "
        "this host's DNS loses a few replies, and uv looks its host up once per "
        "connection); beside them the suite's runner "
        "for each platform (two more uv runs), Debian's index (theano-cpu) and the "
        "kernels' references (taken from envforge's cache when warm), then the lock is "
        "written. `uv pip compile as envforge runs it` (goal ≤ 1.2×, issue 27): uv "
        "alone, given what envforge gives it (both platforms at once, `--python`, a cache "
        "per platform, the resolver's quick retry): the floor envforge's own work adds to.",
        "This machine's network goes through a proxy that strips ETag, Last-Modified and "
        "Cache-Control, so warm uv runs download and build Theano-PyMC's metadata again.",
        "Peak memory is wait4's ru_maxrss: the largest single process of the command's tree "
        "(envforge or the uv it runs).",
        "The first no-op apply after a change takes the real path and writes the stamp; the "
        "no-op rows are the runs after it. The used row: before each (untimed) uv sync "
        "makes its `.lock` in the prefix again and Python writes `__pycache__` in "
        "site-packages, which the stamp allows. The real-path row: every stamp is removed "
        "before each round (a variable differing each round, as this row once did, no "
        "longer reaches the real path: the cheap check reads only the variables the plan "
        "depends on), so no stamp holds and the check decides again from the lock and the "
        "environment (`envforge/host/noopcheck.py`). The full-path row also puts the "
        "check's records aside: planning decides, as before the check.",
        "`envforge status` is decided from its stamp likewise: the bench's first status "
        "(untimed) writes it, the rows are the runs after it.",
    ]
    RESULTS.mkdir(exist_ok=True)
    judged = bench.judged()
    (RESULTS / f"{args.name}.json").write_text(json.dumps({
        "command": command, "started": started.isoformat(), "seconds": seconds,
        "load_start": load_start, "load_end": load_average(), "counts": counts,
        "goals": judged,
        "rows": {k: {**asdict(r), "samples": [asdict(s) for s in r.samples]}
                 for k, r in bench.rows.items()}}, indent=1) + "\n", encoding="utf-8")
    if not args.no_markdown:
        (RESULTS / args.markdown).write_text(markdown(bench, header), encoding="utf-8")
    print("\n== goals")
    for j in judged:
        print(ratio_line(j))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
