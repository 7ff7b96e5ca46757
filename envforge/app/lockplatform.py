"""Locking one platform of a spec: PyPI with uv, conda with rattler, Debian from its index,
the suite's runner beside them, and the expectations verify will check, as a PlatformLock."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING

from envforge.app.locksuite import lock_suite, runner_in_background
from envforge.background import in_background, yielding
from envforge.host.interpreters import minor as minor_of
from envforge.lockfile import (
    Expectations,
    LockedCondaPackage,
    LockedDeb,
    LockedPypiFile,
    PlatformLock,
)
from envforge.packapi import Registry
from envforge.packs import FrameworkPack
from envforge.platforms import PLATFORMS
from envforge.spec import DebianSection, Platform, PlatformSpec

if TYPE_CHECKING:
    from envforge.app.references import BackgroundReferences
    from envforge.host.interpreters import Interpreter
    from envforge.resolve.deb.selection import DebResolution
    from envforge.resolve.pypi import BuildControls


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
    build_pins: dict[str, tuple[str, ...]] | None = None
    if pspec.environment.kind == "conda":
        from envforge.resolve.conda import solve_conda

        conda = solve_conda(pspec.conda.packages, pspec.environment.channels, pspec.platform,
                            python=pspec.python.version,
                            cuda=pspec.cuda.number if pspec.cuda else None,
                            preferences=previous.conda if previous is not None else ())
    debs: Future[DebResolution] | None = None
    beside: DebianSection | None = None  # read beside uv's run, once that has started
    if pspec.debian is not None and PLATFORMS[pspec.platform].debian_arch is not None:
        from envforge.lockplan import debian_python

        if debian_python(pspec.debian.packages):  # PyPI resolves for Debian's Python
            deb = _debs(_resolve_debs(pspec.debian, pspec.platform), pspec, notes)
        else:
            beside = pspec.debian
    early = None
    preferred = previous  # for PyPI: the previous lock where it was of the same Python
    if pspec.pypi.packages:  # after conda and Debian: their Python is the one PyPI's must fit
        from envforge.resolve.pypi import resolve_pypi
        from envforge.resolve.pyversion import resolver_python

        target = resolver_python(pspec, conda=conda, deb=deb, find=_host_python)
        pypi_python = target.version
        preferred = _for_python(previous, target.version)
        builder = _host_interpreter(minor_of(target.version))
        uv_cache = own_uv_cache(pspec.platform)
        if notes is not None and target.version != pspec.python.version:
            notes.append(f"{pspec.platform}: PyPI resolved for Python {target.version} "
                         f"({target.origin})")
        def resolve(requirements: Sequence[str]) -> tuple[LockedPypiFile, ...]:
            return resolve_pypi(requirements, platform=pspec.platform, python=target.version,
                                index=pspec.pypi.index, exclude=pspec.pypi.provided_elsewhere,
                                as_of=pspec.pypi.as_of,
                                package_days=pspec.pypi.as_of_packages,
                                find_links=pspec.pypi.find_links,
                                controls=_controls(pspec, registry),
                                extra_indexes=pspec.pypi.extra_indexes, interpreter=builder,
                                uv_cache=uv_cache,
                                preferences=preferred.pypi if preferred is not None else ())

        # what a framework imports undeclared joins the lock, resolved with the rest: known
        # beforehand for an exact pin, else found in the result and resolved again
        added = undeclared_expected(pspec.pypi.packages, registry,
                                    pspec.pypi.provided_elsewhere)
        # uv's run first: what goes beside it (the suite's runner, checked against it after,
        # and Debian's index) imports and prepares while uv already resolves
        main = in_background("pypi", resolve,
                             [*pspec.pypi.packages, *(row.requirement for row in added)])
        early = runner_in_background(pspec, registry, target.version, builder, uv_cache,
                                     preferences=_runner_files(preferred))
        if beside is not None:
            debs = in_background("deb", yielding(_resolve_debs), beside, pspec.platform)
        pypi = main.result()
        missing = undeclared_missing(pypi, registry, pspec.pypi.provided_elsewhere)
        if missing:
            added = (*added, *missing)
            pypi = resolve([*pspec.pypi.packages, *(row.requirement for row in added)])
        if notes is not None:
            notes.extend(f"{pspec.platform}: added {row.requirement}: {row.imported_at} "
                         f"imports {row.module}, which its metadata does not require so"
                         for row in added)
        build_pins = _extra_build(pspec, pypi, resolve)
    if beside is not None:
        deb = _debs(debs.result() if debs is not None else _resolve_debs(beside, pspec.platform),
                    pspec, notes)
    versions = stack_versions(pspec, registry, pypi=pypi, conda=conda, deb=deb)
    suite = lock_suite(pspec, registry, pypi, versions, python=pypi_python, early=early,
                       interpreter=_host_interpreter(minor_of(pypi_python)) if pypi_python
                       else None, uv_cache=own_uv_cache(pspec.platform),
                       preferences=_runner_files(preferred))
    return PlatformLock(
        python=versions.get("python", pspec.python.version),
        environment=pspec.environment.kind,
        pypi=pypi, conda=conda, deb=deb,
        artifacts=locked_artifacts(pspec, registry),
        expect=_expectations(pspec, registry, versions, references),
        suite=suite,
        pypi_python=pypi_python,
        build=build_record(pspec, pypi, build_pins),
        apply=apply_inputs(pspec),
    )


def _extra_build(pspec: PlatformSpec, pypi: tuple[LockedPypiFile, ...],
                 resolve: Callable[[Sequence[str]], tuple[LockedPypiFile, ...]],
                 ) -> dict[str, tuple[str, ...]] | None:
    """The locked sdists' extra build requirements pinned, those the environment does not
    hold resolved on their own for the same target (a uv run only where there are some)."""
    from envforge.lockplan import extra_build_pins, extra_build_unpinned, extra_build_wanted

    wanted = extra_build_wanted(pspec, pypi)
    if not wanted:
        return None
    left = extra_build_unpinned(wanted, pypi)
    return extra_build_pins(wanted, pypi, resolve(left) if left else ())


def _resolve_debs(section: DebianSection, platform: Platform) -> DebResolution:
    """``resolve_debs``, its network edge imported here, by the thread that runs it
    (``requests`` alone takes tens of milliseconds of CPU)."""
    from envforge.resolve.deb.mirror import resolve_debs

    return resolve_debs(section, platform)


def _debs(resolution: DebResolution, pspec: PlatformSpec,
          notes: list[str] | None) -> tuple[LockedDeb, ...]:
    if notes is not None:  # Depends outside the spec: assumed on the host, worth a look
        notes.extend(f"{pspec.platform}: Debian: {w}" for w in resolution.warnings)
    return resolution.records


def _for_python(previous: PlatformLock | None, python: str) -> PlatformLock | None:
    """The previous lock as PyPI preferences, where it was resolved for the same Python minor:
    a release chosen for another is no preference (a lock of Python 3.6 kept NumPy 1.17.2
    for a spec of Python 3.8, which has no wheel of it: apply then built it, and failed)."""
    if previous is None:
        return None
    was = previous.pypi_python or previous.python
    return previous if minor_of(was) == minor_of(python) else None


def _runner_files(previous: PlatformLock | None) -> tuple[LockedPypiFile, ...]:
    return previous.suite.runner if previous is not None and previous.suite is not None else ()


def _controls(pspec: PlatformSpec, registry: Registry[FrameworkPack]) -> BuildControls:
    from envforge.resolve.pypi import BuildControls

    section = pspec.pypi
    overrides = (*section.overrides, *(line for pack in registry
                                       for line in pack.resolver_overrides(section.packages)))
    return BuildControls(constraints=section.constraints, overrides=overrides,
                         build_constraints=section.build_constraints,
                         only_binary=section.only_binary, no_binary=section.no_binary,
                         extra_build=tuple(sorted(section.extra_build_dependencies.items())))


_HOST_PYTHONS: dict[str, Interpreter | None] = {}
_HOST_PYTHONS_LOCK = threading.Lock()


def _found_interpreter(minor: str) -> Interpreter | None:
    """The interpreter apply would use for a venv, when this host has one; asked once per
    process (each platform's thread wants it), and each candidate's answer taken from
    envforge's cache while its file is unchanged, as apply takes it: uv's start waits for
    this, and running the candidates (the system's python3, then pyenv's 3.7) cost a lock
    about 0.1 s there."""
    from envforge.errors import StepError
    from envforge.host.interpreters import find_interpreter
    from envforge.paths import envforge_dirs

    with _HOST_PYTHONS_LOCK:
        if minor not in _HOST_PYTHONS:
            try:
                _HOST_PYTHONS[minor] = find_interpreter(minor, cache=envforge_dirs().cache)
            except StepError:
                _HOST_PYTHONS[minor] = None
        return _HOST_PYTHONS[minor]


def find_pythons_beside(pspecs: Sequence[PlatformSpec]) -> None:
    """Start finding the host's Pythons these platforms' PyPI resolutions will want (each
    a run of one or more interpreters), so that it overlaps the compatibility check rather
    than delays uv's start; ``lock_platform`` then finds them found."""
    from envforge.lockplan import debian_python

    minors = {pspec.python.minor for pspec in pspecs if pspec.pypi.packages and not (
        pspec.debian is not None and debian_python(pspec.debian.packages))}
    for minor in sorted(minors):
        in_background("python", _found_interpreter, minor)


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
