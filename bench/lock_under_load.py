"""A cold lock of the bullseye GPU spec (Debian's index, the kernels' references, the suite's
runner and uv's runs side by side) while busy loops hold the machine: what work run at a lower
CPU priority costs a lock when other processes want the CPU (``background.yielding`` yields
to every process, not only to envforge's own). Each round: a fresh ENVFORGE_HOME, no lock.

    .venv/bin/python bench/lock_under_load.py [--busy 4] [--rounds 2] [--envforge BIN]

``--envforge`` times another checkout's envforge (its .venv/bin/envforge) the same way.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness import clean_environ, load_average

REPO = Path(__file__).resolve().parent.parent
SPEC = REPO / "specs" / "theano-gpu-linux.toml"
BUSY = "while True: pass"


def cold_lock(envforge: Path, scratch: Path) -> float:
    project = scratch / "project"
    shutil.rmtree(scratch, ignore_errors=True)
    (project / "specs").mkdir(parents=True)
    spec = project / "specs" / SPEC.name
    shutil.copy2(SPEC, spec)
    env = clean_environ(ENVFORGE_HOME=str(scratch / "home"))
    started = time.monotonic()
    subprocess.run([str(envforge), "lock", str(spec), "-q"], cwd=project, env=env, check=True,
                   stderr=subprocess.DEVNULL, timeout=1800)
    return time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--busy", type=int, default=4, help="busy loops beside the lock")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--envforge", type=Path, default=REPO / ".venv" / "bin" / "envforge")
    args = parser.parse_args()
    loops = [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(args.busy)]
    try:
        with tempfile.TemporaryDirectory(prefix="envforge-lock-load-") as tmp:
            load = load_average()
            times = [cold_lock(args.envforge, Path(tmp) / f"round{i}")
                     for i in range(args.rounds)]
    finally:
        for loop in loops:
            loop.kill()
    shown = ", ".join(f"{t:.1f} s" for t in times)
    print(f"cold lock of {SPEC.name} beside {args.busy} busy loops, {args.envforge}: {shown} "
          f"(load average at start {load})")


if __name__ == "__main__":
    main()
