"""The head start: a cold apply's locked sdists fetched into the cache before planning,
only for ``apply SPEC --yes`` online, and nothing the real path would not fetch."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from envforge.host.fetch import FileRef, cache_path
from envforge.host.headstart import fetch_sdists, lock_file, start
from envforge.lockfile import lock_path_for
from envforge.platforms import host_platform
from tests.testing.localindex import served, write_tar


def _lock(path: Path, url: str, sha256: str, *, kind: str = "sdist") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f'[platforms.{host_platform().name}]\npython = "3.7"\n\n'
        f"[[platforms.{host_platform().name}.pypi]]\n"
        f'filename = "tiny-0.1.tar.gz"\nkind = "{kind}"\nname = "tiny"\n'
        f'sha256 = "{sha256}"\nurl = "{url}"\nversion = "0.1"\n', encoding="utf-8")
    return path


@pytest.fixture
def index(tmp_path: Path) -> tuple[Path, str]:
    files = tmp_path / "index" / "files"
    files.mkdir(parents=True)
    archive = write_tar(files / "tiny-0.1.tar.gz", "tiny-0.1", {"setup.py": "print(1)\n"})
    return tmp_path / "index", hashlib.sha256(archive.read_bytes()).hexdigest()


def test_an_sdist_is_fetched_into_the_cache_checked(tmp_path: Path,
                                                     index: tuple[Path, str]) -> None:
    root, sha = index
    cache = tmp_path / "cache"
    with served(root) as simple:
        url = simple.replace("/simple", "/files/tiny-0.1.tar.gz")
        lock = _lock(tmp_path / "locks" / "x.lock", url, sha)
        fetch_sdists(str(lock), str(cache))
    got = cache_path(cache, FileRef(url, sha, "tiny-0.1.tar.gz"))
    assert hashlib.sha256(got.read_bytes()).hexdigest() == sha


def test_a_file_not_hashing_as_locked_is_left_out_silently(
        tmp_path: Path, index: tuple[Path, str]) -> None:
    """The real path fetches it again and reports it; nothing unchecked enters the cache."""
    root, _ = index
    cache = tmp_path / "cache"
    with served(root) as simple:
        url = simple.replace("/simple", "/files/tiny-0.1.tar.gz")
        fetch_sdists(str(_lock(tmp_path / "locks" / "x.lock", url, "0" * 64)), str(cache))
    assert not cache_path(cache, FileRef(url, "0" * 64, "tiny-0.1.tar.gz")).exists()


def test_wheels_and_unreadable_locks_fetch_nothing(tmp_path: Path,
                                                   index: tuple[Path, str]) -> None:
    root, sha = index
    cache = tmp_path / "cache"
    with served(root) as simple:
        url = simple.replace("/simple", "/files/tiny-0.1.tar.gz")
        fetch_sdists(str(_lock(tmp_path / "w.lock", url, sha, kind="wheel")), str(cache))
        fetch_sdists(str(tmp_path / "absent.lock"), str(cache))
        (tmp_path / "bad.lock").write_text("not toml [", encoding="utf-8")
        fetch_sdists(str(tmp_path / "bad.lock"), str(cache))
    assert not cache.exists()


@pytest.mark.parametrize("words", [
    ["apply", "specs/x.toml"],  # asks first: nothing before the confirmation
    ["apply", "specs/x.toml", "--yes", "--offline"],
    ["apply", "specs/x.toml", "--yes", "--bundle", "b"],
    ["plan", "specs/x.toml", "--yes"],
])
def test_only_an_online_apply_yes_starts(words: list[str], tmp_path: Path) -> None:
    assert start(words, cwd=str(tmp_path), environ={"ENVFORGE_HOME": str(tmp_path)}) is None


def test_the_lock_is_where_apply_finds_it(tmp_path: Path) -> None:
    spec = tmp_path / "proj" / "specs" / "x.toml"
    spec.parent.mkdir(parents=True)
    spec.write_text("", encoding="utf-8")
    assert lock_file("specs/x.toml", None, cwd=str(tmp_path / "proj")) \
        == str(lock_path_for(spec))
    assert lock_file("specs/x.toml", "elsewhere", cwd=str(tmp_path)) \
        == str(tmp_path / "elsewhere" / "x.lock")


def test_an_apply_yes_fetches_its_lock_s_sdist(tmp_path: Path,
                                               index: tuple[Path, str]) -> None:
    root, sha = index
    project = tmp_path / "proj"
    (project / "specs").mkdir(parents=True)
    (project / "specs" / "x.toml").write_text("", encoding="utf-8")
    with served(root) as simple:
        url = simple.replace("/simple", "/files/tiny-0.1.tar.gz")
        _lock(project / "locks" / "x.lock", url, sha)
        thread = start(["apply", "specs/x.toml", "-q", "--yes"], cwd=str(project),
                       environ={"ENVFORGE_HOME": str(tmp_path / "home")})
        assert thread is not None
        thread.join(30)
    assert cache_path(tmp_path / "home" / "cache", FileRef(url, sha, "tiny-0.1.tar.gz")).is_file()
