"""``python -m envforge.app.specdoc [ROOT] [--check]``: the spec reference and JSON Schema
written (or compared) with the installed packs' sections, as ``envforge.specdoc`` makes them."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from envforge import specdoc
from envforge.app.packs import installed_packs


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m envforge.app.specdoc",
        description="Write docs/spec-reference.md and docs/envforge-spec.schema.json.")
    parser.add_argument("root", nargs="?", type=Path, default=Path.cwd(),
                        help="the repository root (default: the current directory)")
    parser.add_argument("--check", action="store_true",
                        help="compare instead of writing; exit 1 when a file is stale")
    args = parser.parse_args(argv)
    return specdoc.write(args.root, installed_packs(), check=args.check)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
