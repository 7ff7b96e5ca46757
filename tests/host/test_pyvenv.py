"""A venv written by envforge against the one each real Python's own ``venv`` writes."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from envforge.host.interpreters import query_version
from envforge.host.pyvenv import make_venv

PYENV = Path(os.environ.get("PYENV_ROOT", str(Path.home() / ".pyenv"))) / "versions"


def _pythons() -> list[Path]:
    found = []
    for minor in ("3.6", "3.7", "3.8", "3.9", "3.10", "3.11", "3.12"):
        found += sorted(PYENV.glob(f"{minor}.*/bin/python{minor}"))[-1:]
    return found


def _tree(prefix: Path) -> dict[str, str]:
    """Every entry: a link's target, a file's text with the folder's name made neutral."""
    shown = {}
    for path in sorted(prefix.rglob("*")):
        name = str(path.relative_to(prefix))
        if path.is_symlink():
            shown[name] = "-> " + str(path.readlink())
        elif path.is_dir():
            shown[name] = "dir"
        else:
            text = path.read_text(encoding="utf-8").replace(str(prefix), "PREFIX")
            shown[name] = f"{oct(path.stat().st_mode & 0o777)} {text}"
    return shown


@pytest.mark.posix_only("venv links the interpreter on POSIX; Windows keeps python -m venv")
@pytest.mark.parametrize("python", _pythons(), ids=lambda p: p.name)
def test_the_venv_written_is_the_one_python_m_venv_writes(tmp_path: Path, python: Path) -> None:
    interpreter = query_version(python)
    assert interpreter is not None
    theirs, ours = tmp_path / "a" / "env", tmp_path / "b" / "env"
    subprocess.run([python, "-m", "venv", "--without-pip", theirs], check=True)
    assert make_venv(python, interpreter.version, ours)
    expected = _tree(theirs)
    expected["pyvenv.cfg"] = "\n".join(
        line for line in expected["pyvenv.cfg"].split("\n")
        if not line.startswith(("executable =", "command ="))) + ("" if expected[
            "pyvenv.cfg"].endswith("\n") else "\n")
    assert _tree(ours) == expected
    found = query_version(ours / "bin" / "python")
    assert found is not None and found.version == interpreter.version
    done = subprocess.run([ours / "bin" / "python", "-c", "import sys; print(sys.prefix)"],
                          check=True, capture_output=True, text=True)
    assert done.stdout.strip() == str(ours)


def test_an_interpreter_without_venv_templates_is_left_to_python_m_venv(tmp_path: Path) -> None:
    fake = tmp_path / "usr" / "bin" / "python3.7"
    fake.parent.mkdir(parents=True)
    fake.write_text("#!/bin/sh\n")
    assert not make_venv(fake, "3.7.16", tmp_path / "env")
    assert not (tmp_path / "env").exists()


@pytest.mark.posix_only("a Windows venv is always python -m venv's")
def test_a_python_newer_than_the_venv_layouts_checked_is_left_to_python_m_venv(
        tmp_path: Path) -> None:
    """Two interpreters alike but for their minor: only the version bound tells them apart."""
    for minor, written in (("3.12", True), ("3.13", False)):
        python = tmp_path / minor / "bin" / f"python{minor}"
        python.parent.mkdir(parents=True)
        python.write_text("#!/bin/sh\n")
        (tmp_path / minor / "lib" / f"python{minor}" / "venv" / "scripts" / "common").mkdir(
            parents=True)
        prefix = tmp_path / f"env{minor}"
        assert make_venv(python, f"{minor}.0", prefix) is written
        assert prefix.exists() is written
