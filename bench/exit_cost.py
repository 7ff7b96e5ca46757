"""A warm apply's exit with and without the interpreter's last full collection, in the same
rounds (issue 27: ``cli.entry`` freezes every object before the process ends).

    .venv/bin/python bench/exit_cost.py [--rounds 9]

One cold apply of specs/theano-cpu.toml fills a scratch ENVFORGE_HOME; then each round
applies it ``--offline`` into a new prefix twice, the order swapped every other round:
through ``cli.entry`` (the ``envforge`` command) and through ``cli.main`` returned to a plain
interpreter exit (what the command did before). Prints each side's median wall time and the
median of the per-round differences.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness import clean_environ, timed
from bench.scenarios.common import ROOT

SIDES = {
    "entry (frozen at exit)": "import sys, envforge.cli as c; sys.argv[0] = 'envforge'; c.entry()",
    "main, plain exit": "import sys, envforge.cli as c; sys.argv[0] = 'envforge'; "
                        "raise SystemExit(c.main())",
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="envforge-exit-"))
    try:
        env = clean_environ(ENVFORGE_HOME=str(scratch / "home"), HOME=str(scratch / "user"))
        (scratch / "user").mkdir()
        spec = ROOT / "specs" / "theano-cpu.toml"
        python = sys.executable
        timed([python, "-m", "envforge", "apply", spec, "--yes", "-q"], env=env, cwd=ROOT)
        times: dict[str, list[float]] = {side: [] for side in SIDES}
        for i in range(args.rounds):
            order = list(SIDES) if i % 2 == 0 else list(reversed(SIDES))
            for j, side in enumerate(order):
                prefix = scratch / f"env-{i}-{j}"
                sample = timed([python, "-c", SIDES[side], "apply", spec, "--yes", "-q",
                                "--offline", "--prefix", prefix], env=env, cwd=ROOT)
                times[side].append(sample.seconds)
        for side, seconds in times.items():
            print(f"{side}: median {statistics.median(seconds) * 1000:.0f} ms "
                  f"(min {min(seconds) * 1000:.0f}, max {max(seconds) * 1000:.0f}, "
                  f"n={len(seconds)})")
        first, second = SIDES
        saved = [b - a for a, b in zip(times[first], times[second], strict=True)]
        print("plain exit - frozen exit, per round: median "
              f"{statistics.median(saved) * 1000:.0f} ms")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
