"""``python -m envforge.app.specdoc [ROOT] [--check]``: the spec reference and JSON Schema
written (or compared) with the installed packs' sections, as ``envforge.specdoc`` makes them."""

from __future__ import annotations

import sys

from envforge import specdoc
from envforge.app.packs import installed_packs


def main(argv: list[str]) -> int:
    return specdoc.main(argv, installed_packs())


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
