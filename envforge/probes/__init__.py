"""The runtime every pack's probe imports (``proberuntime.py``, run by the environment's
Python), and the command that runs a probe through it: ``python proberuntime.py PROBE``
puts the probe's folder and the runtime's on sys.path itself, so neither PYTHONPATH (an
embeddable Python's ``._pth`` ignores it) nor the current folder decides what it imports."""

from __future__ import annotations

import os
from pathlib import Path

RUNTIME = Path(__file__).with_name("proberuntime.py")


def probe_command(python: str | os.PathLike[str], probe: Path) -> list[str]:
    """The argv that runs ``probe`` with ``python``: the request on stdin, the report on
    stdout."""
    return [os.fspath(python), str(RUNTIME), str(probe)]
