"""The kernels' references a lock records, kept in envforge's cache.

NumPy takes about half a second of CPU to compute them (the conv and random kernels), beside
uv's runs on the same cores, and every lock of a spec computes the same ones: they are
decided by their inputs (the ``[verify]`` section and floatX), the code that computes them
(``envforge/expectations/`` and, for a pack's kernel, the modules of the pack's folder
that defines it: Theano's kernels.py and mrg.py, by their bytes' hash) and NumPy's
version, which together name the cache entry. An entry that cannot be read is computed
again. Someone able to write envforge's cache could forge one; the same person could forge
the uv cache that the lock's PyPI hashes come from, so the entry adds no weaker link.

A lock computes a missing entry in a child process (``python -m envforge.app.references``)
beside its resolvers, not in a thread: a lock that fails kills the child and exits at once,
where the interpreter would wait for a thread inside NumPy (seconds for a GPU spec's GEMM).
The child finds a pack's kernels among the installed packs, by name; a pack it cannot find
there (one handed in by a test) leaves no entry, and ``get`` computes it in process.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError

from envforge import __version__
from envforge.background import in_background
from envforge.lockfile import KernelExpectation
from envforge.paths import envforge_dirs
from envforge.spec import VerifySection

if TYPE_CHECKING:
    from envforge.expectations import DeclaresKernels


class CancelledError(Exception):
    """The lock these references were for has failed: nothing waits for them any more."""


class BackgroundReferences:
    """The kernels' references of one lock, each missing cache entry computed by a child
    process started now; ``get`` waits for it and reads the entry, ``cancel`` kills them."""

    def __init__(self) -> None:
        self._jobs: dict[tuple[str, str], Future[None]] = {}
        self._children: set[subprocess.Popen[bytes]] = set()
        self._lock = threading.Lock()
        self._cancelled = False

    def start(self, verify: VerifySection, float_x: str,
              packs: Sequence[DeclaresKernels] = ()) -> None:
        key = (verify.model_dump_json(), float_x)
        with self._lock:
            if (key in self._jobs or self._cancelled
                    or _read(_entry(verify, float_x, packs)) is not None):
                return
            self._jobs[key] = in_background("kernels", self._compute, verify, float_x,
                                            [pack.name for pack in packs])

    def _compute(self, verify: VerifySection, float_x: str, packs: list[str]) -> None:
        request = json.dumps({"verify": verify.model_dump(mode="json"), "float_x": float_x,
                              "packs": packs})
        with self._lock:
            if self._cancelled:
                return
            child = subprocess.Popen([sys.executable, "-m", "envforge.app.references"],
                                     stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, env=child_environ(os.environ))
            self._children.add(child)
        try:
            child.communicate(request.encode("utf-8"))
        finally:
            with self._lock:
                self._children.discard(child)

    def get(self, verify: VerifySection, float_x: str,
            packs: Sequence[DeclaresKernels] = ()) -> tuple[KernelExpectation, ...]:
        """The references, from the entry the child wrote; computed here where it wrote none
        (so its error, such as no NumPy, is raised here)."""
        job = self._jobs.get((verify.model_dump_json(), float_x))
        if job is not None:
            with contextlib.suppress(OSError):  # no child could start: computed below
                job.result()
        if self._cancelled:
            raise CancelledError
        return kernel_references(verify, float_x, packs)

    def cancel(self) -> None:
        """Kill the children and let every ``get`` raise ``CancelledError``: the lock failed."""
        with self._lock:
            self._cancelled = True
            for child in self._children:
                with contextlib.suppress(OSError):
                    child.kill()


# NumPy's BLAS threads, one: the child runs beside uv's resolvers, and a second thread
# spinning for a 256-wide GEMM cost a cold theano-cpu lock 0.13 s of CPU (0.37 -> 0.24 s)
# for nothing (a GPU spec's 4096-wide one takes a second or two, hidden behind its resolution)
_ONE_THREAD = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def child_environ(environ: Mapping[str, str]) -> dict[str, str]:
    """The child's environment: the caller's, one BLAS thread unless the caller set one."""
    return {**{name: "1" for name in _ONE_THREAD}, **environ}


def _read(path: Path) -> tuple[KernelExpectation, ...] | None:
    try:
        rows = json.loads(path.read_text(encoding="utf-8"))
        return tuple(KernelExpectation.model_validate(row) for row in rows)
    except (OSError, ValueError, TypeError, ValidationError):
        return None


def kernel_references(verify: VerifySection, float_x: str,
                      packs: Sequence[DeclaresKernels] = ()) -> tuple[KernelExpectation, ...]:
    """``expectations.kernel_expectations(verify, float_x, packs)``, from the cache when it
    has it."""
    from envforge.expectations import kernel_expectations

    path = _entry(verify, float_x, packs)
    found = _read(path)
    if found is not None:
        return found
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
    """The files whose code computes the references: every module of the core's package
    (envforge/expectations/), and of the folder of each pack kernel the section names."""
    from envforge.expectations import CORE_KERNELS, kernel_named

    core = sys.modules[CORE_KERNELS["gemm"].reference.__module__].__file__
    found = sorted(Path(str(core)).parent.glob("*.py"))
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


def _main() -> None:
    """The child of ``BackgroundReferences``: one request on stdin, the entry written. At
    the usual priority: the lock waits for it, and on a loaded machine a lower one left it
    starved past uv's runs (a cold theano-cpu lock's last 0.3-1.1 s at load 9-11)."""
    from envforge.app.packs import installed_packs

    request = json.loads(sys.stdin.read())
    packs = installed_packs().active(request["packs"])
    kernel_references(VerifySection.model_validate(request["verify"]), request["float_x"],
                      packs)


if __name__ == "__main__":
    _main()
