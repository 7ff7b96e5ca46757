"""The no-op stamp: every kind of change to what it recorded makes it fall through."""

from __future__ import annotations

import os
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path

import platformdirs
import pytest

from envforge.host import noopstamp
from envforge.platforms import Os, host_platform
from envforge.steps.debs import MARKERS

WORDS = ["apply", "specs/x.toml", "--yes"]


def _tree(root: Path) -> dict[str, Path]:
    site = root / "env" / "lib" / "python3.7" / "site-packages"
    site.mkdir(parents=True)
    (root / "env" / ".lock").write_text("")  # uv's, from a sync before the stamp
    (site / "six-1.16.0.dist-info").mkdir(parents=True)
    (site / "six-1.16.0.dist-info" / "METADATA").write_text("Name: six\n")
    (site / "six-1.16.0.dist-info" / "RECORD").write_text("six.py,,\n")
    libs = root / "env" / "deb" / "usr" / "lib"
    libs.mkdir(parents=True)
    (libs / "libx.so.1").write_bytes(b"ELF")
    (libs / "libx.so").symlink_to("libx.so.1")
    (root / "env" / "deb" / MARKERS).mkdir()
    (root / "env" / "deb" / MARKERS / "libx1_1.0").write_text("sha\n")
    (site / "numpy").mkdir()
    (site / "numpy" / "core.py").write_text("x = 1\n")
    (root / "env" / "etc").mkdir()
    (root / "env" / "etc" / "theanorc").write_text("[global]\n")
    (root / "spec.toml").write_text("[project]\n")
    (root / "x.lock").write_text("lock\n")
    return {"site": site, "prefix": root / "env", "deb": root / "env" / "deb",
            "spec": root / "spec.toml",
            "lock": root / "x.lock", "rc": root / "env" / "etc" / "theanorc"}


def _age(paths: list[str], seconds: float = 5.0) -> None:
    """Older than the racy window, as files of an earlier apply are."""
    when = time.time() - seconds
    own = os.utime in os.supports_follow_symlinks  # a link's own times: not on Windows
    for path in paths:
        os.utime(path, (when, when), follow_symlinks=not own)


def _stamp(root: Path, env: dict[str, str], *, start_ns: int | None = None) -> dict[str, Path]:
    files = _tree(root)
    paths = [str(files["spec"]), str(files["lock"]),
             *noopstamp.environment_files(files["prefix"], files["site"],
                                          debian=(files["deb"], files["deb"] / MARKERS))]
    _age(paths)
    time.sleep(0.01)  # ctime cannot be set back: the start must follow the files' last change
    start = start_ns if start_ns is not None else time.time_ns() + 2 * noopstamp.RACY_NS
    noopstamp.write(noopstamp.stamp_path(WORDS, cwd=str(root), environ=env, version="1"),
                    start_ns=start, paths=paths,
                    links=noopstamp.resolved([str(files["spec"]), str(files["lock"])]),
                    environ=env, message="x: nothing to do", quiet=False,
                    loose=noopstamp.loose_folders(files["prefix"], files["site"],
                                                  [files["prefix"] / "compiledir"]))
    return files


def _noop(root: Path, env: dict[str, str], words: list[str] = WORDS) -> int | None:
    return noopstamp.try_noop(words, cwd=str(root), environ=env, version="1")


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {"ENVFORGE_HOME": str(tmp_path / "home"), "PATH": "/usr/bin"}


@pytest.mark.posix_only("the stat fast path: off on Windows, where st_ctime is not a change time")
def test_an_untouched_stamp_is_a_noop(tmp_path: Path, env: dict[str, str],
                                      capsys: pytest.CaptureFixture[str]) -> None:
    _stamp(tmp_path, env)
    assert _noop(tmp_path, env) == 0
    assert capsys.readouterr().err == "x: nothing to do\n"


def _touch_back(path: Path) -> None:
    """Content rewritten, size and mtime put back: only the ctime tells."""
    st = path.stat()
    path.write_bytes(path.read_bytes())
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


CHANGES: dict[str, Callable[[dict[str, Path]], None]] = {
    "spec edited": lambda f: f["spec"].write_text("[project]\nname = 'y'\n"),
    "lock rewritten, mtime put back": lambda f: _touch_back(f["lock"]),
    "lock replaced by rename": lambda f: (f["lock"].with_suffix(".new").write_text("lock\n"),
                                          f["lock"].with_suffix(".new").replace(f["lock"])),
    "managed file edited": lambda f: f["rc"].write_text("[global]\ndevice = cuda\n"),
    "managed file removed": lambda f: f["rc"].unlink(),
    "managed file created beside": lambda f: (f["prefix"] / "etc" / "other").write_text(""),
    "dist-info removed": lambda f: shutil.rmtree(f["site"] / "six-1.16.0.dist-info"),
    "dist-info added": lambda f: (f["site"] / "pip-24.0.dist-info").mkdir(),
    "dist-info added beside a __pycache__": lambda f: (
        (f["site"] / "__pycache__").mkdir(), (f["site"] / "pip-24.0.dist-info").mkdir()),
    "file added to a dist-info": lambda f: (
        f["site"] / "six-1.16.0.dist-info" / "REQUESTED").write_text(""),
    "file added beside uv's .lock": lambda f: (
        (f["prefix"] / ".lock").write_text(""), (f["prefix"] / "notes").write_text("")),
    "folder made writable to all": lambda f: (f["prefix"] / "etc").chmod(0o777),
    "dist-info renamed": lambda f: (f["site"] / "six-1.16.0.dist-info").rename(
        f["site"] / "six-1.15.0.dist-info"),
    "RECORD rewritten, mtime put back": lambda f: _touch_back(
        f["site"] / "six-1.16.0.dist-info" / "RECORD"),
    "Debian marker removed": lambda f: (f["deb"] / MARKERS / "libx1_1.0").unlink(),
    "Debian library link removed": lambda f: (f["deb"] / "usr" / "lib" / "libx.so").unlink(),
    "prefix removed": lambda f: f["prefix"].rename(f["prefix"].with_name("gone")),
    "spec made a link elsewhere": lambda f: (
        f["spec"].rename(f["spec"].with_suffix(".old")),
        f["spec"].symlink_to(f["spec"].with_suffix(".old"))),
}


@pytest.mark.posix_only("the stat fast path: off on Windows, where st_ctime is not a change time")
@pytest.mark.parametrize("change", sorted(CHANGES))
def test_every_change_falls_through(change: str, tmp_path: Path, env: dict[str, str]) -> None:
    files = _stamp(tmp_path, env)
    assert _noop(tmp_path, env) == 0
    CHANGES[change](files)
    assert _noop(tmp_path, env) is None


USES: dict[str, Callable[[dict[str, Path]], None]] = {
    "python imported a top-level module": lambda f: (
        (f["site"] / "__pycache__").mkdir(),
        (f["site"] / "__pycache__" / "six.cpython-37.pyc").write_bytes(b"pyc")),
    "uv wrote its .lock": lambda f: (f["prefix"] / ".lock").write_text(""),
    "uv made its .lock again": lambda f: (
        (f["prefix"] / ".lock").unlink(), (f["prefix"] / ".lock").write_text("")),
    "theano compiled into the environment": lambda f: (f["prefix"] / "compiledir").mkdir(),
    "a package's own __pycache__": lambda f: (f["site"] / "numpy" / "__pycache__").mkdir(),
    # their files are hard links into envforge's cache: another environment's apply links them
    "another environment linked a Debian file": lambda f: os.link(
        f["deb"] / "usr" / "lib" / "libx.so.1", f["prefix"].parent / "other-libx.so.1"),
    "another environment linked a dist-info's METADATA": lambda f: os.link(
        f["site"] / "six-1.16.0.dist-info" / "METADATA", f["prefix"].parent / "METADATA"),
}


@pytest.mark.posix_only("the stat fast path: off on Windows, where st_ctime is not a change time")
@pytest.mark.parametrize("use", sorted(USES))
def test_using_the_environment_keeps_the_stamp(use: str, tmp_path: Path,
                                               env: dict[str, str]) -> None:
    """What running Python or uv in the environment writes is read by no step."""
    files = _stamp(tmp_path, env)
    USES[use](files)
    assert _noop(tmp_path, env) == 0
    (files["spec"]).write_text("[project]\nname = 'y'\n")  # a real change still tells
    assert _noop(tmp_path, env) is None


@pytest.mark.posix_only("the stat fast path: off on Windows, where st_ctime is not a change time")
def test_package_code_is_not_read(tmp_path: Path, env: dict[str, str]) -> None:
    """What the real path does not read (a package's code) is not stamped either."""
    files = _stamp(tmp_path, env)
    (files["site"] / "numpy" / "core.py").write_text("x = 2\n")
    (files["site"] / "numpy" / "__pycache__").mkdir()  # running the code writes these
    assert _noop(tmp_path, env) == 0


@pytest.mark.posix_only("the stat fast path: off on Windows, where st_ctime is not a change time")
@pytest.mark.parametrize("other", [
    {"PATH": "/opt/bin:/usr/bin"}, {"THEANO_FLAGS": "device=cuda"}, {"HOME": "/elsewhere"}])
def test_another_environment_falls_through(other: dict[str, str], tmp_path: Path,
                                           env: dict[str, str]) -> None:
    _stamp(tmp_path, env)
    assert _noop(tmp_path, {**env, **other}) is None
    assert _noop(tmp_path, {**env, "OLDPWD": "/tmp", "SHLVL": "3"}) == 0  # a shell's own


def test_other_words_or_folder_or_version_fall_through(tmp_path: Path,
                                                       env: dict[str, str]) -> None:
    _stamp(tmp_path, env)
    assert _noop(tmp_path, env, ["apply", "specs/x.toml", "--yes", "--sync"]) is None
    assert _noop(tmp_path / "env", env) is None
    assert noopstamp.try_noop(WORDS, cwd=str(tmp_path), environ=env, version="2") is None
    assert _noop(tmp_path, env, ["plan", "specs/x.toml"]) is None


def test_a_racy_stamp_is_not_trusted(tmp_path: Path, env: dict[str, str]) -> None:
    """A file changed within RACY_NS before the stamp began may have kept its stat."""
    files = _stamp(tmp_path, env, start_ns=time.time_ns())
    assert _noop(tmp_path, env) is None
    assert files["spec"].exists()


@pytest.mark.parametrize("damage", ["", "{", '{"format": 99}', "[]"])
def test_a_damaged_stamp_falls_through(damage: str, tmp_path: Path,
                                       env: dict[str, str]) -> None:
    _stamp(tmp_path, env)
    noopstamp.stamp_path(WORDS, cwd=str(tmp_path), environ=env, version="1").write_text(damage)
    assert _noop(tmp_path, env) is None


@pytest.mark.posix_only("the stat fast path: off on Windows, where st_ctime is not a change time")
def test_quiet_prints_nothing(tmp_path: Path, env: dict[str, str],
                              capsys: pytest.CaptureFixture[str]) -> None:
    files = _tree(tmp_path / "q")
    _age([str(files["spec"])])
    time.sleep(0.01)
    noopstamp.write(noopstamp.stamp_path(WORDS, cwd=str(tmp_path), environ=env, version="1"),
                    start_ns=time.time_ns() + 2 * noopstamp.RACY_NS, paths=[str(files["spec"])],
                    links={}, environ=env, message="said", quiet=True)
    assert _noop(tmp_path, env) == 0
    assert capsys.readouterr().err == ""


def test_cache_root_is_platformdirs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ENVFORGE_HOME", raising=False)
    for xdg in (None, "/tmp/xdg-cache"):
        if xdg is None:
            monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
        else:
            monkeypatch.setenv("XDG_CACHE_HOME", xdg)
        assert noopstamp.cache_root(dict(os.environ)) == Path(
            platformdirs.user_cache_dir("envforge"))


def test_off_on_windows(tmp_path: Path, env: dict[str, str],
                        monkeypatch: pytest.MonkeyPatch) -> None:
    """On Windows st_ctime is the creation time (and SetFileTime sets it): a file rewritten
    with its mtime put back keeps its stat, so the fast path never answers there."""
    _stamp(tmp_path, env)
    if sys.platform != "win32":
        assert _noop(tmp_path, env) == 0  # the stamp holds: what follows is the platform's doing
    monkeypatch.setattr(noopstamp, "ON_LINUX", False)
    assert _noop(tmp_path, env) is None


def test_its_host_test_is_host_platforms() -> None:
    """The fast path reads sys.platform itself (envforge.platforms is too slow to import)."""
    assert (host_platform().os is Os.LINUX) == noopstamp.ON_LINUX
