"""``envforge status``'s facts: every environment envforge's state records, and its drift.

Read-only: a damaged record is a row saying so, and a lock that cannot be read leaves the
drift "not checked" with the reason, so status always answers. The one thing it writes is
its stamp in envforge's cache (``stamped``): the next status with the same words prints the
same answer from stat data alone while every path this one read is unchanged
(``envforge/host/noopstamp.py`` says why that is sound), without loading pydantic or rich.
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from envforge.app.packs import installed_packs
from envforge.envlayout import layout_for
from envforge.lockfile import load_lock, lock_path_for
from envforge.paths import EnvforgeDirs
from envforge.spec import Platform

if TYPE_CHECKING:
    from envforge.ui import UI

    Handler = Callable[[argparse.Namespace, UI], int]


def environments(dirs: EnvforgeDirs) -> list[dict[str, Any]]:
    """One row per state folder with a record: the record, plus ``drift``."""
    from envforge.executor import DamagedStateError, read_record

    rows = []
    if dirs.state.is_dir():
        for state in sorted(dirs.state.iterdir()):
            try:
                record = read_record(state)
            except DamagedStateError as exc:
                record = {"prefix": None, "state": str(exc.path), "complete": False,
                          "damaged": str(exc)}
            if record is not None:
                rows.append({**record, "drift": _drift(record)})
    return rows


def _drift(record: Mapping[str, object]) -> dict[str, Any]:
    """The environment's PyPI packages against its lock (envforge/drift.py)."""
    from envforge.drift import find_drift
    from envforge.errors import EnvforgeError

    try:
        spec_path = Path(str(record["spec"]))
        platform: Platform = record["platform"]  # type: ignore[assignment]
        plock = load_lock(lock_path_for(spec_path), installed_packs()).platforms[platform]
        prefix = Path(str(record["prefix"]))
        site = Path(layout_for(platform, plock.environment, prefix, plock.python).site_packages)
    except (EnvforgeError, KeyError, OSError) as exc:
        return {"summary": f"not checked ({str(exc).splitlines()[0]})"}
    drift = find_drift(site, plock.pypi, also_expected=[c.name for c in plock.conda])
    return {"summary": drift.summary(), "extra": drift.extra,
            "other_version": drift.other_version, "modified": drift.modified,
            "missing": drift.missing}


def read_paths(dirs: EnvforgeDirs) -> tuple[list[str], list[str]]:
    """What ``environments`` reads, for status's stamp (``envforge/host/noopstamp.py``): the
    paths whose stat data its answer rests on, and the specs and locks (whose links are
    followed). Inside an environment: site-packages' listing, every ``*.dist-info`` folder
    and file, and every file a RECORD lists with a hash (the drift check hashes them)."""
    from envforge.errors import EnvforgeError
    from envforge.executor import APPLIED, DamagedStateError, read_record

    paths, links = [str(dirs.state)], list[str]()
    if not dirs.state.is_dir():
        return paths, links
    for state in sorted(dirs.state.iterdir()):
        paths += [str(state), str(state / APPLIED)]
        try:
            record = read_record(state)
            if record is None:
                continue
            spec_path = Path(str(record["spec"]))
            lock_path = lock_path_for(spec_path)
            links += [str(spec_path), str(lock_path)]
            plock = load_lock(lock_path, installed_packs()).platforms[record["platform"]]
            site = Path(layout_for(record["platform"], plock.environment,
                                   Path(str(record["prefix"])), plock.python).site_packages)
        except (EnvforgeError, DamagedStateError, KeyError, OSError):
            continue
        paths += _site_paths(site)
    return paths, links


def _site_paths(site: Path) -> list[str]:
    paths = [str(site)]
    for info in sorted(site.glob("*.dist-info")):
        paths.append(str(info))
        try:
            paths += [str(entry) for entry in info.iterdir()]
            with (info / "RECORD").open(newline="", encoding="utf-8") as handle:
                for row in csv.reader(handle):
                    if len(row) >= 2 and row[1].startswith("sha256="):
                        listed = str(site / row[0])
                        paths += [listed, os.path.realpath(listed)]
        except (OSError, UnicodeDecodeError, csv.Error):
            continue
    return paths


class _Tee:
    """A stream that keeps a copy of what is written through it."""

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream
        self.parts: list[str] = []

    def write(self, text: str) -> int:
        self.parts.append(text)
        return self.stream.write(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def stamped(handler: Handler) -> Handler:
    """``status``'s real path, its output kept and, when it succeeds, stamped with every
    path it read, so that the next ``status`` replays it from stat data alone."""

    def run(args: argparse.Namespace, ui: UI) -> int:
        from envforge import __version__
        from envforge.host import noopstamp
        from envforge.paths import envforge_dirs

        start_ns = time.time_ns()
        words = list(args.words)
        stamp = noopstamp.stamp_path(words, cwd=str(Path.cwd()), environ=os.environ,
                                     version=__version__)
        noopstamp.invalidate(stamp)
        dirs = envforge_dirs()
        paths, specs = read_paths(dirs)
        links = noopstamp.resolved(specs)
        out, err = _Tee(sys.stdout), _Tee(sys.stderr)
        sys.stdout, sys.stderr = out, err
        try:
            code = handler(args, ui)
        finally:
            sys.stdout, sys.stderr = out.stream, err.stream
        if code == 0:
            noopstamp.write(stamp, start_ns=start_ns, links=links, environ=os.environ,
                            paths=[*paths, *read_paths(dirs)[0], *noopstamp.own_files(),
                                   *_libraries()],
                            output=("".join(out.parts), "".join(err.parts)))
        return code

    return run


def _libraries() -> list[str]:
    """The folders holding the libraries that render status: an upgrade of rich changes the
    table it draws, and the folder's listing with it."""
    import pydantic
    import rich

    return sorted({str(Path(str(m.__file__)).parent.parent) for m in (pydantic, rich)})
