"""``verify --suite``'s edge: a runner folder apart from the environment, the tests from the
locked sdist, and pytest run by the environment's Python under a time bound.

The folder lives in envforge's cache, keyed by the hashes of everything in it, and is
built aside then renamed into place, so a run sees a whole folder or none. The
environment itself is not written to: the runner reaches the interpreter through
PYTHONPATH for the run only, and Theano compiles into the suite's own cache.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

from packaging.utils import canonicalize_name

from envforge.errors import ArtifactError, InputError
from envforge.host.fetch import FileRef, Lookup, obtain
from envforge.host.unarchive import extract_archive
from envforge.lockfile import LockedPypiFile, SuiteLock
from envforge.platforms import Os, host_platform


class SuiteSubset(Protocol):
    """A pack's curated selection of its tests (Theano's: packs/theano/theano_suite.toml)."""

    @property
    def name(self) -> str: ...

    @property
    def device(self) -> Literal["cpu", "cuda"]: ...

    @property
    def time_limit_s(self) -> int: ...

    @property
    def tests(self) -> tuple[str, ...]: ...

    @property
    def select(self) -> str: ...

    @property
    def deselect(self) -> tuple[str, ...]: ...

    @property
    def dist(self) -> Literal["loadfile", "loadscope"]: ...


PLUGIN = Path(__file__).resolve().parent / "plugin.py"
PLUGIN_MODULE = "envforge_suite_plugin"
# After the bound, pytest gets SIGINT (it still writes its JUnit XML), then this long.
_GRACE_S = 30.0
_PYTEST_INI = """\
# Written by envforge verify --suite: the run's settings, not the sdist's.
[pytest]
junit_family = xunit1
markers =
    slow: a test the framework marks as slow
"""


@dataclass(frozen=True)
class SuiteFolder:
    root: Path
    runner: Path  # pytest, its dependencies and the plugin: PYTHONPATH for the run only
    source: Path  # the unpacked sdist: the tests' root directory


@dataclass(frozen=True)
class SuiteRun:
    """What one pytest run left: its JUnit XML (if any), how it ended and how long it took."""

    junit: str | None
    returncode: int | None  # None: stopped at the time bound
    seconds: float
    output_tail: str


def find_tests_sdist(suite: SuiteLock,
                     pypi: Sequence[LockedPypiFile]) -> LockedPypiFile | None:
    """The locked sdist the suite's tests come from."""
    return next((f for f in pypi
                 if canonicalize_name(f.name) == suite.distribution and f.kind == "sdist"), None)


def tests_sdist(suite: SuiteLock, pypi: Sequence[LockedPypiFile]) -> LockedPypiFile:
    found = find_tests_sdist(suite, pypi)
    if found is not None:
        return found
    raise InputError(f"the lock has no sdist of {suite.distribution}, whose tests the suite "
                     "runs: re-run `envforge lock`")


def prepare_folder(suite: SuiteLock, pypi: Sequence[LockedPypiFile], *, python: Path,
                   cache: Path, bundle: Lookup | None = None, offline: bool = False) -> SuiteFolder:
    """The runner installed and the tests unpacked, every file checked against the lock;
    ``bundle`` is a bundle's lookup (``bundle.sources.bundle_lookup``)."""
    sdist = tests_sdist(suite, pypi)
    plugin = PLUGIN.read_bytes()
    key = hashlib.sha256("\n".join([sdist.sha256, *(f.sha256 for f in suite.runner),
                                    hashlib.sha256(plugin).hexdigest(), _PYTEST_INI])
                         .encode()).hexdigest()[:16]
    root = cache / "suite" / key
    folder = SuiteFolder(root, root / "runner", root / "source")
    if (root / ".complete").is_file():
        return folder
    not_wheels = [f.filename for f in suite.runner if f.kind != "wheel"]
    if not_wheels:
        raise ArtifactError(f"the suite's runner must be wheels; the lock has sdists: "
                            f"{', '.join(not_wheels)}")

    def fetch(f: LockedPypiFile) -> Path:
        return obtain(FileRef(f.url, f.sha256, f.filename, f.size), cache=cache, bundle=bundle,
                      offline=offline)

    # here, not at the top: lock imports this module (a pack's suite rows) and needs no
    # installer (a tenth of lock's imports)
    from envforge.host.wheelinstall import WheelToInstall, install_wheels_into, target_scheme

    archive = fetch(sdist)
    wheels = [WheelToInstall(fetch(f), f.sha256) for f in suite.runner]
    work = root.with_name(f".{key}.{os.getpid()}.part")
    shutil.rmtree(work, ignore_errors=True)
    install_wheels_into(wheels, work / "runner", target_scheme(python).version)
    (work / "runner" / f"{PLUGIN_MODULE}.py").write_bytes(plugin)
    extract_archive(archive, work / "unpacked")
    tops = [p for p in (work / "unpacked").iterdir() if p.is_dir()]
    if len(tops) != 1:
        raise ArtifactError(f"{sdist.filename}: expected one top folder, found {len(tops)}")
    tops[0].rename(work / "source")
    (work / "pytest.ini").write_text(_PYTEST_INI, encoding="utf-8")
    (work / ".complete").touch()
    try:
        work.rename(root)
    except OSError:  # another run finished the same folder first
        shutil.rmtree(work, ignore_errors=True)
    return folder


def pytest_args(folder: SuiteFolder, subset: SuiteSubset, *, junit: Path,
                workers: int) -> list[str]:
    """pytest's command line: the subset's tests from the sdist, against the installed package
    (``--import-mode=append`` keeps the environment's package ahead of the sdist's copy)."""
    args = ["-m", "pytest", "-p", PLUGIN_MODULE, "-p", "no:cacheprovider",
            "-c", str(folder.root / "pytest.ini"), "--rootdir", str(folder.source),
            "--import-mode=append", "--continue-on-collection-errors", "-q", "-rN",
            "--junitxml", str(junit)]
    if workers > 1:
        # Tests that compile the same ops on one worker (a module, or a class for the GPU
        # subset): each worker has its own compile cache.
        args += ["-n", str(workers), "--dist", subset.dist]
    if subset.select:
        args += ["-m", subset.select]
    for nodeid in subset.deselect:
        args += ["--deselect", nodeid]
    args += [str(folder.source / nodeid) for nodeid in subset.tests]
    return args


def suite_environ(base: Mapping[str, str], folder: SuiteFolder, *, package: str,
                  compiledir: Path, settings: tuple[str, Mapping[str, str]] | None = None,
                  compiledir_flag: tuple[str, str] | None = None,
                  compiledir_seed: Path | None = None) -> dict[str, str]:
    """The environment's variables plus the runner; nothing of the caller's pytest setup.
    ``compiledir_flag`` (the suite's ``FrameworkSuite.compiledir_flag``) gives each worker
    its own compile folder under ``compiledir``, made as a copy of ``compiledir_seed`` (the
    environment's own) where that is a folder and the worker's does not exist yet.
    ``settings`` (a subset's: the framework's variable, e.g. THEANO_FLAGS, and its pairs)
    come after the environment's own value of that variable, comma-joined: they win."""
    env = {k: v for k, v in base.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "PYTEST_ADDOPTS", "PYTEST_PLUGINS")}
    env.update(PYTHONPATH=str(folder.runner), ENVFORGE_SUITE_SOURCE=str(folder.source),
               ENVFORGE_SUITE_PACKAGE=package, ENVFORGE_SUITE_COMPILEDIR=str(compiledir),
               PYTHONDONTWRITEBYTECODE="1")
    if compiledir_flag is not None:
        env["ENVFORGE_SUITE_COMPILEDIR_FLAG"] = ":".join(compiledir_flag)
        if compiledir_seed is not None:
            env["ENVFORGE_SUITE_COMPILEDIR_SEED"] = str(compiledir_seed)
    if settings is not None:
        variable, pairs = settings
        flags = [env.get(variable, ""), *(f"{k}={v}" for k, v in pairs.items())]
        if any(flags[1:]):
            env[variable] = ",".join(f for f in flags if f)
    return env


def run_pytest(python: Path, args: Sequence[str], *, env: Mapping[str, str], cwd: Path,
               junit: Path, timeout: float) -> SuiteRun:
    """Run pytest in its own process group; past ``timeout`` the whole group is interrupted,
    then killed, so no xdist worker outlives the run."""
    cwd.mkdir(parents=True, exist_ok=True)
    junit.unlink(missing_ok=True)
    log = cwd / "pytest.log"
    started = time.perf_counter()
    with log.open("wb") as out:
        child = subprocess.Popen([str(python), *args], cwd=cwd, env=dict(env), stdout=out,
                                 stderr=subprocess.STDOUT,
                                 start_new_session=host_platform().os is not Os.WINDOWS)
        returncode: int | None
        try:
            returncode = child.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            returncode = None
            _stop(child)
    seconds = time.perf_counter() - started
    tail = log.read_text(encoding="utf-8", errors="replace")[-4000:]
    text = junit.read_text(encoding="utf-8") if junit.is_file() else None
    return SuiteRun(text, returncode, seconds, tail)


def _stop(child: subprocess.Popen[bytes]) -> None:
    if host_platform().os is Os.WINDOWS:  # no process groups: the child alone is stopped
        child.kill()
        child.wait()
        return
    try:
        os.killpg(child.pid, signal.SIGINT)
        child.wait(timeout=_GRACE_S)
    except subprocess.TimeoutExpired:
        pass
    except ProcessLookupError:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(child.pid, signal.SIGKILL)
    child.wait()


def workers_for(cpus: int | None) -> int:
    """One pytest worker per core: Theano's tests are compile-bound, one process each."""
    return max(1, cpus or 1)
