"""Cold (or ``--warm``) apply of two envforge trees and venv + ``uv pip install`` in the
same rounds.

    .venv/bin/python bench/apply_pair.py BASE_REV [--size theano-cpu] [--rounds 6] [--warm]

Each round applies the size's spec with empty caches as ``bench/scenarios/apply.py`` does
(a fresh ENVFORGE_HOME, ``apply SPEC --yes -q``), once with ``BASE_REV``'s ``envforge/``
(``git archive`` into a scratch folder, first on PYTHONPATH) and once with this checkout's,
and runs the bench's uv pair (``_venv_uv_install``, an empty uv cache) beside them, the order
rotated every round; the ratios are taken within each round. Every round's folders are kept
until the end: on ext4, files made just after thousands were deleted wait on the inode
allocator (bench/results/unpack.md), which a loop removing each run's tree charged to the
next one (3-6 s applies instead of 2-3 s). The lock is the checkout's ``locks/NAME.lock``,
else ``--lock``. With ``--warm``, each tool's cache is filled by one apply that is not
measured, and each round applies offline into a new prefix (uv: ``--offline`` into a new
venv), as ``make bench``'s warm rows do.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness import Sample, clean_environ, timed
from bench.scenarios.apply import _venv_uv_install
from bench.scenarios.common import ROOT, SIZES, find_tools


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base", help="the git revision to compare this checkout with")
    parser.add_argument("--size", default="theano-cpu", choices=list(SIZES))
    parser.add_argument("--lock", type=Path, help="the size's lock (default: locks/NAME.lock)")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--warm", action="store_true",
                        help="caches filled first; each round offline, into a new prefix")
    args = parser.parse_args()
    spec = SIZES[args.size]
    lock = args.lock or ROOT / "locks" / f"{spec.stem}.lock"
    tools = find_tools(Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
                       / "envforge-bench")
    scratch = Path(tempfile.mkdtemp(prefix="envforge-pair-"))
    try:
        base = scratch / "base"
        base.mkdir()
        archive = subprocess.run(["git", "archive", args.base, "envforge"], cwd=ROOT,
                                 check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(base)], input=archive, check=True)
        reqs = scratch / "requirements.txt"
        reqs.write_text(subprocess.run(
            [tools.envforge, "export", str(lock), "--format", "requirements", "--platform",
             "linux-64"], check=True, capture_output=True, text=True,
            env=clean_environ()).stdout, encoding="utf-8")

        def run(kind: str, i: int | str, *, offline: bool = False) -> Sample:
            root = scratch / f"{kind}{i}"
            (root / "specs").mkdir(parents=True)
            (root / "locks").mkdir()
            (root / "home").mkdir()
            shutil.copy2(spec, root / "specs" / spec.name)
            shutil.copy2(lock, root / "locks" / f"{spec.stem}.lock")
            caches = scratch / f"{kind}-caches" if args.warm else root
            if kind == "uv":
                return _venv_uv_install(tools, root / "venv", reqs, caches / "uv-cache",
                                        offline=offline)
            env = clean_environ(ENVFORGE_HOME=str(caches / "ef"), HOME=str(root / "home"))
            if kind == "base":
                env["PYTHONPATH"] = str(base)
            return timed([tools.envforge, "apply", f"specs/{spec.name}", "--yes", "-q",
                          "--prefix", str(root / "env"), *(["--offline"] if offline else [])],
                         env=env, cwd=root)

        kinds = ["base", "this", "uv"]
        if args.warm:
            for kind in kinds:
                run(kind, "-fill")
        found: dict[str, list[Sample]] = {k: [] for k in kinds}
        for i in range(args.rounds):
            order = kinds[i % 3:] + kinds[:i % 3]
            for kind in order[::-1] if i % 2 else order:
                found[kind].append(run(kind, i, offline=args.warm))
            print(f"round {i}: " + "  ".join(
                f"{k} {found[k][-1].seconds:.2f} s ({found[k][-1].cpu_seconds:.2f} s CPU)"
                for k in kinds), flush=True)
        for kind in kinds:
            print(f"{kind}: median {statistics.median(s.seconds for s in found[kind]):.2f} s, "
                  f"CPU {statistics.median(s.cpu_seconds for s in found[kind]):.2f} s")
        for kind in ("base", "this"):
            ratios = sorted(a.seconds / u.seconds for a, u in zip(found[kind], found["uv"],
                                                                    strict=True))
            print(f"{kind} / uv per round: min {ratios[0]:.2f}x, median "
                  f"{statistics.median(ratios):.2f}x, max {ratios[-1]:.2f}x")
    finally:
        subprocess.run(["chmod", "-R", "u+w", str(scratch)], check=False)
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
