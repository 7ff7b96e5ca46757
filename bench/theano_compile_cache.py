"""Issue 27: verify of theano-cpu on a fresh prefix once another prefix of the same lock was
verified (its compiled modules seeded from envforge's store) against the first, cold verify,
and against a second verify of one environment (its own compiledir warm: the floor). Wall
and CPU seconds (the verify's process tree: envforge, the probe and g++), the modules g++
built in each prefix, and what storing and seeding cost, measured apart (the cold verify's
only addition). Then the same for ``envforge run`` of a small model whose ops verify never
compiles (MODEL): in the first prefix (the store holds only verify's modules), in the fresh
prefixes (the store holds the first run's), and in the first again.

    .venv/bin/python bench/theano_compile_cache.py [--fresh 2] [-o FILE.md]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness import load_average

REPO = Path(__file__).resolve().parent.parent
SPEC = REPO / "specs" / "theano-cpu.toml"
ENVFORGE = REPO / ".venv" / "bin" / "envforge"


def run(args: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds (user + system, its waited-for descendants included)."""
    started = time.perf_counter()
    with tempfile.TemporaryFile() as err:
        child = subprocess.Popen([str(ENVFORGE), *args], env=env, stdout=subprocess.DEVNULL,
                                 stderr=err)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - started
        if os.waitstatus_to_exitcode(status) != 0:
            err.seek(0)
            raise SystemExit(f"envforge {' '.join(args)} failed: {err.read()[-1500:]!r}")
    return wall, usage.ru_utime + usage.ru_stime


MODEL = """
import numpy as np, theano, theano.tensor as T
rng = np.random.RandomState(0)
x, y = T.matrix("x"), T.ivector("y")
w1 = theano.shared(rng.randn(20, 32) * 0.1, name="w1")
w2 = theano.shared(rng.randn(32, 3) * 0.1, name="w2")
h = T.nnet.sigmoid(T.dot(x, w1)) * T.tanh(T.dot(x, w1))
p = T.nnet.softmax(T.dot(h, w2))
loss = T.nnet.categorical_crossentropy(p, y).mean() + 1e-4 * (w1 ** 2).sum()
updates = [(w, w - 0.5 * g) for w, g in zip((w1, w2), T.grad(loss, [w1, w2]))]
train = theano.function([x, y], loss, updates=updates)
data, labels = rng.randn(64, 20), rng.randint(0, 3, 64).astype("int32")
losses = [float(train(data, labels)) for _ in range(50)]
assert losses[-1] < losses[0], losses
"""


def main() -> int:
    from envforge.packs.theano.compilecache import module_folders, publish, seed

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fresh", type=int, default=2, help="prefixes verified warm")
    parser.add_argument("-o", "--output", type=Path,
                        default=REPO / "bench" / "results" / "theano-compile-cache.md")
    args = parser.parse_args()
    rows: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory(prefix="envforge-bench-theano-") as tmp:
        root = Path(tmp)
        env = {**os.environ, "ENVFORGE_HOME": str(root / "home")}
        prefixes = [root / f"p{i}" for i in range(args.fresh + 1)]
        for prefix in prefixes:
            run(["apply", str(SPEC), "--yes", "--quiet", "--prefix", str(prefix)], env)
        seen: set[str] = set()
        for index, prefix in enumerate([*prefixes, prefixes[0]]):
            what = ("first prefix, empty store (cold)" if index == 0 else
                    "same prefix again (its own compiledir warm)" if index > args.fresh else
                    f"fresh prefix {index}, store warm")
            load = load_average()
            wall, cpu = run(["verify", str(SPEC), "--quiet", "--prefix", str(prefix)], env)
            folders = set(module_folders(prefix / "theano-compiledir"))
            rows.append({"verify": what, "wall_s": round(wall, 1), "cpu_s": round(cpu, 1),
                         "compiled": len(folders - seen), "load": load})
            seen |= folders
        runs: list[dict[str, object]] = []
        for index, prefix in enumerate([*prefixes, prefixes[0]]):
            what = ("first prefix (the store: verify's modules)" if index == 0 else
                    "same prefix again" if index > args.fresh else
                    f"fresh prefix {index} (the store: the first run's too)")
            before = set(module_folders(prefix / "theano-compiledir"))
            load = load_average()
            wall, cpu = run(["run", str(SPEC), "--prefix", str(prefix), "--", "python", "-c",
                             MODEL], env)
            after = set(module_folders(prefix / "theano-compiledir"))
            runs.append({"run": what, "wall_s": round(wall, 1), "cpu_s": round(cpu, 1),
                         "compiled": len(after - before - seen), "load": load})
            seen |= after
        compiledir = prefixes[0] / "theano-compiledir"
        started = time.perf_counter()
        stored = publish(compiledir, root / "scratch-store", "bench")
        publish_s = time.perf_counter() - started
        started = time.perf_counter()
        copied = seed(root / "scratch-env", root / "scratch-store", "bench").copied
        seed_s = time.perf_counter() - started
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO,
                            capture_output=True, text=True, check=False).stdout.strip()
    lines = ["# verify of theano-cpu, compiled-module store (issue 27)", "",
             f"`.venv/bin/python bench/theano_compile_cache.py --fresh {args.fresh}` at commit "
             f"`{commit}`, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
             f"{os.cpu_count()} CPUs shared with other jobs (load averages per row).", "",
             "| verify | wall s | CPU s | modules g++ built | load average (1/5/15 min) |",
             "|---|---:|---:|---:|---|"]
    lines += [f"| {r['verify']} | {r['wall_s']} | {r['cpu_s']} | {r['compiled']} | {r['load']} |"
              for r in rows]
    lines += ["", "`envforge run SPEC --prefix P -- python -c MODEL` (a two-layer net trained 50 "
              "steps: bench/theano_compile_cache.py's MODEL), after the verifies above:", "",
              "| run | wall s | CPU s | modules g++ built | load average (1/5/15 min) |",
              "|---|---:|---:|---:|---|"]
    lines += [f"| {r['run']} | {r['wall_s']} | {r['cpu_s']} | {r['compiled']} | {r['load']} |"
              for r in runs]
    lines += ["", f"Storing {stored} folders into an empty store took {publish_s:.2f} s; seeding "
              f"{copied} into an empty compiledir (every file's sha256 checked) {seed_s:.2f} s."]
    args.output.write_text("\n".join(lines) + "\n", encoding="utf-8")
    args.output.with_suffix(".json").write_text(
        json.dumps({"rows": rows, "runs": runs, "publish_s": publish_s, "seed_s": seed_s,
                    "commit": commit}, indent=1) + "\n", encoding="utf-8")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
