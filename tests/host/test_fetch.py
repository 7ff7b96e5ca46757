"""Downloads from file URLs: the URL's path is this platform's path."""

from __future__ import annotations

import hashlib
import http.server
import multiprocessing
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from envforge.errors import ArtifactError
from envforge.host import fetch
from envforge.host.archives import sha256_file
from envforge.host.fetch import FileRef, download, obtain


def test_a_file_url_is_read_from_the_path_it_names(tmp_path: Path) -> None:
    """``Path.as_uri()`` gives ``file:///C:/...`` on Windows; the path read must be ``C:\\...``,
    not ``\\C:\\...`` (every compiler-artifact read failed so under Windows)."""
    source = tmp_path / "x86_64 mingw%41.7z"
    source.write_bytes(b"7z\xbc\xaf\x27\x1c archive bytes")
    ref = FileRef(url=source.as_uri(), sha256=hashlib.sha256(source.read_bytes()).hexdigest(),
                  filename=source.name)
    target = tmp_path / "cache" / source.name

    download(ref, target)

    assert target.read_bytes() == source.read_bytes()


class _Slow(http.server.BaseHTTPRequestHandler):
    """Serves BODY in small chunks, slowly, so two downloads of it overlap."""

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", str(len(BODY)))
        self.end_headers()
        for start in range(0, len(BODY), 64 * 1024):
            self.wfile.write(BODY[start:start + 64 * 1024])
            time.sleep(0.02)

    def log_message(self, *args: object) -> None:
        pass


BODY = bytes(range(256)) * 4096 * 2  # 2 MiB: 32 chunks, ~0.6 s


def _obtain(url: str, cache: str, barrier: Any) -> None:
    ref = FileRef(url=url, sha256=hashlib.sha256(BODY).hexdigest(), filename="x.whl")
    barrier.wait(timeout=30)
    obtain(ref, cache=Path(cache))


@pytest.mark.posix_only("forks two processes that fetch one file at once")
def test_two_processes_fetching_one_file_at_once_both_get_it_whole(tmp_path: Path) -> None:
    """Issue 29 #8's applies on a fresh ENVFORGE_HOME: both wrote one .part, the first moved
    it into the cache and the second then failed (or moved a mix)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Slow)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/x.whl"
    context = multiprocessing.get_context("fork")
    barrier = context.Barrier(2)
    fetchers = [context.Process(target=_obtain, args=(url, str(tmp_path / "cache"), barrier))
                for _ in range(2)]
    try:
        for fetcher in fetchers:
            fetcher.start()
        for fetcher in fetchers:
            fetcher.join(timeout=60)
    finally:
        server.shutdown()
    assert [fetcher.exitcode for fetcher in fetchers] == [0, 0]
    [cached] = [p for p in (tmp_path / "cache").rglob("x.whl")]
    assert cached.read_bytes() == BODY


def _served(tmp_path: Path) -> tuple[str, http.server.ThreadingHTTPServer]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Slow)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}/x.whl", server


def test_a_piped_download_shows_its_size_as_it_starts_goes_and_ends(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """apply's first pypi-packages step showed nothing for 48 s on ~1 GB of wheels."""
    import io

    from rich.console import Console

    from envforge import ui as ui_module
    from envforge.ui import UI

    monkeypatch.setattr(ui_module, "REPORT_EVERY", 1 << 20)
    err = io.StringIO()
    ui = UI(err=Console(file=err, highlight=False, soft_wrap=True))
    url, server = _served(tmp_path)
    ref = FileRef(url=url, sha256=hashlib.sha256(BODY).hexdigest(), filename="x.whl")
    try:
        obtain(ref, cache=tmp_path / "cache", report=ui.download)
        lines = err.getvalue().splitlines()
        assert lines[0] == "downloading x.whl (2.0 MiB)"
        assert lines[1:-1] == ["  x.whl: 1.0 MiB of 2.0 MiB", "  x.whl: 2.0 MiB of 2.0 MiB"]
        assert lines[-1].startswith("downloaded x.whl (2.0 MiB in ")
        err.truncate(0)
        obtain(ref, cache=tmp_path / "cache", report=ui.download)  # the cache's: no download
        assert err.getvalue() == ""
        UI(quiet=True).download("x.whl", 1)
        monkeypatch.setattr(ui_module, "REPORT_EVERY", 4 << 20)  # a small file: one line
        err.seek(0)
        obtain(ref, cache=tmp_path / "again", report=ui.download)
        (line,) = err.getvalue().splitlines()
        assert line.startswith("downloaded x.whl (2.0 MiB in ")
    finally:
        server.shutdown()


def _cached(tmp_path: Path, data: bytes, *, age_s: float) -> tuple[FileRef, Path]:
    """A file already in the cache, last written ``age_s`` seconds ago."""
    ref = FileRef("https://example.invalid/pkg.whl", hashlib.sha256(data).hexdigest(),
                  "pkg.whl")
    target = tmp_path / "cache" / "files" / ref.sha256[:2] / ref.sha256 / "pkg.whl"
    target.parent.mkdir(parents=True)
    target.write_bytes(data)
    then = time.time() - age_s
    os.utime(target, (then, then))
    return ref, target


@pytest.mark.parametrize(("age_s", "hashes"), [(60.0, 1), (0.0, 2)])
def test_a_settled_file_is_hashed_once_per_process(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, age_s: float, hashes: int) -> None:
    ref, _ = _cached(tmp_path, b"wheel bytes", age_s=age_s)
    calls = []

    def counting(path: Path) -> str:
        calls.append(path)
        return sha256_file(path)
    monkeypatch.setattr(fetch, "sha256_file", counting)

    obtain(ref, cache=tmp_path / "cache", offline=True)
    obtain(ref, cache=tmp_path / "cache", offline=True)

    assert len(calls) == hashes  # a file written within the last second is hashed each time


def test_a_file_altered_after_its_hash_is_hashed_again_and_refused(tmp_path: Path) -> None:
    ref, target = _cached(tmp_path, b"wheel bytes", age_s=60.0)
    obtain(ref, cache=tmp_path / "cache", offline=True)
    with open(target, "r+b") as handle:  # same size, same inode: only the mtime moves
        handle.write(b"W")

    with pytest.raises(ArtifactError, match="the cache copy was altered"):
        obtain(ref, cache=tmp_path / "cache", offline=True)


def _hashes(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    calls: list[Path] = []

    def counting(path: Path) -> str:
        calls.append(path)
        return sha256_file(path)
    monkeypatch.setattr(fetch, "sha256_file", counting)
    return calls


@pytest.mark.posix_only("on Windows the check is kept per process only: ctime is creation")
def test_a_later_process_takes_a_settled_cache_file_without_hashing_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ref, target = _cached(tmp_path, b"wheel bytes", age_s=60.0)
    calls = _hashes(monkeypatch)
    obtain(ref, cache=tmp_path / "cache", offline=True)
    monkeypatch.setattr(fetch, "_HASHED", {})  # as in a new process
    obtain(ref, cache=tmp_path / "cache", offline=True)
    assert calls == [target]


@pytest.mark.posix_only("on Windows the check is kept per process only: ctime is creation")
@pytest.mark.parametrize("how", ["a byte flipped, mtime set back", "replaced by a copy",
                                 "the record names another sha256"])
def test_a_cache_file_changed_since_its_record_is_hashed_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    ref, target = _cached(tmp_path, b"wheel bytes", age_s=60.0)
    obtain(ref, cache=tmp_path / "cache", offline=True)
    monkeypatch.setattr(fetch, "_HASHED", {})
    st = target.stat()
    if how == "a byte flipped, mtime set back":  # size, inode and mtime as recorded
        with open(target, "r+b") as handle:
            handle.write(b"W")
        os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))
    elif how == "replaced by a copy":
        copy = target.with_name("copy")
        copy.write_bytes(target.read_bytes())
        os.utime(copy, ns=(st.st_atime_ns, st.st_mtime_ns))
        copy.replace(target)
    else:
        record = tmp_path / "cache" / "checked" / f"{ref.sha256}.{target.name}"
        assert not target.with_name(f".{target.name}.checked").exists()  # not in its folder
        record.write_text(record.read_text().replace(ref.sha256, "0" * 64))
    calls = _hashes(monkeypatch)
    if how == "a byte flipped, mtime set back":
        with pytest.raises(ArtifactError, match="the cache copy was altered"):
            obtain(ref, cache=tmp_path / "cache", offline=True)
    else:
        obtain(ref, cache=tmp_path / "cache", offline=True)
    assert calls == [target]


@pytest.mark.posix_only("on Windows the check is kept per process only: ctime is creation")
def test_a_downloaded_file_is_not_hashed_again_and_a_later_write_is_seen(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Hashed as it landed, it lands settled (its mtime a second before the download began),
    so the step that takes it and the next process trust its stat; a write, even within the
    same second, moves the mtime and the file is hashed again and refused."""
    source = tmp_path / "pkg.whl"
    source.write_bytes(b"wheel bytes")
    ref = FileRef(url=source.as_uri(), sha256=hashlib.sha256(b"wheel bytes").hexdigest(),
                  filename="pkg.whl")
    began = time.time_ns()
    target = obtain(ref, cache=tmp_path / "cache")
    assert target.stat().st_mtime_ns < began - 10**9 + 10**9 // 2
    calls = _hashes(monkeypatch)
    obtain(ref, cache=tmp_path / "cache", offline=True)
    monkeypatch.setattr(fetch, "_HASHED", {})  # as in a new process
    obtain(ref, cache=tmp_path / "cache", offline=True)
    assert calls == []
    with open(target, "r+b") as handle:  # same size, same inode
        handle.write(b"W")
    with pytest.raises(ArtifactError, match="the cache copy was altered"):
        obtain(ref, cache=tmp_path / "cache", offline=True)
    assert calls == [target]
