"""Inflating a Debian Packages.gz as lock reads it, CPU seconds: envforge's reader
(``resolve/deb/index.index_chunks``: isal's inflater where installed) against the same
pieces through zlib (how it read them before).

    .venv/bin/python bench/deb_inflate.py [PACKAGES_GZ] [--rounds N]

Without a path, the bookworm main/binary-amd64 index a lock left in envforge's cache
(``cache/deb/<sha256>-Packages.gz``) is read. Writes ``bench/results/deb-inflate.md``."""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from envforge.paths import envforge_dirs
from envforge.resolve.deb.index import index_chunks

RESULTS = Path(__file__).resolve().parent / "results" / "deb-inflate.md"
BOOKWORM_MAIN = "6777ea16514725f9427f48c240d92e0a6b8496138e37a1491d8597e66774e309"


def _zlib_chunks(data: bytes, size: int = 1 << 16) -> Iterator[bytes]:
    ungz = zlib.decompressobj(wbits=31)
    for offset in range(0, len(data), size):
        yield ungz.decompress(data[offset:offset + size])
    yield ungz.flush()


def _cpu(read: Callable[[], Iterator[bytes]]) -> tuple[float, int]:
    start = time.process_time()
    total = sum(len(piece) for piece in read())
    return time.process_time() - start, total


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("index", nargs="?", type=Path,
                        default=envforge_dirs().cache / "deb" / f"{BOOKWORM_MAIN}-Packages.gz")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    data = args.index.read_bytes()
    sides = {"envforge (index_chunks)": lambda: index_chunks(data, "Packages.gz"),
             "zlib, the same pieces": lambda: _zlib_chunks(data)}
    times: dict[str, list[float]] = {name: [] for name in sides}
    sizes = set()
    for round_ in range(args.rounds):  # the order reversed every other round
        for name in (list(sides) if round_ % 2 == 0 else list(reversed(sides))):
            seconds, size = _cpu(sides[name])
            times[name].append(seconds)
            sizes.add(size)
    if len(sizes) != 1:
        raise SystemExit(f"the two sides read different text: {sorted(sizes)} bytes")
    rows = [f"| {name} | {statistics.median(t):.3f} s | {min(t):.3f} s | {max(t):.3f} s |"
            for name, t in times.items()]
    text = (f"# Inflating a Debian index\n\n`.venv/bin/python bench/deb_inflate.py` on "
            f"`{args.index.name}` ({len(data) / 1e6:.1f} MB gzip, {sizes.pop() / 1e6:.1f} MB of "
            f"text), {args.rounds} rounds, CPU seconds of this process.\n\n"
            "| reader | median | min | max |\n|---|---:|---:|---:|\n" + "\n".join(rows) + "\n")
    RESULTS.write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
