"""The head start: a cold apply's locked sdists downloaded into memory before planning, only
for ``apply SPEC --yes`` online, written into the cache only by the real path's download."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from envforge.host import headstart
from envforge.host.fetch import FileRef, cache_path, obtain
from envforge.host.headstart import fetch_sdists, landed, lock_file, start, take
from envforge.lockfile import lock_path_for
from envforge.platforms import host_platform
from tests.testing.localindex import served, write_tar


def _lock(path: Path, url: str, sha256: str, size: int, *, kind: str = "sdist") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f'[platforms.{host_platform().name}]\npython = "3.7"\n\n'
        f"[[platforms.{host_platform().name}.pypi]]\n"
        f'filename = "tiny-0.1.tar.gz"\nkind = "{kind}"\nname = "tiny"\n'
        f'sha256 = "{sha256}"\nsize = {size}\nurl = "{url}"\nversion = "0.1"\n',
        encoding="utf-8")
    return path


@pytest.fixture
def index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, bytes]:
    monkeypatch.setattr(headstart, "_EARLY", {})
    files = tmp_path / "index" / "files"
    files.mkdir(parents=True)
    archive = write_tar(files / "tiny-0.1.tar.gz", "tiny-0.1", {"setup.py": "print(1)\n"})
    return tmp_path / "index", archive.read_bytes()


def test_an_sdist_comes_into_memory_and_the_real_download_takes_it(
        tmp_path: Path, index: tuple[Path, bytes]) -> None:
    root, body = index
    sha = hashlib.sha256(body).hexdigest()
    cache = tmp_path / "cache"
    with served(root) as simple:
        url = simple.replace("/simple", "/files/tiny-0.1.tar.gz")
        fetch_sdists(str(_lock(tmp_path / "locks" / "x.lock", url, sha, len(body))), str(cache))
    assert not cache.exists()  # nothing written before planning has checked the lock
    assert landed(url, sha) and not landed(url, "0" * 64)
    # the server is gone: the cache's copy can only be the head start's
    got = obtain(FileRef(url, sha, "tiny-0.1.tar.gz", len(body)), cache=cache)
    assert got == cache_path(cache, FileRef(url, sha, "tiny-0.1.tar.gz"))
    assert got.read_bytes() == body
    assert take(url, sha) is None  # taken once


@pytest.mark.parametrize("how", ["another sha256", "another size", "a wheel", "too large",
                                 "in the cache already"])
def test_what_is_not_the_locked_sdist_is_not_kept(
        tmp_path: Path, index: tuple[Path, bytes], monkeypatch: pytest.MonkeyPatch,
        how: str) -> None:
    root, body = index
    sha = "0" * 64 if how == "another sha256" else hashlib.sha256(body).hexdigest()
    size = len(body) - 1 if how == "another size" else len(body)
    if how == "too large":
        monkeypatch.setattr(headstart, "MAX_BYTES", len(body) - 1)
    with served(root) as simple:
        url = simple.replace("/simple", "/files/tiny-0.1.tar.gz")
        if how == "in the cache already":
            obtain(FileRef(url, sha, "tiny-0.1.tar.gz", size), cache=tmp_path / "cache")
        fetch_sdists(str(_lock(tmp_path / "x.lock", url, sha, size,
                               kind="wheel" if how == "a wheel" else "sdist")),
                     str(tmp_path / "cache"))
    assert take(url, sha) is None


def test_an_unreadable_lock_starts_nothing(tmp_path: Path, index: tuple[Path, bytes]) -> None:
    fetch_sdists(str(tmp_path / "absent.lock"), str(tmp_path / "cache"))
    (tmp_path / "bad.lock").write_text("not toml [", encoding="utf-8")
    fetch_sdists(str(tmp_path / "bad.lock"), str(tmp_path / "cache"))
    assert headstart._EARLY == {}


@pytest.mark.parametrize("words", [
    ["apply", "specs/x.toml"],  # asks first: nothing before the confirmation
    ["apply", "specs/x.toml", "--yes", "--offline"],
    ["apply", "specs/x.toml", "--yes", "--bundle", "b"],
    ["plan", "specs/x.toml", "--yes"],
])
def test_only_an_online_apply_yes_starts(words: list[str], tmp_path: Path) -> None:
    assert start(words, cwd=str(tmp_path), environ={}) is None


def test_the_lock_is_where_apply_finds_it(tmp_path: Path) -> None:
    spec = tmp_path / "proj" / "specs" / "x.toml"
    spec.parent.mkdir(parents=True)
    spec.write_text("", encoding="utf-8")
    assert lock_file("specs/x.toml", None, cwd=str(tmp_path / "proj")) \
        == str(lock_path_for(spec))
    assert lock_file("specs/x.toml", "elsewhere", cwd=str(tmp_path)) \
        == str(tmp_path / "elsewhere" / "x.lock")


def test_an_apply_yes_downloads_its_lock_s_sdist(tmp_path: Path,
                                                 index: tuple[Path, bytes]) -> None:
    root, body = index
    sha = hashlib.sha256(body).hexdigest()
    project = tmp_path / "proj"
    (project / "specs").mkdir(parents=True)
    (project / "specs" / "x.toml").write_text("", encoding="utf-8")
    with served(root) as simple:
        url = simple.replace("/simple", "/files/tiny-0.1.tar.gz")
        _lock(project / "locks" / "x.lock", url, sha, len(body))
        thread = start(["apply", "specs/x.toml", "-q", "--yes"], cwd=str(project),
                       environ={"ENVFORGE_HOME": str(tmp_path / "home")})
        assert thread is not None
        thread.join(30)
    assert take(url, sha) == body
