"""A lock checked against its spec before it is used: a tampered lock is refused, not applied.

The models already refuse malformed values (names, versions, paths, hashes, ranges). What a
model cannot see is a well-formed lock that says something its spec does not: an entry
removed or listed twice, a platform's environment kind or Theano flags that the spec would
not give, versions verify would expect that the locked files do not carry. Each of those is
recomputed from the spec, offline, and any difference is one SpecError naming the lock's
line and key (exit 2) before anything is written.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from pathlib import Path

from packaging.utils import canonicalize_name

from envforge.errors import SpecError
from envforge.lockfile import Lockfile, PlatformLock
from envforge.spec import Frozen, PlatformSpec, Spec
from envforge.tomlpos import KeyPath, key_lines, line_of

_CONDA_NAME = re.compile(r"^\s*([A-Za-z0-9_][A-Za-z0-9._-]*)")
_PYPI_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
Fail = Callable[[Iterable[str | int], str], SpecError]


def check_lock(spec: Spec, lock: Lockfile, lock_path: Path) -> None:
    """Refuse a lock that does not say exactly what its spec would lock."""
    try:
        text = lock_path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        text = ""
    lines = key_lines(text)

    def fail(path: Iterable[str | int], message: str) -> SpecError:
        keys: KeyPath = tuple(str(p) for p in path)
        return SpecError(lock_path, f"{message} (the lock was edited or damaged; re-run "
                         f"`envforge lock {spec.source}`)", key=".".join(keys),
                         line=line_of(lines, keys))

    for platform, plock in lock.platforms.items():
        if platform not in spec.project.platforms:
            raise fail(("platforms", platform), "a platform the spec does not target")
        _check_platform(spec.for_platform(platform), plock, ("platforms", platform), fail)


def _check_platform(pspec: PlatformSpec, plock: PlatformLock, at: KeyPath, fail: Fail) -> None:
    from envforge.lockplan import kernel_device, locked_artifacts, stack_versions
    from envforge.packs import active_packs

    if plock.environment != pspec.environment.kind:
        raise fail((*at, "environment"), f"{plock.environment!r} but the spec says "
                   f"{pspec.environment.kind!r}")
    _unique([canonicalize_name(f.name) for f in plock.pypi], (*at, "pypi"), fail)
    _unique([c.name for c in plock.conda], (*at, "conda"), fail)
    _unique([d.name for d in plock.deb], (*at, "deb"), fail)
    _unique([a.role for a in plock.artifacts], (*at, "artifacts"), fail, key="role")
    needed = {a.role: a for a in locked_artifacts(pspec)}
    for index, artifact in enumerate(plock.artifacts):
        known = needed.pop(artifact.role, None)
        if known is None:
            raise fail((*at, "artifacts", index, "role"), f"{artifact.role!r}: the spec needs "
                       "no such artifact")
        for key in ("filename", "sha256"):
            if getattr(artifact, key) != getattr(known, key):
                raise fail((*at, "artifacts", index, key), f"is not the {artifact.role} "
                           f"archive the spec and envforge's knowledge give ({known.filename}, "
                           f"sha256 {known.sha256})")
    if needed:
        raise fail((*at, "artifacts"), f"no {sorted(needed)[0]} entry, which the spec needs")
    have_pypi = {canonicalize_name(f.name) for f in plock.pypi}
    for requirement in pspec.pypi.packages:
        match = _PYPI_NAME.match(requirement)
        if match and canonicalize_name(match[1]) not in have_pypi:
            raise fail((*at, "pypi"), f"no entry for {match[1]}, which the spec requires")
    if pspec.environment.kind == "conda":
        have_conda = {c.name for c in plock.conda}
        for requirement in pspec.conda.packages:
            match = _CONDA_NAME.match(requirement)
            if match and match[1] not in have_conda:
                raise fail((*at, "conda"), f"no entry for {match[1]}, which the spec requires")
    if pspec.debian is not None and pspec.platform == "linux-64":
        have_deb = {d.name for d in plock.deb}
        for name in pspec.debian.packages:
            if name not in have_deb:
                raise fail((*at, "deb"), f"no entry for {name}, which the spec requires")
    expect = plock.expect
    versions = stack_versions(pspec, pypi=plock.pypi, conda=plock.conda, deb=plock.deb)
    if expect.versions != versions:
        wrong = sorted(set(expect.versions.items()) ^ set(versions.items()))[0][0]
        raise fail((*at, "expect", "versions", wrong), "does not match the locked packages "
                   f"({dict(sorted(versions.items()))})")
    if plock.python != versions.get("python", pspec.python.version):
        raise fail((*at, "python"), f"{plock.python!r} is not the locked Python")
    derived = {pack.name: pack.expectations(pspec, versions) for pack in active_packs(pspec)}
    for name in sorted(set(expect.packs) | set(derived)):
        _same_pack(expect.packs.get(name), derived.get(name), (*at, "expect", name), fail)
    device, float_x = kernel_device(pspec)
    same = {"device": device, "float_x": float_x,
            "min_gpu_speedup": pspec.verify.min_gpu_speedup, "repeats": pspec.verify.repeats,
            "cuda": pspec.cuda.version if pspec.cuda else None,
            "cudnn": pspec.cudnn.version if pspec.cudnn else None}
    for key, wanted in same.items():
        if getattr(expect, key) != wanted:
            raise fail((*at, "expect", key), f"{getattr(expect, key)!r} but the spec says "
                       f"{wanted!r}")


def _same_pack(locked: Frozen | None, derived: Frozen | None, at: KeyPath,
               fail: Fail) -> None:
    """A pack's table is what the spec gives; the error names the first key that differs."""
    if locked == derived:
        return
    if locked is None or derived is None:
        raise fail(at, "is not in the lock" if locked is None else "the spec mounts no such pack")
    for key in type(derived).model_fields:
        have, want = getattr(locked, key), getattr(derived, key)
        if have == want:
            continue
        if isinstance(have, dict) and isinstance(want, dict):
            wrong = sorted(set(have.items()) ^ set(want.items()))[0][0]
            raise fail((*at, key, wrong), f"is not what the spec's [{at[-1]}] table gives")
        raise fail((*at, key), f"{have!r} but the spec's [{at[-1]}] table gives {want!r}")


def _unique(names: list[str], at: KeyPath, fail: Fail, *, key: str = "name") -> None:
    seen: set[str] = set()
    for index, name in enumerate(names):
        if name in seen:
            raise fail((*at, index, key), f"{name!r} is listed twice")
        seen.add(name)
