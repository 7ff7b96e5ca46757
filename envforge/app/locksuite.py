"""``verify --suite``'s runner in the lock: resolved early in a thread where the framework is
pinned exactly, kept or resolved again under the environment's pins, and whether an old lock
lacks one."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING

from envforge.background import in_background
from envforge.errors import ResolveError
from envforge.lockfile import LockedPypiFile, PlatformLock, SuiteLock
from envforge.packapi import Registry
from envforge.packs import FrameworkPack
from envforge.spec import PlatformSpec

if TYPE_CHECKING:
    # requirements, the Python resolved for, the resolution
    Runner = tuple[Sequence[str], str, tuple[LockedPypiFile, ...]]


def runner_in_background(pspec: PlatformSpec, registry: Registry[FrameworkPack], python: str,
                         interpreter: str | None = None,
                         uv_cache: Path | None = None,
                         preferences: Sequence[LockedPypiFile] = (),
                         ) -> Future[Runner] | None:
    """The suite's runner for a framework the spec pins exactly, resolved now in a thread,
    without the environment's pins (not known yet); ``lock_suite`` keeps it only where every
    package it shares with the environment has the environment's version: the pins, met
    already, could not have changed it."""
    from envforge.suite.framework import pinned_suite

    found = pinned_suite(pspec.pypi.packages, registry)
    if found is None:
        return None
    from envforge.resolve.pypi import resolve_pypi

    row = found[0].runner(found[1])
    if row is None:
        return None
    return in_background("runner", lambda: (row.requirements, python, resolve_pypi(
        row.requirements, platform=pspec.platform, python=python,
        index=pspec.pypi.index, exclude=pspec.pypi.provided_elsewhere,
        interpreter=interpreter, uv_cache=uv_cache, preferences=preferences)))


def lock_suite(pspec: PlatformSpec, registry: Registry[FrameworkPack],
               pypi: Sequence[LockedPypiFile], versions: Mapping[str, str], *,
               python: str | None = None, early: Future[Runner] | None = None,
               interpreter: str | None = None, uv_cache: Path | None = None,
               preferences: Sequence[LockedPypiFile] = (),
               ) -> SuiteLock | None:
    """``verify --suite``'s runner, resolved under the environment's own pins so that a
    shared dependency keeps the environment's version (and is left to it), for the Python
    PyPI was resolved for (recorded: lockcheck refuses a group of another); None where the
    knowledge base knows no suite for the release (of the framework ``versions`` holds) or
    its sdist is not locked."""
    from packaging.utils import canonicalize_name

    from envforge.resolve.pypi import resolve_pypi
    from envforge.suite.framework import framework_suite

    found = framework_suite(versions, registry)
    row = found[0].runner(found[1]) if found is not None else None
    if row is None:
        return None
    distribution = canonicalize_name(row.distribution)
    if not any(canonicalize_name(f.name) == distribution and f.kind == "sdist" for f in pypi):
        return None
    target = python or pspec.python.version
    if early is not None:
        try:
            requirements, for_python, runner = early.result()
        except ResolveError:
            requirements, for_python, runner = (), "", ()  # resolved again below
        pinned = {canonicalize_name(f.name): f.version for f in pypi}
        if (requirements, for_python) == (row.requirements, target) and runner and all(
                pinned.get(canonicalize_name(f.name), f.version) == f.version for f in runner):
            # the pins hold already: resolved under them it is the same, less what it
            # shares with the environment (left to the environment's own files)
            return SuiteLock(distribution=distribution, python=target, runner=tuple(
                f for f in runner if canonicalize_name(f.name) not in pinned))
    own = runner_requirements(row.requirements, pypi)

    def resolve(requirements: Sequence[str]) -> tuple[LockedPypiFile, ...]:
        if not requirements:
            return ()
        return resolve_pypi(requirements, platform=pspec.platform, python=target,
                            index=pspec.pypi.index,
                            exclude=[*(f.name for f in pypi), *pspec.pypi.provided_elsewhere],
                            constraints=[f"{f.name}=={f.version}" for f in pypi],
                            interpreter=interpreter, uv_cache=uv_cache,
                            preferences=preferences)

    try:
        runner = resolve(own)
    except ResolveError:
        # the runner's pins need a newer test runner than the environment's own (pytest-xdist
        # 3.5.0 wants pytest >= 6.2): the releases that fit the environment's pins instead
        runner = resolve([_name(requirement) for requirement in own])
    return SuiteLock(distribution=distribution, runner=runner, python=target)


def runner_requirements(requirements: Sequence[str],
                        pypi: Sequence[LockedPypiFile]) -> tuple[str, ...]:
    """The runner's requirements less the distributions the environment holds: a test
    runner the project pins itself (an old repository's pytest) is the one its suite runs
    with, and the runner's own pin of it beside the environment's could never resolve."""
    from packaging.utils import canonicalize_name

    held = {canonicalize_name(f.name) for f in pypi}
    return tuple(r for r in requirements if canonicalize_name(_name(r)) not in held)


def _name(requirement: str) -> str:
    from packaging.requirements import Requirement

    return Requirement(requirement).name


def suite_missing(plock: PlatformLock, registry: Registry[FrameworkPack]) -> bool:
    """A lock written before the knowledge base knew its release's test suite: re-resolve it
    rather than reuse it, so ``verify --suite`` finds its runner locked."""
    from packaging.utils import canonicalize_name

    from envforge.suite.framework import framework_suite

    found = framework_suite(plock.expect.versions, registry)
    row = found[0].runner(found[1]) if found is not None else None
    return plock.suite is None and row is not None and any(
        canonicalize_name(f.name) == canonicalize_name(row.distribution) and f.kind == "sdist"
        for f in plock.pypi)
