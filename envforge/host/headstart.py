"""A cold apply's locked sdists downloaded from its first milliseconds, beside planning, and
the Python that builds them found.

An sdist's download and then its build are a cold apply's longest chain (theano-cpu: the
download of Theano-PyMC, then ``uv build``), and the download began only once planning had
imported its modules and made the plan (0.18 s of start-up). ``start`` reads the lock the
way ``apply SPEC --yes`` would find it, with tomllib alone, and downloads each sdist the
lock's host platform names into memory on a thread of its own, while the main thread imports,
checks the lock and plans. Nothing is written meanwhile: a lock that planning refuses leaves
the cache as it was. Prefetch's download of the same file (``fetch.download``) then takes
the bytes (``take``), waiting for them if they are still coming, and writes them into the
cache as any download, checked against the lock as they land. Nothing here decides
anything: a lock it cannot read, a file that does not come or does not hash as locked is
left to the real path, which downloads it again and reports it. Only ``apply SPEC --yes``
online, with nothing but ``-q``, ``--prefix`` and ``--locks-dir`` beside it
(``noopcheck.parse``): never before a confirmation, with a bundle or ``--offline``; only
the lock's https/http sdists, each of a locked size up to ``MAX_BYTES``.
"""

# ruff: noqa: PTH118, PTH119, PTH120, PTH122 (os.path on str: this runs before the imports)

from __future__ import annotations

import os
import threading
from concurrent.futures import Future

TYPE_CHECKING = False  # typing's, spelt here: start-up spares its import
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

MAX_BYTES = 64 << 20  # held in memory until planning is done: a larger sdist waits for it
_SCHEMES = ("https://", "http://")  # a git+ or file:// source is the real path's alone
# (url, sha256) -> the bytes downloaded for it, None where the download failed or differed
_EARLY: dict[tuple[str, str], Future[bytes | None]] = {}
_GUARD = threading.Lock()


def start(words: Sequence[str], *, cwd: str,
          environ: Mapping[str, str]) -> threading.Thread | None:
    """The thread downloading the lock's sdists for ``words`` (``apply SPEC --yes ...``), or
    None where these words are not such an apply (then nothing is started)."""
    from envforge.host.noopcheck import parse
    from envforge.host.noopstamp import cache_root

    invocation = parse(words)
    if invocation is None or invocation["offline"]:
        return None
    lock = lock_file(str(invocation["spec"]), invocation["locks_dir"], cwd=cwd)
    thread = threading.Thread(target=fetch_sdists,
                              args=(lock, str(cache_root(environ)), dict(environ)),
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


def fetch_sdists(lock: str, cache: str, environ: Mapping[str, str] | None = None) -> None:
    """Each sdist the lock names for this host that envforge's ``cache`` lacks (an apply
    with nothing to do finds it there: no download), downloaded into memory for ``take``;
    with ``environ``, where there is one, the lock's Python is searched for beside them
    (``find_python``)."""
    flights = []
    python = None
    try:
        import tomllib
        from pathlib import Path

        from envforge.host.fileref import FileRef, cache_path
        from envforge.platforms import host_platform

        with open(lock, "rb") as handle:
            table = tomllib.load(handle)["platforms"][host_platform().name]
        rows, python = table.get("pypi", []), table.get("python")
        for row in rows:
            url, size = str(row.get("url", "")), row.get("size")
            if row.get("kind") == "sdist" and url.startswith(_SCHEMES) \
                    and isinstance(size, int) and 0 < size <= MAX_BYTES \
                    and not cache_path(Path(cache), FileRef(url, str(row["sha256"]),
                                                           str(row["filename"]))).exists():
                flight: Future[bytes | None] = Future()
                with _GUARD:
                    if _EARLY.setdefault((url, str(row["sha256"])), flight) is not flight:
                        continue
                flights.append((url, str(row["sha256"]), size, flight))
    except Exception:  # a lock the real path reads and reports
        pass
    if flights and environ is not None and isinstance(python, str):
        threading.Thread(target=find_python, args=(python, environ),
                         name="envforge-headstart-python", daemon=True).start()
    for url, sha256, size, flight in flights:
        try:
            flight.set_result(_download(url, sha256, size))
        except Exception:  # the real path downloads it and reports
            flight.set_result(None)


def _download(url: str, sha256: str, size: int) -> bytes | None:
    import hashlib

    from envforge.host.http import session

    with session().get(url, stream=True, timeout=60) as response:
        if response.status_code != 200:
            return None
        data = bytearray()
        for chunk in response.iter_content(1 << 20):
            data += chunk
            if len(data) > size:
                return None
    body = bytes(data)
    return body if hashlib.sha256(body).hexdigest() == sha256 else None


def find_python(version: str, environ: Mapping[str, str]) -> None:
    """The lock's Python found while planning imports its modules, for the sdists' build:
    each interpreter's answer is kept in this process (``interpreters.query_version``), where
    the build's own search finds it (asking the candidates took a cold apply a tenth of a
    second between the sdist's download and its build). Nothing is written."""
    try:
        from envforge.host.interpreters import find_interpreter, minor

        find_interpreter(minor(version), environ=environ)
    except Exception:  # the build's own search reports it
        pass


def take(url: str, sha256: str) -> bytes | None:
    """The bytes a head start downloaded for this locked file (waiting for them while they
    come), once; None where none was started or it failed. The caller checks them again."""
    with _GUARD:
        flight = _EARLY.pop((url, sha256), None)
    return None if flight is None else flight.result()


def landed(url: str, sha256: str) -> bool:
    """Whether a head start's download of this locked file has ended (``take`` would not
    wait)."""
    with _GUARD:
        flight = _EARLY.get((url, sha256))
    return flight is not None and flight.done()

