"""init's trial compile: a pure wheel whose code the target Python does not parse, by that
Python itself (this host's 3.7, as lock records it)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from envforge.app.trialcompile import compile_failures
from envforge.errors import StepError
from envforge.host.interpreters import find_interpreter

ASYNC_PARAMETER = "def expect(self, pattern, timeout=-1, async=False):\n    pass\n"


def python37() -> Path:
    try:
        return find_interpreter("3.7").executable
    except StepError:
        pytest.skip("no Python 3.7 on this host: the compile is the target Python's own")


def wheel(path: Path, files: dict[str, str]) -> str:
    with zipfile.ZipFile(path, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return str(path)


def test_a_module_python_37_does_not_parse_is_named_with_its_line(tmp_path: Path) -> None:
    """pexpect 4.2.1's spawnbase.py: ``async`` is a keyword since Python 3.7."""
    broken = wheel(tmp_path / "p-1.0-py2.py3-none-any.whl",
                   {"p/__init__.py": "from .spawnbase import *\n",
                    "p/spawnbase.py": "import os\n\n" + ASYNC_PARAMETER})
    rows = compile_failures(python37(), [broken])
    assert [(r.wheel, r.member, r.line) for r in rows] == [(broken, "p/spawnbase.py", 3)]


def test_tests_examples_py2_modules_and_data_are_not_read(tmp_path: Path) -> None:
    """What an install never imports is not held against the release."""
    quiet = wheel(tmp_path / "q-1.0-py2.py3-none-any.whl", {
        "q/__init__.py": "x = 1\n", "q/tests/test_old.py": "print 'py2'\n",
        "q/examples/demo.py": ASYNC_PARAMETER, "q/_compat_py2.py": "exec 'x'\n",
        "q-1.0.data/scripts/tool.py": "print 'py2'\n"})
    assert compile_failures(python37(), [quiet]) == []
