"""What uv's output file is worth to a re-resolution: ``uv pip compile`` of a size's
requirements for one platform, in a warm cache, with its previous output kept (uv prefers
the versions there) and with it removed, rounds alternating. Why the warm lock pair keeps
each tool's previous result (``scenarios/lock.py``) and why ``envforge lock`` hands uv the
lock's versions (``envforge/resolve/pypi.py``, ``preference_pylock``).

    .venv/bin/python bench/preferences.py [--size ml75] [--platform win-64] [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness import clean_environ, fmt_s, timed
from bench.scenarios.common import INDEX, SIZES, UV_PLATFORMS, find_tools, new_project


def main() -> int:
    from envforge.host.dnsretry import host_retry_options

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="ml75", choices=sorted(SIZES))
    parser.add_argument("--platform", default="win-64", choices=sorted(UV_PLATFORMS))
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    tools = find_tools(Path.home() / ".cache" / "envforge-bench")
    with tempfile.TemporaryDirectory(prefix="envforge-bench-prefs-") as tmp:
        root = Path(tmp)
        project = new_project(root, args.size, "prefs")
        req = root / "requirements.in"
        req.write_text("\n".join(project.requirements()) + "\n", encoding="utf-8")
        out = root / "pylock.toml"
        argv = [tools.uv, "pip", "compile", str(req), "--quiet", "--no-header", "--format",
                "pylock.toml", "--output-file", str(out), "--python-version",
                tools.python37_version, "--python-platform", UV_PLATFORMS[args.platform],
                "--index-url", INDEX, "--no-config", "--python", tools.python37,
                "--cache-dir", str(root / "cache")]
        env = clean_environ(**host_retry_options({}))  # DNS losses are not the question here
        timed(argv, env=env)  # fills the cache and writes the first output, not counted
        seconds: dict[str, list[float]] = {"output kept": [], "output removed": []}
        for _ in range(args.rounds):
            seconds["output kept"].append(timed(argv, env=env).seconds)
            out.unlink()
            seconds["output removed"].append(timed(argv, env=env).seconds)
    print(f"uv pip compile of {args.size}'s requirements for {args.platform}, warm cache, "
          f"{args.rounds} rounds:")
    print("| previous output | min | median | max |")
    print("|---|---:|---:|---:|")
    for what, values in seconds.items():
        print(f"| {what} | {fmt_s(min(values))} | {fmt_s(statistics.median(values))} | "
              f"{fmt_s(max(values))} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
