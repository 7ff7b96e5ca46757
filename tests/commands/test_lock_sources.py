"""Sources beside the index: a git dependency pinned to a commit and carried as its archive
(sha256 in the lock, in the cache, in a bundle), a local sdist, and a find-links folder.

The git repository is real and served over file://; it is deleted before the bundle apply, so
that apply can only have used the bundle."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

import pytest

from envforge.cli import main
from envforge.host.fetch import FileRef, cache_path
from envforge.lockfile import load_lock
from envforge.paths import envforge_dirs
from tests.testing.localindex import add_project, served
from tests.testing.packs import REGISTRY
from tests.testing.specs import venv_spec_text

SETUP = """\
from setuptools import setup
setup(name="envforge-tinypkg-fixture", version="0.2.dev1", packages=["tinypkg"])
"""



def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t",
                           *args], check=True, capture_output=True, text=True)
    return done.stdout.strip()


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ENVFORGE_HOME", str(tmp_path / "envforge-home"))
    return tmp_path / "envforge-home"


@pytest.fixture
def git_repo(tmp_path: Path) -> tuple[Path, str]:
    """A package (a name no index has) in a git repository, tagged v0.2, then a later
    commit."""
    repo = tmp_path / "tinypkg-src"
    (repo / "tinypkg").mkdir(parents=True)
    (repo / "setup.py").write_text(SETUP)
    (repo / "tinypkg" / "__init__.py").write_text('WHERE = "v0.2"\n')
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "v0.2")
    git(repo, "tag", "v0.2")
    commit = git(repo, "rev-parse", "HEAD")
    (repo / "tinypkg" / "__init__.py").write_text('WHERE = "later"\n')
    git(repo, "commit", "-qam", "later")
    return repo, commit


def write_spec(tmp_path: Path, name: str, packages: list[str], extra: str = "") -> Path:
    (tmp_path / "specs").mkdir(exist_ok=True)
    path = tmp_path / "specs" / f"{name}.toml"
    listed = ", ".join(f'"{p}"' for p in packages)
    path.write_text(venv_spec_text(name, f"{extra}packages = [{listed}]\n"))
    return path


@pytest.mark.network
@pytest.mark.slow
def test_a_git_dependency_is_locked_by_commit_and_applies_from_a_bundle(
        tmp_path: Path, home: Path, git_repo: tuple[Path, str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    repo, commit = git_repo
    spec = write_spec(tmp_path, "gitdep", [f"envforge-tinypkg-fixture @ git+{repo.as_uri()}@v0.2"])
    assert main(["lock", str(spec)]) == 0
    lock_path = tmp_path / "locks" / "gitdep.lock"
    [locked] = load_lock(lock_path, REGISTRY).platforms["linux-64"].pypi
    assert (locked.origin, locked.commit, locked.kind) == ("git", commit, "sdist")
    assert locked.url == f"git+{repo.as_uri()}@{commit}"
    cached = cache_path(envforge_dirs().cache, FileRef(locked.url, locked.sha256,
                                                       locked.filename))
    assert hashlib.sha256(cached.read_bytes()).hexdigest() == locked.sha256
    first = lock_path.read_bytes()
    shutil.rmtree(envforge_dirs().cache / "files")  # the archive is made again, identically
    lock_path.unlink()
    assert main(["lock", str(spec)]) == 0 and lock_path.read_bytes() == first

    online = tmp_path / "online"
    assert main(["apply", str(spec), "--yes", "--prefix", str(online)]) == 0
    assert _where(online) == "v0.2"  # the tag's commit, not the later one

    bundle = tmp_path / "bundle"
    assert main(["bundle", str(lock_path), "-o", str(bundle)]) == 0
    shutil.rmtree(repo)
    shutil.rmtree(envforge_dirs().cache)
    no_network(monkeypatch)
    offline = tmp_path / "offline"
    assert main(["apply", str(spec), "--yes", "--bundle", str(bundle), "--prefix",
                 str(offline)]) == 0
    assert _where(offline) == "v0.2"


def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """No TCP/IP from here on: in this process a connect raises, and a child's proxy is a
    closed port (a bundle apply that reached for the network would fail, not pass)."""
    import socket

    real_connect = socket.socket.connect

    def refuse(self: socket.socket, address: object) -> None:
        if self.family in (socket.AF_INET, socket.AF_INET6):
            raise OSError("network blocked by the test")
        real_connect(self, address)  # type: ignore[arg-type]

    monkeypatch.setattr(socket.socket, "connect", refuse)
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.setenv(name, "http://127.0.0.1:9")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)


def _where(prefix: Path) -> str:
    return subprocess.run([str(prefix / "bin" / "python"), "-c",
                           "import tinypkg; print(tinypkg.WHERE)"], capture_output=True,
                          text=True, check=True).stdout.strip()


@pytest.mark.network
def test_a_local_sdist_and_a_find_links_wheel_are_locked_with_their_hashes(
        tmp_path: Path, home: Path, git_repo: tuple[Path, str]) -> None:
    repo, commit = git_repo
    sdist = tmp_path / "envforge_tinypkg_fixture-0.2.dev1.tar.gz"
    git(repo, "archive", "--format=tar.gz", "--prefix=envforge_tinypkg_fixture-0.2.dev1/",
        "-o", str(sdist), commit)
    spec = write_spec(tmp_path, "local", [f"envforge-tinypkg-fixture @ {sdist.as_uri()}"])
    assert main(["lock", str(spec)]) == 0
    [locked] = load_lock(tmp_path / "locks" / "local.lock", REGISTRY).platforms["linux-64"].pypi
    assert (locked.origin, locked.kind, locked.url) == ("path", "sdist", sdist.as_uri())
    assert locked.sha256 == hashlib.sha256(sdist.read_bytes()).hexdigest()

    links = tmp_path / "links"
    links.mkdir()
    from envforge.host.uv import uv_binary

    subprocess.run([uv_binary(), "build", "--wheel", "-q", "-o", str(links), str(repo)],
                   check=True)
    [wheel] = links.glob("*.whl")
    spec = write_spec(tmp_path, "links", ["envforge-tinypkg-fixture"],
                      extra=f'find_links = ["{links}"]\n')
    assert main(["lock", str(spec)]) == 0
    lock = load_lock(tmp_path / "locks" / "links.lock", REGISTRY)
    [locked] = lock.platforms["linux-64"].pypi
    assert (locked.origin, locked.kind, locked.filename) == ("find-links", "wheel", wheel.name)
    assert locked.sha256 == hashlib.sha256(wheel.read_bytes()).hexdigest()
    assert lock.meta.pypi_find_links == (str(links),)
    prefix = tmp_path / "env"
    assert main(["apply", str(spec), "--yes", "--prefix", str(prefix)]) == 0
    assert _where(prefix) == "later"  # the wheel was built from the later commit


def test_a_local_folder_is_refused_with_the_fix(tmp_path: Path) -> None:
    from envforge.errors import ResolveError
    from envforge.resolve.pypi import pick_files

    doc = {"packages": [{"name": "x", "version": "1", "directory": {"path": "/src/x"}}]}
    with pytest.raises(ResolveError, match="git\\+file"):
        pick_files(doc, platform="linux-64", python="3.7")


@pytest.mark.network
def test_an_extra_index_is_searched_recorded_and_applied_from(
        tmp_path: Path, home: Path, git_repo: tuple[Path, str]) -> None:
    """A PEP 503 index served over HTTP beside PyPI: the fixture package comes from it, six
    from PyPI; the lock records the extra index and apply installs from both."""
    from envforge.host.uv import uv_binary

    repo, _ = git_repo
    root = tmp_path / "index"
    files = root / "files"
    subprocess.run([uv_binary(), "build", "--wheel", "-q", "-o", str(files), str(repo)],
                   check=True)
    [wheel] = files.glob("*.whl")
    sha = add_project(root, "envforge-tinypkg-fixture", wheel)
    with served(root) as url:
        spec = write_spec(tmp_path, "extra", ["envforge-tinypkg-fixture", "six==1.16.0"],
                          extra=f'extra_indexes = ["{url}"]\n')
        assert main(["lock", str(spec)]) == 0
        lock = load_lock(tmp_path / "locks" / "extra.lock", REGISTRY)
        files_by_name = {f.name: f for f in lock.platforms["linux-64"].pypi}
        fixture = files_by_name["envforge-tinypkg-fixture"]
        assert fixture.url.startswith(url.removesuffix("simple") + "files/")
        assert fixture.sha256 == sha
        assert files_by_name["six"].url.startswith("https://files.pythonhosted.org/")
        assert lock.meta.pypi_extra_indexes == (url,)
        prefix = tmp_path / "env"
        assert main(["apply", str(spec), "--yes", "--prefix", str(prefix)]) == 0
        assert _where(prefix) == "later"
