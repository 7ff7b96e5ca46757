"""lockcheck: a group resolved for another Python than the environment's is refused.

Found on the GPU lock after a textual merge of two locks: its suite group had been resolved
for Python 3.11 in a Python 3.9 environment, and every file name and hash was well formed.
The real theano-cpu lock is edited as such a merge would; each edit must be refused naming
the line and key, and the untouched lock must pass.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from envforge.errors import SpecError
from envforge.lockcheck import check_lock
from envforge.lockfile import load_lock
from envforge.spec import load_spec

REPO = Path(__file__).resolve().parent.parent
TEXT = (REPO / "locks" / "theano-cpu.lock").read_text(encoding="utf-8")
SPEC = load_spec(REPO / "specs" / "theano-cpu.toml")
NUMPY = "numpy-1.19.5-cp37-cp37m-manylinux2010_x86_64.whl"
PLATFORM = 'python = "3.7"\n\n[[platforms.linux-64.deb]]'


def _check(tmp_path: Path, text: str) -> None:
    path = tmp_path / "theano-cpu.lock"
    path.write_text(text, encoding="utf-8")
    check_lock(SPEC, load_lock(path), path)


def test_the_real_lock_passes(tmp_path: Path) -> None:
    _check(tmp_path, TEXT)


@pytest.mark.parametrize(("old", "new", "key", "says"), [
    ("[platforms.linux-64.suite]\n", '[platforms.linux-64.suite]\npython = "3.11.9"\n',
     "platforms.linux-64.suite.python", "test group was resolved for Python 3.11.9"),
    (PLATFORM, 'python = "3.7"\npypi_python = "3.11.9"\n\n[[platforms.linux-64.deb]]',
     "platforms.linux-64.pypi_python", "PyPI was resolved for Python 3.11.9"),
    (f'filename = "{NUMPY}"', 'filename = "numpy-1.19.5-cp311-cp311-manylinux2010_x86_64.whl"',
     "platforms.linux-64.pypi.", "cp311-cp311-manylinux2010_x86_64"),
    ('filename = "exceptiongroup-1.3.2-py3-none-any.whl"',
     'filename = "exceptiongroup-1.3.2-cp311-none-any.whl"',
     "platforms.linux-64.suite.runner.0.filename", "Python 3.7 on linux-64 cannot install"),
])
def test_a_group_for_another_python_is_refused(tmp_path: Path, old: str, new: str, key: str,
                                               says: str) -> None:
    assert old in TEXT
    text = TEXT.replace(old, new, 1)
    with pytest.raises(SpecError) as caught:
        _check(tmp_path, text)
    error = caught.value
    assert error.key is not None and error.key.startswith(key), error
    assert says in str(error)
    assert error.line is not None
    assert text.splitlines()[error.line - 1].split("=")[0].strip() in (
        key.rsplit(".", 1)[-1], "filename"), (error.line, error)


def test_a_suite_group_recorded_for_the_locked_python_passes(tmp_path: Path) -> None:
    """A lock of this envforge records the group's Python; the same Python passes."""
    _check(tmp_path, TEXT.replace(PLATFORM, 'python = "3.7"\npypi_python = "3.7.17"\n\n'
                                  '[[platforms.linux-64.deb]]', 1)
           .replace("[platforms.linux-64.suite]\n",
                    '[platforms.linux-64.suite]\npython = "3.7.17"\n', 1))
