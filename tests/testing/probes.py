"""A probe's module loaded into the tests' own Python the way the environment's Python loads
it: envforge's probe runtime and the probe's own folder on sys.path while it is imported."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from envforge.probes import RUNTIME


def load_probe(path: Path) -> ModuleType:
    """The module of the probe file ``path`` (or one of its parts), imported afresh."""
    before = list(sys.path)
    sys.path[:0] = [str(RUNTIME.parent), str(path.parent)]
    try:
        spec = importlib.util.spec_from_file_location(f"{path.parent.name}_{path.stem}", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path[:] = before
