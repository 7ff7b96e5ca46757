"""pytest plugin for ``envforge verify --suite``; runs in the environment's own Python (3.7+).

The tests come from the locked sdist, the framework under test from the environment. This
finder serves every module of a ``tests`` package of the framework (``theano.tests``,
``theano.tensor.tests.test_blas``) from the sdist's copy in ENVFORGE_SUITE_SOURCE and leaves
every other import to the interpreter, so the tests exercise the installed package.
Standard library only; annotations stay strings (``__future__``), so 3.7 runs it.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from collections.abc import Sequence
from importlib.abc import MetaPathFinder
from importlib.machinery import ModuleSpec
from pathlib import Path
from types import ModuleType
from typing import Any

SOURCE = os.environ.get("ENVFORGE_SUITE_SOURCE", "")
PACKAGE = os.environ.get("ENVFORGE_SUITE_PACKAGE", "")
COMPILEDIR = os.environ.get("ENVFORGE_SUITE_COMPILEDIR", "")
# VARIABLE:key: the framework's setting for its compile folder (Theano's THEANO_FLAGS key).
COMPILEDIR_FLAG = os.environ.get("ENVFORGE_SUITE_COMPILEDIR_FLAG", "")
# The environment's own compile folder (verify's probe has just filled it): each worker's
# folder starts as its copy, so g++ builds only what the worker's tests add.
COMPILEDIR_SEED = os.environ.get("ENVFORGE_SUITE_COMPILEDIR_SEED", "")
WORKER = os.environ.get("PYTEST_XDIST_WORKER", "main")


class TestsFinder(MetaPathFinder):
    """Specs for ``PACKAGE.<...>.tests[.<...>]`` from the sdist; None for anything else."""

    def __init__(self, root: str, package: str) -> None:
        self.root = root
        self.package = package

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> ModuleSpec | None:
        parts = fullname.split(".")
        if parts[0] != self.package or "tests" not in parts[1:]:
            return None
        base = Path(self.root, *parts)
        init = base / "__init__.py"
        if init.is_file():
            return importlib.util.spec_from_file_location(
                fullname, str(init), submodule_search_locations=[str(base)])
        module = base.with_name(base.name + ".py")
        if module.is_file():
            return importlib.util.spec_from_file_location(fullname, str(module))
        return None


def seed_compiledir(seed: Path, own: Path) -> None:
    """``own`` made a copy of ``seed`` (never its ``lock_dir``), whole or not at all: Theano
    takes over a copied compile folder (it re-points each module's ``key.pkl``; docs in
    envforge/packs/theano/compilecache.py), so its first compile of the linker's modules,
    scan_perform and the probe's ops is not done again once per worker. A copy that fails
    leaves the folder to Theano to fill, as without a seed."""
    partial = own.with_name(f"{own.name}.partial-{os.getpid()}")
    try:
        shutil.copytree(str(seed), str(partial), ignore=shutil.ignore_patterns("lock_dir"))
        partial.rename(own)
    except OSError:
        shutil.rmtree(str(partial), ignore_errors=True)


if SOURCE and PACKAGE:
    sys.meta_path.insert(0, TestsFinder(SOURCE, PACKAGE))
if COMPILEDIR and ":" in COMPILEDIR_FLAG:
    # One compile cache per worker: Theano's cache lock makes a waiting worker sleep for
    # seconds at a time, so workers sharing one cache mostly wait for each other.
    # Theano reads THEANO_FLAGS at its first import, which comes after this plugin's.
    VARIABLE, _, KEY = COMPILEDIR_FLAG.partition(":")
    OWN = Path(COMPILEDIR, WORKER)
    if COMPILEDIR_SEED and Path(COMPILEDIR_SEED).is_dir() and not OWN.exists():
        seed_compiledir(Path(COMPILEDIR_SEED), OWN)
    flag = f"{KEY}=" + str(OWN)
    os.environ[VARIABLE] = ",".join(f for f in (os.environ.get(VARIABLE), flag) if f)


def pytest_report_header(config: Any) -> str:
    """Where the tests and the package under test come from, at the top of pytest's output."""
    module = sys.modules.get(PACKAGE)
    where = getattr(module, "__file__", "not imported yet")
    return f"envforge suite: tests from {SOURCE}, {PACKAGE} from {where}"
