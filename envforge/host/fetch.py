"""Downloads into a content-addressed cache: each file checked against its sha256 as it lands.

A file is looked for in a local copy first (a bundle: the caller passes its lookup, which
bundle/sources.py makes from the manifest, so the folder layout stays the bundle's own), then
the cache, then fetched (unless offline), resuming a partial download with an HTTP range
request. Nothing unverified is ever returned.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from envforge.errors import ArtifactError, EnvforgeError, OfflineError
from envforge.host.archives import sha256_file
from envforge.host.atomicfile import write_atomic
from envforge.host.fileref import FileRef as FileRef  # re-exported: the fetcher's API
from envforge.host.fileref import cache_path as cache_path
from envforge.platforms import Os, host_platform

if TYPE_CHECKING:
    import requests

CHUNK = 1 << 20
Progress = Callable[[int], None]


Lookup = Callable[[FileRef], Path | None]  # a bundle's (unchecked) copy of a file, if it has one
# How a download is shown: given the file's name, its size (None: unknown) and the bytes a
# resumed .part holds already, a context whose value is called with each chunk's size
# (the UI's ``download``: a bar on a terminal, a line with the size when piped).
Report = Callable[[str, "int | None", int], AbstractContextManager[Progress]]


def obtain(ref: FileRef, *, cache: Path, bundle: Lookup | None = None, offline: bool = False,
           progress: Progress | None = None, session: requests.Session | None = None,
           report: Report | None = None) -> Path:
    """A verified local copy of ``ref``; a tampered bundle or cache file is refused, not used.
    With a ``bundle`` there is no network: what it and the cache lack is an OfflineError."""
    if bundle is not None:
        candidate = bundle(ref)
        if candidate is not None:
            _check(candidate, ref, where="bundle")
            return candidate
    target = cache_path(cache, ref)
    if target.is_file():
        _check(target, ref, where="cache")
        return target
    if offline or bundle is not None:
        raise OfflineError(f"{ref.filename} (sha256 {ref.sha256[:12]}…) is not in the "
                           f"{'bundle' if bundle else 'cache'} and the network is off")
    from filelock import FileLock

    # Two applies fetching one file at once appended to one .part and moved a mix of both
    # into the cache: one downloads, the other waits and takes its checked copy.
    target.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(target.with_name(target.name + ".part.lock")):
        if target.is_file():
            _check(target, ref, where="cache")
            return target
        download(ref, target, progress=progress, session=session, report=report)
    return target


# (path, sha256) -> the stat of a file this process hashed as that sha256 and that was last
# written over a second before: apply obtains each file at prefetch and again at its step.
_HASHED: dict[tuple[str, str], tuple[int, ...]] = {}
_SETTLED_NS = 1_000_000_000


def _check(path: Path, ref: FileRef, *, where: str) -> None:
    """Hash ``path`` against the lock (``sha256_of``: once for a file that stays as it was);
    in the cache the answer outlives the process, a bundle's copy is hashed once per
    process, since a bundle is not envforge's to write into."""
    record = checked_record(path, ref.sha256) if where == "cache" else None
    found = sha256_of(path, ref.sha256, record=record)
    if found != ref.sha256:
        raise ArtifactError(f"{path}: sha256 {found} does not match the lock's {ref.sha256} "
                            f"(the {where} copy was altered; refusing it)")


def sha256_of(path: Path, expected: str, *, record: Path | None = None) -> str:
    """``path``'s sha256, not hashed again for a file that hashed as ``expected`` and stays
    as it was: a write after the hash moves its mtime past the recorded one, since the
    recorded mtime was already over a second old when the hash began (a newer file is
    hashed every time). ``record`` (in envforge's cache: ``checked_record``) keeps the answer
    beyond this process, never on Windows, where a file's ctime is when it was made, not
    changed, so setting mtime back would go unseen."""
    key = (str(path), expected)
    before = time.time_ns()
    st = path.stat()
    seen = _seen(st)
    if _HASHED.get(key) == seen:
        return expected
    kept = _kept(record, expected)
    if kept is not None and kept.holds(seen):
        _HASHED[key] = seen
        return expected
    found = sha256_file(path)
    if found == expected and st.st_mtime_ns < before - _SETTLED_NS:
        _remember(key, seen, kept)
    return found


def _kept(record: Path | None, sha256: str) -> _CheckedRecord | None:
    """The record's keeper; None on Windows, where ctime does not move on a write."""
    if record is None or host_platform().os is Os.WINDOWS:
        return None
    return _CheckedRecord(record, sha256)


def _seen(st: os.stat_result) -> tuple[int, ...]:
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev)


def _remember(key: tuple[str, str], seen: tuple[int, ...], kept: _CheckedRecord | None,
              ) -> None:
    """A file that hashed as its sha256 with this stat: in this process, and in the cache's
    record where there is one."""
    _HASHED[key] = seen
    if kept is not None:
        kept.keep(seen)


def checked_record(path: Path, sha256: str, cache: Path | None = None) -> Path | None:
    """Where the answer for a cache file is kept: ``CACHE/checked/SHA256.NAME``. ``cache``
    given: for any file of that cache (a built wheel); else for ``CACHE/files/SH/SHA256/
    NAME`` (``cache_path``) only, None for a file elsewhere."""
    if cache is None:
        parents = path.parents
        if len(parents) < 4 or parents[0].name != sha256 or parents[2].name != "files":
            return None
        cache = parents[3]
    return cache / "checked" / f"{sha256}.{path.name}"


@dataclass(frozen=True)
class _CheckedRecord:
    """That a cache file hashed as its sha256, kept with the file's stat then (size, mtime,
    ctime, inode, device) in the cache's ``checked/`` folder, not beside the file: a write
    into the file's own folder would move that folder's mtime, which the no-op check's
    record rests on (host/noopcheck.py), and void it. A later apply takes the file without
    hashing it while the stat is the same, as uv takes its cache. A write moves mtime and
    ctime, a replacement the inode, and setting mtime back moves ctime, which only the clock
    sets; what it cannot see is someone who can write to envforge's cache rewriting this
    record too (host/unpacked.py's entries trust their manifests the same way). A warm
    theano-cpu apply hashed its 62 MB of archives again each time: about 130 ms of CPU."""

    file: Path
    sha256: str

    def holds(self, seen: tuple[int, ...]) -> bool:
        try:
            text = self.file.read_text(encoding="ascii")
        except (OSError, UnicodeDecodeError):
            return False
        return text == self._line(seen)

    def keep(self, seen: tuple[int, ...]) -> None:
        """Written whole; one that cannot be written costs the next apply a hash."""
        with suppress(OSError):
            write_atomic(self.file, self._line(seen).encode("ascii"))

    def _line(self, seen: tuple[int, ...]) -> str:
        return f"{self.sha256} {' '.join(map(str, seen))}\n"


def download(ref: FileRef, target: Path, *, progress: Progress | None = None,
             session: requests.Session | None = None, report: Report | None = None) -> None:
    """Fetch to ``target.part`` (resuming), hash as bytes arrive, then move into place;
    ``report`` shows it as it goes (a GB of wheels was 48 s of silence). A
    ``git+<repository>@<commit>`` URL is the commit's ``git archive`` (host/gitsource.py)."""
    began = time.time_ns()
    if ref.url.startswith("git+"):
        from envforge.host.gitsource import archive_commit, parse_git_url

        repo, commit = parse_git_url(ref.url)
        part = target.with_name(target.name + ".part")
        archive_commit(repo, commit, ref.filename.removesuffix(".tar.gz"), part)
        _finish(part, target, ref, sha256_file(part), began)
        return
    if ref.url.startswith("file://"):
        from urllib.request import url2pathname  # http.client and ssl: not for a cache hit

        source = Path(url2pathname(urlsplit(ref.url).path))  # Windows: /C:/x -> C:\x
        target.parent.mkdir(parents=True, exist_ok=True)
        part = target.with_name(target.name + ".part")
        try:
            shutil.copyfile(source, part)
        except OSError as exc:
            raise ArtifactError(f"cannot read {source}: {exc.strerror}") from None
        _finish(part, target, ref, sha256_file(part), began)
        return
    from envforge.host.headstart import take

    early = take(ref.url, ref.sha256)  # apply's head start: downloaded while it planned
    if early is not None:
        target.parent.mkdir(parents=True, exist_ok=True)
        part = target.with_name(target.name + ".part")
        with (report or _silent)(Path(ref.filename).name, len(early), 0) as shown:
            part.write_bytes(early)
            shown(len(early))
        _finish(part, target, ref, hashlib.sha256(early).hexdigest(), began)
        return
    import requests  # only a real download needs it

    from envforge.host.http import session as new_session

    http = session or new_session()
    target.parent.mkdir(parents=True, exist_ok=True)
    part = target.with_name(target.name + ".part")
    digest = hashlib.sha256()
    have = part.stat().st_size if part.exists() else 0
    if have:
        with part.open("rb") as fh:
            for chunk in iter(lambda: fh.read(CHUNK), b""):
                digest.update(chunk)
        if ref.size is not None and have >= ref.size:  # cut off after the last byte: no request
            _finish(part, target, ref, digest.hexdigest(), began)
            return
    headers = {"Range": f"bytes={have}-"} if have else {}
    try:
        with http.get(ref.url, stream=True, timeout=60, headers=headers) as response:
            if have and response.status_code != 206:  # server ignored the range: start over
                have, digest = 0, hashlib.sha256()
            response.raise_for_status()
            size = ref.size or _length(response.headers, have)
            with (report or _silent)(Path(ref.filename).name, size, have) as shown, \
                    part.open("ab" if have else "wb") as out:
                for chunk in response.iter_content(CHUNK):
                    out.write(chunk)
                    digest.update(chunk)
                    shown(len(chunk))
                    if progress is not None:
                        progress(len(chunk))
    except requests.RequestException as exc:
        raise EnvforgeError(f"download of {ref.url} failed: {exc} "
                            "(run again to resume)") from None
    _finish(part, target, ref, digest.hexdigest(), began)


def _length(headers: Mapping[str, str], have: int) -> int | None:
    """The whole file's size from the response's Content-Length (a range's is the rest)."""
    try:
        return int(headers["Content-Length"]) + have
    except (KeyError, ValueError):
        return None


@contextmanager
def _silent(name: str, size: int | None, have: int) -> Iterator[Progress]:
    yield lambda amount: None


def _finish(part: Path, target: Path, ref: FileRef, found: str, began: int) -> None:
    """Move the checked ``part`` into place, settled: its mtime set to a whole second before
    the download began, so any later write moves it (as an unpacked entry's, host/unpacked.py),
    and its stat remembered as hashed (``sha256_of``), in this process and beside it: the step
    that takes the file, and the next apply, do not hash it again (a cold theano-cpu apply's
    steps hashed its 62 MB of archives a second time, after prefetch's download had)."""
    if found != ref.sha256:
        part.unlink(missing_ok=True)
        raise ArtifactError(f"{ref.url}: sha256 {found} does not match the lock's {ref.sha256}; "
                            "refusing the file")
    settled = (began // _SETTLED_NS - 1) * _SETTLED_NS
    os.utime(part, ns=(settled, settled))
    part.replace(target)
    _remember((str(target), ref.sha256), _seen(target.stat()),
              _kept(checked_record(target, ref.sha256), ref.sha256))
