"""The kernels' references a lock records, kept in envforge's cache.

NumPy takes about a second of CPU to compute them (the conv and random kernels), beside
uv's runs on the same cores, and every lock of a spec computes the same ones: they are
decided by their inputs (the ``[verify]`` section and floatX), the code that computes them
(``envforge/expectations.py`` and, for a pack's kernel, the modules of the pack's folder
that defines it: Theano's kernels.py and mrg.py, by their bytes' hash) and NumPy's
version, which together name the cache entry. An entry that cannot be read is computed
again. Someone able to write envforge's cache could forge one; the same person could forge
the uv cache that the lock's PyPI hashes come from, so the entry adds no weaker link.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError

from envforge import __version__
from envforge.lockfile import KernelExpectation
from envforge.paths import envforge_dirs
from envforge.spec import VerifySection

if TYPE_CHECKING:
    from envforge.expectations import DeclaresKernels


def kernel_references(verify: VerifySection, float_x: str,
                      packs: Sequence[DeclaresKernels] = ()) -> tuple[KernelExpectation, ...]:
    """``expectations.kernel_expectations(verify, float_x, packs)``, from the cache when it
    has it."""
    from envforge.expectations import kernel_expectations

    path = _entry(verify, float_x, packs)
    try:
        rows = json.loads(path.read_text(encoding="utf-8"))
        return tuple(KernelExpectation.model_validate(row) for row in rows)
    except (OSError, ValueError, TypeError, ValidationError):
        pass
    kernels = kernel_expectations(verify, float_x, packs)
    text = json.dumps([k.model_dump(mode="json") for k in kernels])
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    except OSError:
        pass  # the cache is an optimisation: the next lock computes them again
    return kernels


def _entry(verify: VerifySection, float_x: str, packs: Sequence[DeclaresKernels]) -> Path:
    digest = hashlib.sha256()
    for part in (__version__, _numpy_version(), verify.model_dump_json(), float_x):
        digest.update(part.encode("utf-8") + b"\0")
    for source in _sources(verify, packs):
        digest.update(source.read_bytes())
    return envforge_dirs().cache / "kernels" / f"{digest.hexdigest()}.json"


def _sources(verify: VerifySection, packs: Sequence[DeclaresKernels]) -> list[Path]:
    """The files whose code computes the references: the core's module, and every module of
    the folder of each pack kernel the section names."""
    from envforge.expectations import CORE_KERNELS, kernel_named

    core = sys.modules[CORE_KERNELS["gemm"].reference.__module__].__file__
    found = [Path(str(core))]
    for name in verify.kernels:
        if name not in CORE_KERNELS:
            module = sys.modules[kernel_named(name, packs).reference.__module__].__file__
            found += sorted(Path(str(module)).parent.glob("*.py"))
    return list(dict.fromkeys(found))


def _numpy_version() -> str:
    try:
        return metadata.version("numpy")
    except metadata.PackageNotFoundError:
        return ""
