"""Locking a spec: compatibility check -> resolvers -> lockfile.

Compatibility is checked from the spec alone first, so a known-bad stack fails offline and
fast. An unchanged spec reuses its lock without touching the network. Whether a lock is
still its spec's is judged in ``lockcheck`` (pure, below this layer: bundle needs it too).
This module orchestrates: which platforms to lock again, each in a thread of its own
(``lockplatform``), with the kernels' references computed beside them.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from pathlib import Path

from envforge import __version__
from envforge.app.lockplatform import find_pythons_beside, lock_platform
from envforge.app.locksuite import suite_missing
from envforge.errors import CompatibilityError, InputError, ResolveError
from envforge.lockcheck import platform_is_current
from envforge.lockfile import Lockfile, LockMeta, PlatformLock
from envforge.packapi import Registry
from envforge.packs import FrameworkPack
from envforge.spec import Platform, PlatformSpec, Spec


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
    reusable = previous is not None and previous.meta.spec_hash == spec.content_hash \
        and previous.meta.envforge == __version__
    again = upgrade or bool(upgrade_packages)
    kept = {p: _completed(previous, p, spec, registry) for p in previous.platforms
            if p in spec.project.platforms} if reusable and previous is not None else {}
    todo = [p for p in spec.project.platforms if p in wanted and (again or not (
        p in kept and not suite_missing(kept[p], registry)
        and platform_is_current(spec.for_platform(p), kept[p], registry)))]
    find_pythons_beside([spec.for_platform(p) for p in todo])
    ensure_compatible(spec, registry)
    if upgrade_packages and previous is not None:
        _ensure_locked(upgrade_packages, previous, lock_path)
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
        from envforge.resolve.pypi import EraBuildError, UndeclaredBuildError, UnsatisfiableError

        if isinstance(exc, EraBuildError):
            from envforge.resolve.pypi_explain import explain_era_build

            raise explain_era_build(spec, exc) from None
        if isinstance(exc, UndeclaredBuildError):
            from envforge.resolve.pypi_explain import explain_undeclared_build

            raise explain_undeclared_build(spec, exc) from None
        if not isinstance(exc, UnsatisfiableError):
            raise
        from envforge.resolve.pypi_explain import explain_unsatisfiable

        raise explain_unsatisfiable(spec, exc) from None
    locked: dict[Platform, PlatformLock] = {}
    for platform in spec.project.platforms:
        if platform in fresh:
            locked[platform] = fresh[platform]
        elif platform in kept:
            locked[platform] = kept[platform]
    first = next(iter(spec.platforms.values()))
    return Lockfile(
        meta=LockMeta(
            envforge=__version__, spec=spec_label(Path(spec.source), lock_path),
            spec_name=spec.name,
            spec_hash=spec.content_hash,
            pypi_index=first.pypi.index if any(p.pypi.packages for p in spec.platforms.values())
            else None,
            pypi_as_of=first.pypi.as_of.isoformat() if first.pypi.as_of else None,
            pypi_as_of_packages={name: day.isoformat() for name, day
                                 in first.pypi.as_of_packages.items()} or None,
            pypi_find_links=first.pypi.find_links or None,
            pypi_extra_indexes=first.pypi.extra_indexes or None,
            conda_channels=first.environment.channels if first.environment.kind == "conda" else (),
            debian_suite=first.debian.suite if first.debian else None,
        ),
        platforms=locked,
    )


def _completed(previous: Lockfile, platform: Platform, spec: Spec,
               registry: Registry[FrameworkPack]) -> PlatformLock:
    from envforge.lockplan import completed

    return completed(previous.platforms[platform], spec.for_platform(platform), registry)


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
