"""The options a repository's pytest configuration always passes (``addopts``), read as
text: an option a plugin adds (``-n 2``: pytest-xdist) makes pytest refuse to start where
the plugin is missing ("unrecognized arguments: -n"), before any test runs.

Files in pytest's own order, the first that holds its section wins: ``pytest.ini``
(``[pytest]``, even empty), ``pyproject.toml`` (``[tool.pytest.ini_options]``), ``tox.ini``
(``[pytest]``), ``setup.cfg`` (``[tool:pytest]``)
(https://docs.pytest.org/en/stable/reference/customize.html#finding-the-rootdir). Each read
as init reads dependency files (inside the repository, a bounded regular text file); one
that cannot be read or parsed is passed over: this never stops init.
"""

from __future__ import annotations

import configparser
import re
import shlex
import tomllib
from pathlib import Path

from envforge.confine import EscapeError, resolved_inside
from envforge.errors import InputError
from envforge.inputfile import DEPENDENCY_LIMIT, read_input_text

_SECTIONS = (("pytest.ini", "pytest"), ("pyproject.toml", "tool.pytest.ini_options"),
             ("tox.ini", "pytest"), ("setup.cfg", "tool:pytest"))


def pytest_addopts(root: Path) -> tuple[str, tuple[str, ...]] | None:
    """(the file, its ``addopts`` words) of the configuration pytest would read; None when
    the repository has none."""
    for name, section in _SECTIONS:
        try:
            path = resolved_inside(root, name)
            if not path.is_file():
                continue
            text = read_input_text(path, DEPENDENCY_LIMIT, lenient=True)
            words = _addopts(text, name, section)
        except (EscapeError, InputError, OSError, ValueError, configparser.Error,
                tomllib.TOMLDecodeError):
            continue
        if words is not None:
            return name, words
    return None


def _addopts(text: str, name: str, section: str) -> tuple[str, ...] | None:
    """The section's addopts split as a shell splits them; None where the file lacks the
    section (pytest then looks at the next file)."""
    if name == "pyproject.toml":
        table = tomllib.loads(text).get("tool", {}).get("pytest", {}).get("ini_options")
        if not isinstance(table, dict):
            return None
        value = table.get("addopts", "")
        return tuple(value) if isinstance(value, list) else tuple(shlex.split(str(value)))
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    parser.read_string(text)
    if not parser.has_section(section):
        return None
    return tuple(shlex.split(parser.get(section, "addopts", fallback="")))


def option_line(root: Path, name: str, option: str) -> int:
    """The first line of ``name`` that passes ``option`` (1 when none is found)."""
    try:
        text = read_input_text(resolved_inside(root, name), DEPENDENCY_LIMIT, lenient=True)
    except (EscapeError, InputError, OSError):
        return 1
    pattern = re.compile(rf"(^|[\s\"'\[,]){re.escape(option)}($|[\s=\"',\]0-9])")
    for number, line in enumerate(text.splitlines(), start=1):
        if pattern.search(line):
            return number
    return 1


def passes(words: tuple[str, ...], option: str) -> bool:
    """Whether ``words`` pass ``option``: alone, ``--opt=value``, or a short option with its
    value attached (``-n2``, ``-nauto``)."""
    for word in words:
        if word == option or word.startswith(f"{option}="):
            return True
        if len(option) == 2 and word.startswith(option) and not word.startswith("--"):
            return True
    return False
