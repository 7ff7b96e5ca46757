"""A repository's pytest configuration read as pytest finds it: the first file holding its
section wins, and the addopts' options are matched as pytest parses them."""

from __future__ import annotations

from pathlib import Path

import pytest

from envforge.importers.pytestconfig import option_line, passes, pytest_addopts

KERAS_RL_INI = ("# Configuration of py.test\n[pytest]\naddopts=-v\n        -n 2\n"
                "        --durations=10\nnorecursedirs=build venv\n")  # keras-rl 0707d6d


def test_keras_rl_s_pytest_ini_passes_xdist_s_option(tmp_path: Path) -> None:
    (tmp_path / "pytest.ini").write_text(KERAS_RL_INI)
    (tmp_path / "setup.cfg").write_text("[tool:pytest]\naddopts = --cov=rl\n")  # not read
    found = pytest_addopts(tmp_path)
    assert found == ("pytest.ini", ("-v", "-n", "2", "--durations=10"))
    assert passes(found[1], "-n") and not passes(found[1], "--cov")
    assert option_line(tmp_path, "pytest.ini", "-n") == 4


@pytest.mark.parametrize(("name", "text"), [
    ("setup.cfg", "[metadata]\nname = x\n[tool:pytest]\naddopts = -nauto --cov=pkg\n"),
    ("tox.ini", "[tox]\nenvlist = py37\n[pytest]\naddopts = -n4 --cov pkg\n"),
    ("pyproject.toml", "[tool.pytest.ini_options]\naddopts = ['-n', 'auto', '--cov=pkg']\n"),
])
def test_each_file_pytest_reads_is_read(tmp_path: Path, name: str, text: str) -> None:
    (tmp_path / name).write_text(text)
    found = pytest_addopts(tmp_path)
    assert found is not None and found[0] == name
    assert passes(found[1], "-n") and passes(found[1], "--cov")


def test_an_empty_pytest_ini_wins_and_a_file_without_the_section_is_passed_over(
        tmp_path: Path) -> None:
    (tmp_path / "tox.ini").write_text("[tox]\nenvlist = py37\n")
    (tmp_path / "setup.cfg").write_text("[tool:pytest]\naddopts = -n 2\n")
    assert pytest_addopts(tmp_path) == ("setup.cfg", ("-n", "2"))
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    assert pytest_addopts(tmp_path) == ("pytest.ini", ())


def test_what_cannot_be_read_is_passed_over_never_raised(tmp_path: Path) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest\naddopts = -n 2\n")  # no section header
    (tmp_path / "pyproject.toml").write_text("[tool.pytest.ini_options\n")  # bad TOML
    (tmp_path / "tox.ini").write_text("[pytest]\naddopts = -n 'unclosed\n")  # bad quoting
    assert pytest_addopts(tmp_path) is None
