"""Unpacking wheels into the unpacked cache, CPU seconds, single-threaded: envforge's
extractor (``host/unpacked._extract``: the mapped archive, one inflate a member, by
descriptor) against the same work done through zipfile (open a member, hash, write, chmod,
stat, then one utime pass: how it was written before, kept here as the baseline).

    .venv/bin/python bench/unpack.py WHEEL... [--rounds N] [--dir D]

The wheels are any on disk (a cold apply's cache holds them: ``cache/files``). Each round's
files stay until the run ends, under ``--dir`` (default: a temporary folder): on ext4 a
folder just emptied makes the next files' inode allocation slower (``recently_deleted`` in
``perf``), which would be charged to whichever side ran next; a tmpfs (``/dev/shm``) leaves
the extractors' own CPU alone."""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import stat
import tempfile
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

from envforge.host.unpacked import _extract
from envforge.host.zipread import INFLATER


def _through_zipfile(wheel: Path, root: Path, mtime_ns: int) -> None:
    paths = []
    with zipfile.ZipFile(wheel) as zf:
        for info in zf.infolist():
            if info.is_dir():
                continue
            target = root / info.filename
            target.parent.mkdir(parents=True, exist_ok=True)
            digest = hashlib.sha256()
            with zf.open(info) as source, open(target, "xb") as out:
                while chunk := source.read(1 << 20):
                    digest.update(chunk)
                    out.write(chunk)
            target.chmod(0o444)
            os.lstat(target)
            paths.append(target)
    for path in paths:
        os.utime(path, ns=(mtime_ns, mtime_ns))


def _cpu(extract: Callable[[Path, Path, int], object], wheels: list[Path],
         scratch: Path) -> float:
    start = time.process_time()
    for index, wheel in enumerate(wheels):
        extract(wheel, scratch / str(index), time.time_ns())
    return time.process_time() - start


def _remove(scratch: Path) -> None:
    for folder, _, names in os.walk(scratch):
        for name in names:
            (Path(folder) / name).chmod(stat.S_IWUSR | stat.S_IRUSR)
    shutil.rmtree(scratch, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("wheels", nargs="+", type=Path)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args()
    wheels: list[Path] = args.wheels
    size = sum(w.stat().st_size for w in wheels) >> 20
    print(f"{len(wheels)} wheels, {size} MiB packed; inflate: {INFLATER.__name__}")
    scratch = Path(tempfile.mkdtemp(prefix="envforge-bench-unpack-", dir=args.dir))
    try:
        for round_ in range(1, args.rounds + 1):  # alternated: the machine's state shared
            ours = _cpu(_extract, wheels, scratch / f"ours{round_}")
            baseline = _cpu(_through_zipfile, wheels, scratch / f"zipfile{round_}")
            print(f"round {round_}: envforge {ours:.2f} s CPU, through zipfile "
                  f"{baseline:.2f} s CPU ({baseline / ours:.2f}x)")
    finally:
        _remove(scratch)


if __name__ == "__main__":
    main()
