"""A cold apply's locked sdists downloaded from its first milliseconds, beside planning.

An sdist's download and then its build are a cold apply's longest chain (theano-cpu: the
download of Theano-PyMC, then ``uv build``), and the download began only once planning had
imported its modules and made the plan (0.18 s of start-up). ``start`` reads the lock the
way ``apply SPEC --yes`` would find it, with tomllib alone, and fetches each sdist the
lock's host platform names into envforge's cache on a thread of its own, while the main
thread imports and plans; prefetch's ``obtain`` of the same file then finds it there or
waits for this download (``fetch.obtain``'s lock per file) and checks it against the lock
as any cache file is. Nothing here decides anything: a lock it cannot read, a file that
does not come or does not hash as locked is left to the real path, which fetches it again
and reports it. Only ``apply SPEC --yes`` online, with nothing but ``-q``, ``--prefix`` and
``--locks-dir`` beside it (``noopcheck.parse``): never before a confirmation, never with a
bundle or ``--offline``, and never more than the files the lock names.
"""

# ruff: noqa: PTH118, PTH119, PTH120, PTH122 (os.path on str: this runs before the imports)

from __future__ import annotations

import os
import threading
from contextlib import suppress

TYPE_CHECKING = False  # typing's, spelt here: start-up spares its import
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

_SCHEMES = ("https://", "http://")  # a git+ or file:// source is the real path's alone


def start(words: Sequence[str], *, cwd: str,
          environ: Mapping[str, str]) -> threading.Thread | None:
    """The thread fetching the lock's sdists for ``words`` (``apply SPEC --yes ...``), or
    None where these words are not such an apply (then nothing is started)."""
    from envforge.host.noopcheck import parse
    from envforge.host.noopstamp import cache_root

    invocation = parse(words)
    if invocation is None or invocation["offline"]:
        return None
    lock = lock_file(str(invocation["spec"]), invocation["locks_dir"], cwd=cwd)
    thread = threading.Thread(target=fetch_sdists, args=(lock, str(cache_root(environ))),
                              name="envforge-headstart", daemon=True)
    thread.start()
    return thread


def lock_file(spec: str, locks_dir: object, *, cwd: str) -> str:
    """``lockfile.lock_path_for``'s answer: ``locks/NAME.lock`` beside the spec's folder,
    or in ``--locks-dir``."""
    stem = os.path.splitext(os.path.basename(spec))[0]
    if locks_dir is not None:
        return os.path.join(cwd, str(locks_dir), f"{stem}.lock")
    folder = os.path.dirname(os.path.dirname(os.path.realpath(os.path.join(cwd, spec))))
    return os.path.join(folder, "locks", f"{stem}.lock")


def fetch_sdists(lock: str, cache: str) -> None:
    """Each sdist the lock names for this host, into ``cache`` through ``obtain``; any
    failure is the real path's to meet and report."""
    with suppress(Exception):
        import tomllib
        from pathlib import Path

        from envforge.host.fetch import FileRef, obtain
        from envforge.platforms import host_platform

        with open(lock, "rb") as handle:
            rows = tomllib.load(handle)["platforms"][host_platform().name].get("pypi", [])
        for row in rows:
            if row.get("kind") != "sdist" or not str(row.get("url", "")).startswith(_SCHEMES):
                continue
            ref = FileRef(str(row["url"]), str(row["sha256"]), str(row["filename"]),
                          row.get("size"))
            obtain(ref, cache=Path(cache))
