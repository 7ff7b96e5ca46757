"""Where apply finds each locked file with no network: in a bundle, or in envforge's cache.

``preflight`` answers for the whole lock before any step runs, so a missing or altered
file stops apply with one error and nothing changed. The steps then ask for single files
(``pypi_wheels``, ``fetch.obtain``) and get the same verified copies.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from envforge.bundle.check import check_bundle
from envforge.bundle.manifest import read_manifest
from envforge.bundle.wheels import cached_built_wheel
from envforge.errors import ArtifactError, EnvforgeError
from envforge.host.archives import sha256_file
from envforge.host.fetch import FileRef, OfflineError, cache_path, obtain
from envforge.host.wheelinstall import WheelToInstall
from envforge.lockfile import LockedPypiFile, Lockfile
from envforge.steps.base import StepContext


def preflight(ctx: StepContext, lock: Lockfile) -> dict[str, Path]:
    """Refuse (ArtifactError) unless every locked file is at hand and unaltered; returns the
    artifacts by role (cuDNN ...) for the steps that take them."""
    if ctx.bundle is not None:
        return _preflight_bundle(ctx, lock, ctx.bundle)
    return _preflight_cache(ctx)


def _preflight_bundle(ctx: StepContext, lock: Lockfile, bundle: Path) -> dict[str, Path]:
    result = check_bundle(bundle, lock=lock, platform=ctx.platform)
    if not result.ok:
        raise ArtifactError(f"bundle {bundle} cannot provision {lock.meta.spec_name} for "
                            f"{ctx.platform}, nothing was changed: {len(result.problems)} "
                            f"problem(s): " + "; ".join(result.problems))
    carried = result.manifest.by_sha256()
    found: dict[str, Path] = {a.role: bundle / carried[a.sha256].path
                              for a in ctx.lock.artifacts}
    return {**found, **_supplied(ctx)}


def _preflight_cache(ctx: StepContext) -> dict[str, Path]:
    problems = []
    cache = ctx.dirs.cache
    for f in ctx.lock.pypi:
        if f.kind == "sdist":
            if cached_built_wheel(cache, f.sha256, ctx.lock.python) is None:
                problems.append(f"{f.filename}: no wheel built from it in the cache")
            continue
        problems += _cache_problem(cache, FileRef(f.url, f.sha256, f.filename, f.size))
    for c in ctx.lock.conda:
        problems += _cache_problem(cache, FileRef(c.url, c.sha256, c.filename, c.size))
    for d in ctx.lock.deb:
        problems += _cache_problem(cache, FileRef(d.url, d.sha256, d.filename, d.size))
    supplied = _supplied(ctx)
    found: dict[str, Path] = {}
    for a in ctx.lock.artifacts:
        if a.role in supplied:
            continue
        ref = FileRef(a.url or "", a.sha256, a.filename, a.size)
        problems += _cache_problem(cache, ref)
        found[a.role] = cache_path(cache, ref)
    if problems:
        raise ArtifactError(
            f"--offline: envforge's cache ({cache}) lacks what the lock needs, nothing was "
            f"changed: {'; '.join(problems)}; fill it with `envforge bundle LOCK -o DIR` while "
            "online, or apply with --bundle DIR")
    return {**found, **supplied}


def prefetch(ctx: StepContext) -> dict[str, Path]:
    """Online, the same promise as ``preflight``: every locked file downloaded into the cache
    and checked against the lock before the first change, so a wrong hash, a moved URL or no
    network stops apply with nothing changed. The steps then find them in the cache."""
    supplied = _supplied(ctx)
    refs = [FileRef(f.url, f.sha256, f.filename, f.size) for f in ctx.lock.pypi]
    refs += [FileRef(c.url, c.sha256, c.filename, c.size) for c in ctx.lock.conda]
    refs += [FileRef(d.url, d.sha256, d.filename, d.size) for d in ctx.lock.deb]
    roles = {}
    for a in ctx.lock.artifacts:
        if a.role not in supplied and a.url:  # no URL: the user supplies it, its step says how
            roles[a.role] = FileRef(a.url, a.sha256, a.filename, a.size)
    found: dict[str, Path] = {}
    for role_or_none, ref in [*((None, r) for r in refs), *roles.items()]:
        try:
            path = obtain(ref, cache=ctx.dirs.cache)
        except ArtifactError as exc:
            raise ArtifactError(f"{exc}; nothing was changed") from None
        except EnvforgeError as exc:
            raise EnvforgeError(f"{exc}; nothing was changed") from None
        if role_or_none is not None:
            found[role_or_none] = path
    return {**found, **supplied}


def _cache_problem(cache: Path, ref: FileRef) -> list[str]:
    path = cache_path(cache, ref)
    if not path.is_file():
        return [f"{Path(ref.filename).name}: not in the cache"]
    if sha256_file(path) != ref.sha256:
        return [f"{path}: altered (sha256 is not the lock's {ref.sha256})"]
    return []


def _supplied(ctx: StepContext) -> dict[str, Path]:
    """``--artifact`` files, checked against the lock here rather than mid-apply."""
    for a in ctx.lock.artifacts:
        given = ctx.artifacts.get(a.role)
        if given is not None and sha256_file(given) != a.sha256:
            raise ArtifactError(f"--artifact {a.role}={given}: not the locked {a.filename} "
                                f"(sha256 {a.sha256}); nothing was changed")
    return dict(ctx.artifacts)


def pypi_wheels(ctx: StepContext, files: Sequence[LockedPypiFile]) -> list[WheelToInstall]:
    """A verified local wheel per locked file: the file itself, or the wheel built from its
    sdist (from the bundle's manifest or the cache)."""
    wheels = []
    offline = ctx.offline or ctx.bundle is not None
    for f in files:
        if f.kind == "wheel":
            path = obtain(FileRef(f.url, f.sha256, f.filename, f.size), cache=ctx.dirs.cache,
                          bundle=ctx.bundle, offline=offline)
            wheels.append(WheelToInstall(path, f.sha256))
            continue
        if ctx.bundle is not None:
            built = read_manifest(ctx.bundle).built_wheel_for(f.sha256)
            if built is not None:
                wheels.append(WheelToInstall(ctx.bundle / built.path, built.sha256))
                continue
        cached = cached_built_wheel(ctx.dirs.cache, f.sha256, ctx.lock.python)
        if cached is None:
            raise OfflineError(f"{f.filename} is an sdist, and no wheel built from it is in the "
                               f"{'bundle' if ctx.bundle else 'cache'}: build one with "
                               "`envforge bundle`, or install uv (envforge[resolve]) to build "
                               "it during apply")
        wheels.append(WheelToInstall(cached.path, cached.sha256))
    return wheels

