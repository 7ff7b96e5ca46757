"""Is a bundle whole and unaltered, and does it hold everything a lock names? Reads only.

Two questions, answered together so apply can refuse before changing anything: every file
the manifest lists is there with its sha256 (a tampered file is named), and every file the
lock locks for the platform is in the bundle, or is an sdist whose built wheel is.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from envforge.bundle.manifest import Manifest, read_manifest
from envforge.errors import EnvforgeError
from envforge.host.archives import sha256_file
from envforge.lockfile import Lockfile, LockPack, PlatformLock, load_lock
from envforge.packapi import Registry
from envforge.spec import Platform, SpecPack, load_spec


@dataclass(frozen=True)
class FileStatus:
    path: str
    source: str
    status: str  # ok, missing, altered
    detail: str = ""


@dataclass(frozen=True)
class BundleCheck:
    bundle: Path
    manifest: Manifest
    files: tuple[FileStatus, ...]
    problems: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not self.problems


def locked_files(plock: PlatformLock) -> list[tuple[str, str, str]]:
    """(source, filename, sha256) of every file the platform's lock names."""
    return ([("pypi", f.filename, f.sha256) for f in plock.pypi]
            + [("conda", c.filename, c.sha256) for c in plock.conda]
            + [("deb", d.filename, d.sha256) for d in plock.deb]
            + [("artifact", a.filename, a.sha256) for a in plock.artifacts])


def check_files(bundle: Path, manifest: Manifest) -> list[FileStatus]:
    statuses = []
    for f in manifest.files:
        path = bundle / f.path
        if not path.is_file():
            statuses.append(FileStatus(f.path, f.source, "missing", "not in the bundle"))
            continue
        found = sha256_file(path)
        if found != f.sha256:
            statuses.append(FileStatus(f.path, f.source, "altered",
                                       f"sha256 {found}, the manifest says {f.sha256}"))
        else:
            statuses.append(FileStatus(f.path, f.source, "ok"))
    return statuses


class BundlePack(SpecPack, LockPack, Protocol):
    """What checking a bundle reads of a pack: its spec section and lock table."""


def check_bundle(bundle: Path, registry: Registry[BundlePack], *, lock: Lockfile | None = None,
                 platform: Platform | None = None) -> BundleCheck:
    """Check ``bundle`` against its manifest and against ``lock`` (default: its own copy)."""
    manifest = read_manifest(bundle)
    statuses = check_files(bundle, manifest)
    problems = [f"{s.path}: {s.status} ({s.detail})" for s in statuses if s.status != "ok"]
    problems += _check_copies(bundle, manifest, registry)
    reference = lock
    if reference is None:
        try:
            reference = load_lock(bundle / manifest.lock, registry)
        except EnvforgeError as exc:
            problems.append(f"the bundle's lock cannot be read: {exc}")
    if reference is not None:
        problems += _check_against(manifest, reference, platform or manifest.platform)
    return BundleCheck(bundle, manifest, tuple(statuses), tuple(problems))


def _check_copies(bundle: Path, manifest: Manifest, registry: Registry[BundlePack]) -> list[str]:
    """The lock and spec copies are what the manifest says: apply can use them as they are."""
    problems = []
    lock_copy = bundle / manifest.lock
    if not lock_copy.is_file():
        problems.append(f"{manifest.lock}: missing (the copy of the lock)")
    elif sha256_file(lock_copy) != manifest.lock_sha256:
        problems.append(f"{manifest.lock}: altered (sha256 differs from the manifest's "
                        f"{manifest.lock_sha256})")
    spec_copy = bundle / manifest.spec
    if not spec_copy.is_file():
        problems.append(f"{manifest.spec}: missing (the copy of the spec)")
    else:
        try:
            found = load_spec(spec_copy, registry).content_hash
        except EnvforgeError as exc:
            problems.append(f"{manifest.spec}: cannot be read: {exc}")
        else:
            if found != manifest.spec_hash:
                problems.append(f"{manifest.spec}: altered (spec hash {found}, the manifest "
                                f"says {manifest.spec_hash})")
    return problems


def _check_against(manifest: Manifest, lock: Lockfile, platform: Platform) -> list[str]:
    problems = []
    if lock.meta.spec_hash != manifest.spec_hash:
        problems.append(f"the bundle was made for spec hash {manifest.spec_hash}, the lock is "
                        f"for {lock.meta.spec_hash} (rebuild the bundle from this lock)")
    if platform != manifest.platform:
        problems.append(f"the bundle is for {manifest.platform}, not {platform}")
        return problems
    plock = lock.platforms.get(platform)
    if plock is None:
        return [*problems, f"the lock has no {platform} section"]
    carried = manifest.by_sha256()
    for source, filename, sha in locked_files(plock):
        if sha in carried:
            continue
        if source == "pypi" and manifest.built_wheel_for(sha) is not None:
            continue
        problems.append(f"{filename} (sha256 {sha}), locked for {platform}, is not in the bundle")
    return problems
