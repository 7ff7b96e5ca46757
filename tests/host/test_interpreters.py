"""Interpreter discovery: the candidate order as data, and the real pyenv Python 3.7."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from envforge.errors import StepError
from envforge.host import interpreters
from envforge.host.headstart import find_python
from envforge.host.interpreters import candidates, find_interpreter, install_hint
from envforge.platforms import PLATFORMS

LINUX, WINDOWS = PLATFORMS["linux-64"], PLATFORMS["win-64"]


def _exe(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


@pytest.mark.posix_only("Linux PATH rules over ':'-joined temp folders (drive colons)")
def test_candidate_order_path_then_pyenv_then_uv(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _exe(home / ".pyenv/versions/3.7.16/bin/python3.7")
    _exe(home / ".pyenv/versions/3.7.9/bin/python3.7")
    _exe(home / ".pyenv/versions/3.8.18/bin/python3.8")
    _exe(home / ".local/share/uv/python/cpython-3.7.9-linux-x86_64-gnu/bin/python3.7")
    env = {"PATH": f"{tmp_path}/bin:{home}/.pyenv/shims"}
    found = [(c.found_by, c.path) for c in candidates("3.7", env, platform=LINUX, home=home)]
    assert found[0] == ("PATH", tmp_path / "bin/python3.7")
    pyenv = [p for how, p in found if how == "pyenv"]
    assert pyenv == [home / ".pyenv/versions/3.7.16/bin/python3.7",
                     home / ".pyenv/versions/3.7.9/bin/python3.7"]  # newest patch first
    assert found[-1][0] == "uv"
    assert not any("shims" in str(p) for _, p in found)


def test_windows_candidates_use_semicolons_and_exe(tmp_path: Path) -> None:
    env = {"PATH": r"C:\Python37;C:\Windows", "APPDATA": str(tmp_path)}
    found = [str(c.path) for c in candidates("3.7", env, platform=WINDOWS,
                                                   home=tmp_path)]
    assert found[:2] == [str(Path(r"C:\Python37") / "python3.exe"),
                         str(Path(r"C:\Python37") / "python.exe")]


@pytest.mark.posix_only("the Python 3.7 here is pyenv's Linux build (no Windows 3.7 is reachable)")
def test_real_python37_is_discovered() -> None:
    interpreter = find_interpreter("3.7", environ=dict(os.environ))
    assert interpreter.minor == "3.7"
    assert interpreter.executable.is_file()


def test_missing_version_says_where_it_looked_and_how_to_install_one(tmp_path: Path) -> None:
    """uv downloads no CPython below 3.8.2 (uv 0.13.9's ``uv python list --all-versions
    --only-downloads``): for 3.5-3.7 the hint is pyenv's alone."""
    with pytest.raises(StepError, match=r"no Python 3\.5 found") as older:
        find_interpreter("3.5", environ={"PATH": str(tmp_path)}, home=tmp_path)
    assert str(older.value).endswith("install one: `pyenv install 3.5` (uv downloads CPython "
                                     "from 3.8.2 on, so `uv python install 3.5` cannot)")
    assert install_hint("3.8") == "`uv python install 3.8` or `pyenv install 3.8`"
    assert install_hint("3.10") == "`uv python install 3.10` or `pyenv install 3.10`"


@pytest.mark.posix_only("symlinked folders on PATH, as a merged /usr has them")
def test_one_interpreter_reached_twice_is_asked_once(tmp_path: Path) -> None:
    """/bin -> /usr/bin puts each python on PATH twice: it is run once, not once per name."""
    import sys

    usr_bin = tmp_path / "usr" / "bin"
    usr_bin.mkdir(parents=True)
    (usr_bin / "python3").symlink_to(sys.executable)
    (tmp_path / "bin").symlink_to(usr_bin)
    path = os.pathsep.join([str(usr_bin), str(tmp_path / "bin")])
    with pytest.raises(StepError) as err:
        find_interpreter("3.5", environ={"PATH": path}, home=tmp_path)
    assert f"(tried {usr_bin / 'python3'});" in str(err.value)


def _counting_python(path: Path, version: str, runs: Path) -> None:
    """A stand-in interpreter that answers envforge's query and counts how often it runs."""
    path.write_text(f"#!/bin/sh\necho run >> {runs}\n"
                    f"echo '{{\"version\": \"{version}\", \"executable\": \"{path}\"}}'\n")
    path.chmod(0o755)


@pytest.mark.posix_only("a shell script stands in for the interpreter")
def test_an_interpreter_is_asked_once_then_again_when_its_file_changes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A query starts a Python; envforge's cache keeps its answer for that very file."""
    runs, cache = tmp_path / "runs", tmp_path / "cache"
    python = tmp_path / "bin" / "python3.7"
    python.parent.mkdir()
    _counting_python(python, "3.7.16", runs)
    env = {"PATH": str(python.parent)}
    for _ in range(2):
        found = find_interpreter("3.7", environ=env, home=tmp_path, cache=cache)
        assert (found.version, found.executable) == ("3.7.16", python)
    assert runs.read_text().count("run") == 1
    _counting_python(python, "3.7.17", runs)  # upgraded in place: a new ctime at least
    assert find_interpreter("3.7", environ=env, home=tmp_path, cache=cache).version == "3.7.17"
    assert runs.read_text().count("run") == 2
    assert find_interpreter("3.7", environ=env, home=tmp_path).version == "3.7.17"  # no cache
    assert runs.read_text().count("run") == 2  # this process had the answer for this file
    monkeypatch.setattr(interpreters, "_ASKED", {})  # as in a new process
    assert find_interpreter("3.7", environ=env, home=tmp_path).version == "3.7.17"
    assert runs.read_text().count("run") == 3


@pytest.mark.posix_only("a shell script stands in for the interpreter")
def test_the_head_starts_search_is_the_builds_and_writes_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """apply's head start asks the lock's Python while planning imports; the build's search
    with envforge's cache then runs nothing and keeps that answer there."""
    monkeypatch.setattr(interpreters, "_ASKED", {})
    runs, cache = tmp_path / "runs", tmp_path / "cache"
    python = tmp_path / "bin" / "python3.7"
    python.parent.mkdir()
    _counting_python(python, "3.7.16", runs)
    env = {"PATH": str(python.parent), "HOME": str(tmp_path)}
    find_python("3.7.16", env)
    assert runs.read_text().count("run") == 1 and not cache.exists()
    found = find_interpreter("3.7", environ=env, home=tmp_path, cache=cache)
    assert (found.version, runs.read_text().count("run")) == ("3.7.16", 1)
    assert (cache / "interpreters-v1.json").is_file()


@pytest.mark.posix_only("a shell script stands in for the interpreter")
def test_a_damaged_interpreter_cache_is_asked_past(tmp_path: Path) -> None:
    runs, cache = tmp_path / "runs", tmp_path / "cache"
    python = tmp_path / "bin" / "python3.7"
    python.parent.mkdir()
    _counting_python(python, "3.7.16", runs)
    cache.mkdir()
    (cache / "interpreters-v1.json").write_text("{not json")
    env = {"PATH": str(python.parent)}
    assert find_interpreter("3.7", environ=env, home=tmp_path, cache=cache).version == "3.7.16"
    assert find_interpreter("3.7", environ=env, home=tmp_path, cache=cache).version == "3.7.16"
    assert runs.read_text().count("run") == 1


@pytest.mark.posix_only("a shell script stands in for the interpreter")
def test_an_interpreter_named_for_another_minor_is_not_run(tmp_path: Path) -> None:
    """``python3`` -> ``python3.11`` (Debian's /usr/bin, pyenv's and CPython's installs name
    the real file so) is passed over without starting it when 3.7 is searched; a plain name
    is still asked, and so is a link to a file named for the minor searched."""
    runs = tmp_path / "runs"
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    _counting_python(first / "python3.11", "3.11.7", runs)
    (first / "python3").symlink_to(first / "python3.11")
    _counting_python(second / "python3.7", "3.7.16", runs)
    (second / "python3").symlink_to(second / "python3.7")
    env = {"PATH": os.pathsep.join([str(first), str(second)])}
    found = find_interpreter("3.7", environ=env, home=tmp_path)
    assert (found.version, runs.read_text().count("run")) == ("3.7.16", 1)
    with pytest.raises(StepError, match=r"tried .*first/python3\)"):  # looked at, by its name
        find_interpreter("3.5", environ={"PATH": str(first)}, home=tmp_path)
    assert runs.read_text().count("run") == 1
    (first / "python").write_text((first / "python3.11").read_text())
    (first / "python").chmod(0o755)
    with pytest.raises(StepError):
        find_interpreter("3.5", environ={"PATH": str(first)}, home=tmp_path)
    assert runs.read_text().count("run") == 2  # a name that says no version is asked
