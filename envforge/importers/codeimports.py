"""A repository with no dependency file: its requirements drafted from what its code imports.

Much of the era's research code ships none, only a README line (carpedm20/DCGAN-tensorflow:
"Tensorflow 0.12.1"), which ``readme.py`` reads first. Each module its code imports maps to
its distribution by knowledge (legacy_names.toml's [[import_name]]), unpinned where the
README says nothing of it: the day init resolves as of (the last commit's) picks the era's
release. A module that is neither the repository's
own, the standard library's, nor known is reported, never guessed: a module's name is not
its distribution's (``cv2`` is opencv-python, ``caffe`` is on no index).
"""

from __future__ import annotations

import sys
from pathlib import PurePosixPath

from packaging.version import Version

from envforge.importers import Found, Imported, Skipped
from envforge.importers.legacy_names import legacy_names
from envforge.importers.pycode import CodeScan

FROM_IMPORTS = "its code's imports (no dependency file)"
UNPINNED = "nothing pinned it (no dependency file): as_of picks the era's release"
UNKNOWN = ("imported, but neither the repository's own module, the standard library's, nor a "
           "distribution envforge knows by that name: not guessed, add its requirement by hand")


def standard_library(python: str) -> frozenset[str]:
    """The standard library's top-level modules for Python ``python`` (``3.7``) as far as
    this interpreter and the knowledge tell: this interpreter's, those a later Python removed
    that ``python`` still had, and Python 2's (the era's code imports ``cPickle`` beside
    ``pickle``). Modules added after ``python`` count too: they are no distribution either."""
    wanted = Version(python)
    names = set(sys.stdlib_module_names)
    for row in legacy_names().stdlib:
        if row.last.startswith("2.") or Version(row.last) >= wanted:
            names.update(row.names)
    return frozenset(names)


def own_modules(code: CodeScan) -> frozenset[str]:
    """The names the repository's own files answer: its top-level modules, the stem of
    each ``.py`` file (Python 2's implicit relative import of a sibling, ``import layers``
    inside a package; a folder a script puts on ``sys.path``), and each top-level folder of
    .py files without ``__init__.py`` (a namespace package, PEP 420) but one named as a
    distribution's module (a ``tensorflow/`` folder of scripts beside a ``pytorch/`` one)."""
    known = {row.module for row in legacy_names().import_name}
    return code.local | {PurePosixPath(name).stem for name in code.named} | {
        name for name in code.namespaces if name not in known}


def from_imports(code: CodeScan, python: str) -> Imported:
    """The requirements the code's absolute imports call for (each from the first file:line
    that imports its module, unpinned, one per distribution), and each unknown module as not
    imported with the line that imports it."""
    known = {row.module: row for row in legacy_names().import_name}
    skip = standard_library(python) | own_modules(code) | {"__future__"}
    out = Imported()
    held: set[str] = set()
    for module, where in code.imports.items():
        if module in skip:
            continue
        row = known.get(module)
        if row is None:
            out.skipped.append(Skipped(module, where, UNKNOWN))
        elif row.requirement not in held:
            note = f"that line imports {module}; {UNPINNED}"
            out.requirements.append(Found(row.requirement, where, note, True))
            held.add(row.requirement)
    return out
