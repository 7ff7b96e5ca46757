"""Locking a spec: compatibility check -> resolvers -> lockfile.

Compatibility is checked from the spec alone first, so a known-bad stack fails offline and
fast. An unchanged spec reuses its lock without touching the network. Whether a lock is
still its spec's is judged in ``lockcheck`` (pure, below this layer: bundle needs it too).
"""

from __future__ import annotations

import threading
from collections.abc import Collection, Mapping, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import TYPE_CHECKING

from envforge import __version__
from envforge.background import in_background, yielding
from envforge.errors import CompatibilityError, InputError, ResolveError
from envforge.lockfile import (
    Expectations,
    LockedCondaPackage,
    LockedDeb,
    LockedPypiFile,
    Lockfile,
    LockMeta,
    PlatformLock,
    SuiteLock,
)
from envforge.packapi import Registry
from envforge.packs import FrameworkPack
from envforge.platforms import PLATFORMS
from envforge.spec import Platform, PlatformSpec, Spec

if TYPE_CHECKING:
    from envforge.app.references import BackgroundReferences
    from envforge.host.interpreters import Interpreter
    from envforge.resolve.deb.selection import DebResolution
    from envforge.resolve.pypi import BuildControls

    # requirements, the Python resolved for, the resolution
    Runner = tuple[Sequence[str], str, tuple[LockedPypiFile, ...]]


def lock_platform(pspec: PlatformSpec, registry: Registry[FrameworkPack],
                  notes: list[str] | None = None,
                  previous: PlatformLock | None = None,
                  references: BackgroundReferences | None = None) -> PlatformLock:
    """Resolve one platform: PyPI with uv, conda with rattler, Debian from its index. The
    ``previous`` lock's PyPI and conda versions are preferred where the spec still allows
    them (a Debian suite's index holds one version of each package: nothing to prefer).
    The kernels' references come from ``references`` where given (computed beside)."""
    from envforge.lockplan import (
        apply_inputs,
        build_record,
        locked_artifacts,
        stack_versions,
        undeclared_expected,
        undeclared_missing,
    )

    pypi: tuple[LockedPypiFile, ...] = ()
    conda: tuple[LockedCondaPackage, ...] = ()
    deb: tuple[LockedDeb, ...] = ()
    pypi_python: str | None = None
    if pspec.environment.kind == "conda":
        from envforge.resolve.conda import solve_conda

        conda = solve_conda(pspec.conda.packages, pspec.environment.channels, pspec.platform,
                            python=pspec.python.version,
                            cuda=pspec.cuda.number if pspec.cuda else None,
                            preferences=previous.conda if previous is not None else ())
    debs = None
    if pspec.debian is not None and PLATFORMS[pspec.platform].debian_arch is not None:
        from envforge.lockplan import debian_python
        from envforge.resolve.deb.mirror import resolve_debs

        if debian_python(pspec.debian.packages):  # PyPI resolves for Debian's Python
            deb = _debs(resolve_debs(pspec.debian, pspec.platform), pspec, notes)
        else:
            debs = in_background("deb", yielding(resolve_debs), pspec.debian,
                                 pspec.platform)  # beside uv's run
    early = None
    if pspec.pypi.packages:  # after conda and Debian: their Python is the one PyPI's must fit
        from envforge.resolve.pypi import resolve_pypi
        from envforge.resolve.pyversion import resolver_python

        target = resolver_python(pspec, conda=conda, deb=deb, find=_host_python)
        pypi_python = target.version
        builder = _host_interpreter(_minor(target.version))
        uv_cache = own_uv_cache(pspec.platform)
        if notes is not None and target.version != pspec.python.version:
            notes.append(f"{pspec.platform}: PyPI resolved for Python {target.version} "
                         f"({target.origin})")
        # the suite's runner, beside the main resolution; checked against it after
        early = runner_in_background(pspec, registry, target.version, builder, uv_cache,
                                     preferences=_runner_files(previous))

        def resolve(requirements: Sequence[str]) -> tuple[LockedPypiFile, ...]:
            return resolve_pypi(requirements, platform=pspec.platform, python=target.version,
                                index=pspec.pypi.index, exclude=pspec.pypi.provided_elsewhere,
                                as_of=pspec.pypi.as_of, find_links=pspec.pypi.find_links,
                                controls=_controls(pspec, registry),
                                extra_indexes=pspec.pypi.extra_indexes, interpreter=builder,
                                uv_cache=uv_cache,
                                preferences=previous.pypi if previous is not None else ())

        # what a framework imports undeclared joins the lock, resolved with the rest: known
        # beforehand for an exact pin, else found in the result and resolved again
        added = undeclared_expected(pspec.pypi.packages, registry,
                                    pspec.pypi.provided_elsewhere)
        pypi = resolve([*pspec.pypi.packages, *(row.requirement for row in added)])
        missing = undeclared_missing(pypi, registry, pspec.pypi.provided_elsewhere)
        if missing:
            added = (*added, *missing)
            pypi = resolve([*pspec.pypi.packages, *(row.requirement for row in added)])
        if notes is not None:
            notes.extend(f"{pspec.platform}: added {row.requirement}: {row.imported_at} "
                         f"imports {row.module} without declaring it" for row in added)
    if debs is not None:
        deb = _debs(debs.result(), pspec, notes)
    versions = stack_versions(pspec, registry, pypi=pypi, conda=conda, deb=deb)
    suite = lock_suite(pspec, registry, pypi, versions, python=pypi_python, early=early,
                       interpreter=_host_interpreter(_minor(pypi_python)) if pypi_python
                       else None, uv_cache=own_uv_cache(pspec.platform),
                       preferences=_runner_files(previous))
    return PlatformLock(
        python=versions.get("python", pspec.python.version),
        environment=pspec.environment.kind,
        pypi=pypi, conda=conda, deb=deb,
        artifacts=locked_artifacts(pspec, registry),
        expect=_expectations(pspec, registry, versions, references),
        suite=suite,
        pypi_python=pypi_python,
        build=build_record(pspec, pypi),
        apply=apply_inputs(pspec),
    )


def _debs(resolution: DebResolution, pspec: PlatformSpec,
          notes: list[str] | None) -> tuple[LockedDeb, ...]:
    if notes is not None:  # Depends outside the spec: assumed on the host, worth a look
        notes.extend(f"{pspec.platform}: Debian: {w}" for w in resolution.warnings)
    return resolution.records


def _runner_files(previous: PlatformLock | None) -> tuple[LockedPypiFile, ...]:
    return previous.suite.runner if previous is not None and previous.suite is not None else ()


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
    runner = resolve_pypi(row.requirements, platform=pspec.platform, python=target,
                          index=pspec.pypi.index,
                          exclude=[*(f.name for f in pypi), *pspec.pypi.provided_elsewhere],
                          constraints=[f"{f.name}=={f.version}" for f in pypi],
                          interpreter=interpreter, uv_cache=uv_cache, preferences=preferences)
    return SuiteLock(distribution=distribution, runner=runner, python=target)


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


def _controls(pspec: PlatformSpec, registry: Registry[FrameworkPack]) -> BuildControls:
    from envforge.resolve.pypi import BuildControls

    section = pspec.pypi
    overrides = (*section.overrides, *(line for pack in registry
                                       for line in pack.resolver_overrides(section.packages)))
    return BuildControls(constraints=section.constraints, overrides=overrides,
                         build_constraints=section.build_constraints,
                         only_binary=section.only_binary, no_binary=section.no_binary)


_HOST_PYTHONS: dict[str, Interpreter | None] = {}
_HOST_PYTHONS_LOCK = threading.Lock()


def _found_interpreter(minor: str) -> Interpreter | None:
    """The interpreter apply would use for a venv, when this host has one; asked once per
    process (each platform's thread wants it, and finding it runs interpreters)."""
    from envforge.errors import StepError
    from envforge.host.interpreters import find_interpreter

    with _HOST_PYTHONS_LOCK:
        if minor not in _HOST_PYTHONS:
            try:
                _HOST_PYTHONS[minor] = find_interpreter(minor)
            except StepError:
                _HOST_PYTHONS[minor] = None
        return _HOST_PYTHONS[minor]


def _host_python(minor: str) -> str | None:
    found = _found_interpreter(minor)
    return None if found is None else found.version


def _host_interpreter(minor: str) -> str | None:
    """What uv builds sdists' metadata with: this host's Python of the target's minor
    version (as apply builds them), which also spares uv its own search of PATH."""
    found = _found_interpreter(minor)
    return None if found is None else str(found.executable)


def own_uv_cache(platform: Platform) -> Path | None:
    """Where uv resolves for a platform other than this host's: a cache of its own, so that
    the platforms' runs go side by side. In one cache, each run waits for the other's build
    of an sdist's metadata (uv locks the sdist's folder), and where the sdist's response
    cannot be cached (a proxy that strips caching headers) builds it again. The host's
    platform keeps the cache apply and bundle share: its builds' requirements are the ones
    they need offline."""
    from envforge.paths import envforge_dirs
    from envforge.platforms import host_platform

    return None if platform == host_platform().name else envforge_dirs().cache / f"uv-{platform}"


def _minor(version: str) -> str:
    return ".".join(version.split(".")[:2])


def lock_spec(spec: Spec, registry: Registry[FrameworkPack], *,
              platforms: Sequence[Platform] | None = None,
              previous: Lockfile | None = None, lock_path: Path | None = None,
              notes: list[str] | None = None, upgrade: bool = False,
              upgrade_packages: Collection[str] = ()) -> Lockfile:
    """The lock for a spec; platforms already locked for this exact spec are reused, and a
    platform resolved again keeps the previous lock's PyPI and conda versions where the spec
    allows them. ``upgrade`` resolves the wanted platforms afresh (the others still reused);
    ``upgrade_packages`` resolves them again preferring all but these packages' versions.
    Resolvers' remarks that do not stop the lock are appended to ``notes``."""
    from envforge.compat import ensure_compatible

    wanted = _wanted_platforms(spec, platforms)
    ensure_compatible(spec, registry)
    reusable = previous is not None and previous.meta.spec_hash == spec.content_hash \
        and previous.meta.envforge == __version__
    if upgrade_packages and previous is not None:
        _ensure_locked(upgrade_packages, previous, lock_path)
    again = upgrade or bool(upgrade_packages)
    todo = [p for p in spec.project.platforms if p in wanted and (again or not (
        reusable and previous is not None and p in previous.platforms
        and not suite_missing(previous.platforms[p], registry)))]
    preferred: Mapping[Platform, PlatformLock] = {} if upgrade or previous is None else {
        p: _without(plock, upgrade_packages) for p, plock in previous.platforms.items()}
    try:
        fresh = _lock_platforms([spec.for_platform(p) for p in todo], registry, notes,
                                preferred)
    except CompatibilityError as exc:
        # a pack's rule on the resolved versions: named by the spec, as the pins' rules are,
        # at the packages it resolved them from (where the fix pins the culprit)
        if exc.path is not None:
            raise
        packages = ("pypi", "packages")
        raise CompatibilityError(exc.conflict, source=exc.source, fix=exc.fix,
                                 path=spec.source, line=spec.key_lines.get(packages),
                                 key=".".join(packages) if packages in spec.key_lines else None,
                                 ) from None
    except ResolveError as exc:
        from envforge.resolve.pypi import UnsatisfiableError

        if not isinstance(exc, UnsatisfiableError):
            raise
        from envforge.resolve.pypi_explain import explain_unsatisfiable

        raise explain_unsatisfiable(spec, exc) from None
    locked: dict[Platform, PlatformLock] = {}
    for platform in spec.project.platforms:
        if platform in fresh:
            locked[platform] = fresh[platform]
        elif reusable and previous is not None and platform in previous.platforms:
            from envforge.lockplan import completed

            locked[platform] = completed(previous.platforms[platform],
                                         spec.for_platform(platform), registry)
    first = next(iter(spec.platforms.values()))
    return Lockfile(
        meta=LockMeta(
            envforge=__version__, spec=spec_label(Path(spec.source), lock_path),
            spec_name=spec.name,
            spec_hash=spec.content_hash,
            pypi_index=first.pypi.index if any(p.pypi.packages for p in spec.platforms.values())
            else None,
            pypi_as_of=first.pypi.as_of.isoformat() if first.pypi.as_of else None,
            pypi_find_links=first.pypi.find_links or None,
            pypi_extra_indexes=first.pypi.extra_indexes or None,
            conda_channels=first.environment.channels if first.environment.kind == "conda" else (),
            debian_suite=first.debian.suite if first.debian else None,
        ),
        platforms=locked,
    )


def _ensure_locked(names: Collection[str], previous: Lockfile, lock_path: Path | None) -> None:
    """A name to upgrade that the lock does not hold is a typo: refused before any work."""
    from packaging.utils import canonicalize_name

    held = {canonicalize_name(name) for plock in previous.platforms.values()
            for name in (*(f.name for f in plock.pypi), *(c.name for c in plock.conda),
                         *(f.name for f in (plock.suite.runner if plock.suite else ())))}
    unknown = sorted(n for n in names if canonicalize_name(n) not in held)
    if unknown:
        where = lock_path if lock_path is not None else "the lock"
        raise InputError(f"--upgrade-package {', '.join(unknown)}: not in {where} (it holds "
                         f"{len(held)} PyPI and conda packages, named as in its pypi and conda "
                         "tables)")


def _without(plock: PlatformLock, names: Collection[str]) -> PlatformLock:
    """The lock's packages to prefer, less those named (PyPI names compared normalised)."""
    if not names:
        return plock
    from packaging.utils import canonicalize_name

    drop = {canonicalize_name(n) for n in names}
    suite = plock.suite
    if suite is not None:
        suite = suite.model_copy(update={"runner": tuple(
            f for f in suite.runner if canonicalize_name(f.name) not in drop)})
    return plock.model_copy(update={
        "pypi": tuple(f for f in plock.pypi if canonicalize_name(f.name) not in drop),
        "conda": tuple(c for c in plock.conda if canonicalize_name(c.name) not in drop),
        "suite": suite})


def _lock_platforms(pspecs: Sequence[PlatformSpec], registry: Registry[FrameworkPack],
                    notes: list[str] | None,
                    preferred: Mapping[Platform, PlatformLock]) -> dict[Platform, PlatformLock]:
    """Each platform locked in a thread of its own (their uv runs and downloads overlap),
    the kernels' references (NumPy's, seconds of CPU) computed beside them, not after. The
    first platform that fails fails the lock at once: the references' children are killed,
    and platforms not started are not."""
    from envforge.app.references import BackgroundReferences
    from envforge.lockplan import kernel_device

    references = BackgroundReferences()
    for pspec in pspecs:
        if pspec.verify.kernels:
            references.start(pspec.verify, kernel_device(pspec, registry)[1],
                             registry.active(pspec.packs))
    pool = ThreadPoolExecutor(max_workers=max(1, len(pspecs)))
    try:
        jobs = [pool.submit(lock_platform, pspec, registry, notes,
                            preferred.get(pspec.platform), references) for pspec in pspecs]
        wait(jobs, return_when=FIRST_EXCEPTION)
        for job in jobs:
            error = job.exception() if job.done() else None
            if error is not None:
                raise error
        return {pspec.platform: job.result() for pspec, job in zip(pspecs, jobs, strict=True)}
    except BaseException:
        references.cancel()
        raise
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def _expectations(pspec: PlatformSpec, registry: Registry[FrameworkPack],
                  versions: dict[str, str],
                  references: BackgroundReferences | None = None) -> Expectations:
    """``lockplan.expectations_for``, the kernels' references taken from envforge's cache
    (``app/references.py``): the rest is computed for the spec without kernels."""
    from envforge.app.references import kernel_references
    from envforge.lockplan import expectations_for, kernel_device

    if not pspec.verify.kernels:
        return expectations_for(pspec, registry, versions)
    bare = pspec.model_copy(update={"verify": pspec.verify.model_copy(update={"kernels": ()})})
    device, packs = kernel_device(pspec, registry)[1], registry.active(pspec.packs)
    kernels = (references.get(pspec.verify, device, packs) if references is not None
               else kernel_references(pspec.verify, device, packs))
    return expectations_for(bare, registry, versions).model_copy(update={"kernels": kernels})


def _wanted_platforms(spec: Spec, platforms: Sequence[Platform] | None) -> tuple[Platform, ...]:
    if not platforms:
        return spec.project.platforms
    unknown = [p for p in platforms if p not in spec.project.platforms]
    if unknown:
        raise InputError(f"{spec.source}: platform {unknown[0]} is not among the spec's "
                         f"platforms ({', '.join(spec.project.platforms)})")
    return tuple(platforms)


def spec_label(spec_path: Path, lock_path: Path | None) -> str:
    """The spec as the lock names it: relative to the project the lock lives in, so the
    same project gives the same bytes wherever it is checked out."""
    if lock_path is not None:
        try:
            return spec_path.resolve().relative_to(lock_path.resolve().parent.parent).as_posix()
        except ValueError:
            pass
    return spec_path.name
