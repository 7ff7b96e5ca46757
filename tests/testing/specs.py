"""The smallest spec a PyPI test needs: a Python 3.7.16 venv for linux-64 and its [pypi] table."""

from __future__ import annotations

_HEADER = """\
[project]
name = "{name}"
platforms = ["linux-64"]

[python]
version = "3.7.16"

[environment]
kind = "venv"

[pypi]
"""


def venv_spec_text(name: str, pypi: str) -> str:
    """The spec's text; ``pypi`` is the body of its [pypi] table, TOML lines as written."""
    return _HEADER.format(name=name) + pypi
