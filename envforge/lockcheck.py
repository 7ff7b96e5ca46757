"""A lock checked against its spec before it is used: a tampered lock is refused, not applied.

The models already refuse malformed values (names, versions, paths, hashes, ranges). What a
model cannot see is a well-formed lock that says something its spec does not: an entry
removed or listed twice, a requirement the knowledge adds (a module a locked release imports
undeclared) missing or outside its range, a platform's environment kind or Theano flags
that the spec would not give, versions verify would expect that the locked files do not
carry, a group resolved for another Python than the environment's (a textual merge of two
locks), an ``apply`` table or a pack's settings other than the spec's (apply reads them,
not the spec). Each of those is recomputed from the spec, offline, and any difference is one
SpecError naming the lock's line and key (exit 2) before anything is written.

Kernel references (a pack's, Keras's trained model) are NumPy's, computed when locking; plan
and apply read them from the lock and compare only what the spec decides of them (seed,
shape, tolerances), so they run where NumPy is not (a bundle's envforge): ``references=True``
recomputes them too, for verify and ``lock --check``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename

from envforge.errors import SpecError, StaleLockError
from envforge.expectations import inputs_only, kernel_inputs_of
from envforge.inputfile import LOCK_LIMIT, read_input_text
from envforge.lockfile import KernelExpectation, LockedPypiFile, Lockfile, PlatformLock
from envforge.lockplan import (
    LockPlanPack,
    build_record,
    kernel_device,
    locked_artifacts,
    stack_versions,
    undeclared_missing,
)
from envforge.packapi import Registry
from envforge.platforms import PLATFORMS
from envforge.spec import Frozen, Platform, PlatformSpec, Spec
from envforge.tomlpos import KeyPath, key_lines, line_of

_CONDA_NAME = re.compile(r"^\s*([A-Za-z0-9_][A-Za-z0-9._-]*)")
_PYPI_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
Fail = Callable[[Iterable[str | int], str], SpecError]


def check_lock(spec: Spec, lock: Lockfile, lock_path: Path, registry: Registry[LockPlanPack],
               *, references: bool = False) -> None:
    """Refuse a lock that does not say exactly what its spec would lock; ``references``
    also recomputes the kernels' references with NumPy."""
    def fail(path: Iterable[str | int], message: str) -> SpecError:
        keys: KeyPath = tuple(str(p) for p in path)
        return SpecError(lock_path, f"{message} (the lock was edited or damaged, or written "
                         "by an envforge whose knowledge differs from this one's; re-run "
                         f"`envforge lock {spec.source}`)", key=".".join(keys),
                         line=line_of(_key_lines_of(lock_path), keys))

    _check_indexes(spec, lock, fail)
    for platform, plock in lock.platforms.items():
        if platform not in spec.project.platforms:
            raise fail(("platforms", platform), "a platform the spec does not target")
        _check_platform(spec.for_platform(platform), plock, ("platforms", platform), fail,
                        registry, references)
        _check_file_urls(spec.for_platform(platform), plock, ("platforms", platform), fail)


def platform_is_current(pspec: PlatformSpec, plock: PlatformLock,
                        registry: Registry[LockPlanPack]) -> bool:
    """Whether a platform's lock says what its spec locks with this envforge's knowledge:
    lock reuses only such a platform. One locked before the knowledge changed (a CUDA build
    now known for its torch wheel) would be refused by apply as edited, and locked again
    it keeps its versions."""
    def fail(path: Iterable[str | int], message: str) -> SpecError:
        return SpecError("lock", message)

    try:
        _check_platform(pspec, plock, ("platforms", pspec.platform), fail, registry, False)
    except SpecError:
        return False
    return True


def _key_lines_of(lock_path: Path) -> dict[KeyPath, int]:
    """Each key's line in the lock, read for an error only: mapping every key of a lock of
    two platforms was most of the check's time on an apply."""
    try:
        return key_lines(read_input_text(lock_path, LOCK_LIMIT))
    except SpecError:
        return {}


def _check_indexes(spec: Spec, lock: Lockfile, fail: Fail) -> None:
    """The indexes and find-links the lock records are the spec's (as locking writes them
    from its first platform), so an edited index cannot serve other files."""
    pypi = next(iter(spec.platforms.values())).pypi
    meta = lock.meta
    for key, have, want in (("pypi_index", meta.pypi_index, pypi.index),
                            ("pypi_extra_indexes", meta.pypi_extra_indexes,
                             pypi.extra_indexes or None),
                            ("pypi_find_links", meta.pypi_find_links, pypi.find_links or None)):
        if have is not None and have != want:
            raise fail(("meta", key), f"{have!r} but the spec says {want!r}")


def _check_file_urls(pspec: PlatformSpec, plock: PlatformLock, at: KeyPath,
                     fail: Fail) -> None:
    """A file from an index is fetched over http(s), unless the spec's index or one of its
    find-links is itself a local one: a ``file://`` URL edited into a lock would have apply
    take whatever sits at that path."""
    pypi = pspec.pypi
    local_index = any(not _is_http(url) for url in (pypi.index, *pypi.extra_indexes))
    local_links = any(not _is_http(link) for link in pypi.find_links)
    groups: list[tuple[KeyPath, tuple[LockedPypiFile, ...]]] = [((*at, "pypi"), plock.pypi)]
    if plock.suite is not None:
        groups.append(((*at, "suite", "runner"), plock.suite.runner))
    for where, files in groups:
        for index, f in enumerate(files):
            allowed = {None: local_index, "find-links": local_links or local_index}
            if f.origin in allowed and not _is_http(f.url) and not allowed[f.origin]:
                raise fail((*where, index, "url"), f"{f.url!r} is not http(s), and the spec's "
                           f"index {pypi.index} and find-links are")


def _is_http(url: str) -> bool:
    return url.startswith(("https://", "http://"))


def _applies(requirement: str, markers: dict[str, str]) -> bool:
    """Whether a spec's requirement is one the platform installs: its marker, if any, holds
    there (``appnope; sys_platform == "darwin"`` is never locked for linux-64)."""
    try:
        marker = Requirement(requirement).marker
    except InvalidRequirement:  # the spec's own check names it
        return True
    return marker is None or marker.evaluate(markers)


def _check_platform(pspec: PlatformSpec, plock: PlatformLock, at: KeyPath, fail: Fail,
                    registry: Registry[LockPlanPack], references: bool) -> None:

    if plock.environment != pspec.environment.kind:
        raise fail((*at, "environment"), f"{plock.environment!r} but the spec says "
                   f"{pspec.environment.kind!r}")
    _unique([canonicalize_name(f.name) for f in plock.pypi], (*at, "pypi"), fail)
    _unique([c.name for c in plock.conda], (*at, "conda"), fail)
    _unique([d.name for d in plock.deb], (*at, "deb"), fail)
    _unique([a.role for a in plock.artifacts], (*at, "artifacts"), fail, key="role")
    needed = {a.role: a for a in locked_artifacts(pspec, registry)}
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
        if match and canonicalize_name(match[1]) not in have_pypi \
                and _applies(requirement, PLATFORMS[pspec.platform].markers(plock.python)):
            raise fail((*at, "pypi"), f"no entry for {match[1]}, which the spec requires")
    for row in undeclared_missing(plock.pypi, registry, pspec.pypi.provided_elsewhere)[:1]:
        raise fail((*at, "pypi"), f"no entry meeting {row.requirement}: {row.imported_at} "
                   f"imports {row.module}, which its metadata does not require so")
    if pspec.environment.kind == "conda":
        have_conda = {c.name for c in plock.conda}
        for requirement in pspec.conda.packages:
            match = _CONDA_NAME.match(requirement)
            if match and match[1] not in have_conda:
                raise fail((*at, "conda"), f"no entry for {match[1]}, which the spec requires")
    if pspec.debian is not None and PLATFORMS[pspec.platform].debian_arch is not None:
        have_deb = {d.name for d in plock.deb}
        for name in pspec.debian.packages:
            if name not in have_deb:
                raise fail((*at, "deb"), f"no entry for {name}, which the spec requires")
    expect = plock.expect
    versions = stack_versions(pspec, registry, pypi=plock.pypi, conda=plock.conda, deb=plock.deb)
    if expect.versions != versions:
        wrong = sorted(set(expect.versions.items()) ^ set(versions.items()))[0][0]
        raise fail((*at, "expect", "versions", wrong), "does not match the locked packages "
                   f"({dict(sorted(versions.items()))})")
    if plock.python != versions.get("python", pspec.python.version):
        raise fail((*at, "python"), f"{plock.python!r} is not the locked Python")
    _check_group_python(plock, pspec.platform, at, fail)
    _check_build(pspec, plock, at, fail)
    _check_apply(pspec, plock, at, fail)
    locked = dict(expect.packs)
    if references:
        derived = {pack.name: pack.expectations(pspec, versions)
                   for pack in registry.active(pspec.packs)}
    else:
        with inputs_only():
            derived = {pack.name: pack.expectations(pspec, versions)
                       for pack in registry.active(pspec.packs)}
        locked = {name: _inputs(table, registry.active(pspec.packs))
                  for name, table in locked.items()}
    for name in sorted(set(locked) | set(derived)):
        _same_pack(locked.get(name), derived.get(name), (*at, "expect", name), fail)
    device, float_x = kernel_device(pspec, registry)
    same = {"device": device, "float_x": float_x,
            "min_gpu_speedup": pspec.verify.min_gpu_speedup, "repeats": pspec.verify.repeats,
            "cuda": pspec.cuda.version if pspec.cuda else None,
            "cudnn": pspec.cudnn.version if pspec.cudnn else None}
    for key, wanted in same.items():
        if getattr(expect, key) != wanted:
            raise fail((*at, "expect", key), f"{getattr(expect, key)!r} but the spec says "
                       f"{wanted!r}")


def _inputs(table: Frozen, packs: Sequence[LockPlanPack]) -> Frozen:
    """A pack's table with each kernel's computed parts blanked (``kernel_inputs_of``): a
    kernel or a tuple of kernels, as the core's ``kernels`` are."""
    blanked: dict[str, object] = {}
    for key, value in table:
        if isinstance(value, KernelExpectation):
            blanked[key] = kernel_inputs_of(value, packs)
        elif isinstance(value, tuple) and any(isinstance(v, KernelExpectation) for v in value):
            blanked[key] = tuple(kernel_inputs_of(v, packs) if isinstance(v, KernelExpectation)
                                 else v for v in value)
    return table.model_copy(update=blanked) if blanked else table


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
        if isinstance(have, KernelExpectation) and isinstance(want, KernelExpectation):
            wrong = next(k for k in type(want).model_fields if getattr(have, k) != getattr(want, k))
            raise fail((*at, key, wrong), f"{getattr(have, wrong)!r} but the spec's "
                       f"[{at[-1]}] table gives {getattr(want, wrong)!r}")
        raise fail((*at, key), f"{have!r} but the spec's [{at[-1]}] table gives {want!r}")


def _check_group_python(plock: PlatformLock, platform: Platform, at: KeyPath,
                        fail: Fail) -> None:
    """Every group resolved for the environment's Python: by the version each group records
    (``pypi_python``, ``suite.python``) and, for locks that record none, by the wheels' tags
    (a ``cp311`` wheel in a 3.9 environment; a pure wheel's Python only a record can tell)."""
    from envforge.resolve.pypi import target_tags

    minor = _minor(plock.python)
    if plock.pypi_python is not None and _minor(plock.pypi_python) != minor:
        raise fail((*at, "pypi_python"), f"PyPI was resolved for Python {plock.pypi_python}, "
                   f"and the environment has Python {plock.python}")
    suite = plock.suite
    if suite is not None and suite.python is not None and (
            _minor(suite.python) != minor
            or (plock.pypi_python is not None and suite.python != plock.pypi_python)):
        raise fail((*at, "suite", "python"), f"the test group was resolved for Python "
                   f"{suite.python}, and the environment's PyPI packages for Python "
                   f"{plock.pypi_python or plock.python}")
    accepted = set(target_tags(platform, minor))
    groups: list[tuple[KeyPath, tuple[LockedPypiFile, ...]]] = [((*at, "pypi"), plock.pypi)]
    if suite is not None:
        groups.append(((*at, "suite", "runner"), suite.runner))
    for where, files in groups:
        for index, f in enumerate(files):
            if f.kind != "wheel":
                continue
            try:
                tags = parse_wheel_filename(f.filename)[3]
            except InvalidWheelFilename:
                raise fail((*where, index, "filename"), "is not a wheel file name") from None
            if accepted.isdisjoint(tags):
                shown = ", ".join(sorted(str(t) for t in tags))
                raise fail((*where, index, "filename"), f"is a wheel for {shown}, which "
                           f"Python {plock.python} on {platform} cannot install (this group "
                           "was resolved for another Python or platform)")


def _check_build(pspec: PlatformSpec, plock: PlatformLock, at: KeyPath, fail: Fail) -> None:
    """The build table is what the spec gives: a build constraint edited out of the lock
    would build an sdist with what the spec forbids. A lock written before the table was
    recorded has none, and passes where the spec constrains no build."""
    wanted = build_record(pspec, plock.pypi)
    if plock.build is None:
        if wanted is not None and wanted.constraints:
            raise fail(at, "no build table, and the spec's build_constraints must shape the "
                       "build of its sdists")
        return
    if wanted is None:
        raise fail((*at, "build"), "a build table, and the lock has no sdist to build")
    for key in ("constraints", "index", "find_links", "extra_indexes"):
        if getattr(plock.build, key) != getattr(wanted, key):
            raise fail((*at, "build", key), f"{getattr(plock.build, key)!r} but the spec "
                       f"gives {getattr(wanted, key)!r}")
    if plock.build.runtime is not None and plock.build.runtime != wanted.runtime:
        raise fail((*at, "build", "runtime"), f"{plock.build.runtime!r} but the environment's "
                   f"locked releases give {wanted.runtime!r}")
    _check_extra_build(pspec, plock, (*at, "build", "extra_dependencies"), fail)


def _check_extra_build(pspec: PlatformSpec, plock: PlatformLock, at: KeyPath,
                       fail: Fail) -> None:
    """The build's extra requirements are the spec's, for the sdists the lock builds: the
    same projects and names, each at the environment's version where it has one that does
    (a pin edited into the lock would put what the spec never named into a build)."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    from envforge.lockplan import extra_build_wanted

    assert plock.build is not None
    given = plock.build.extra_dependencies or {}
    wanted = extra_build_wanted(pspec, plock.pypi)
    if set(given) != set(wanted):
        raise fail(at, f"projects {sorted(given)!r} but the spec gives {sorted(wanted)!r}")
    env = {canonicalize_name(f.name): f.version for f in plock.pypi}
    for project, pins in given.items():
        asked = [Requirement(r) for r in wanted[project]]
        if len(pins) != len(asked):
            raise fail((*at, project), f"{list(pins)!r} but the spec gives "
                       f"{list(wanted[project])!r}")
        for pin, requirement in zip(pins, asked, strict=True):
            name, _, version = pin.partition("==")
            key = canonicalize_name(requirement.name)
            if canonicalize_name(name) != key or not _is_version(version):
                raise fail((*at, project), f"{list(pins)!r} but the spec gives "
                           f"{list(wanted[project])!r}")
            if key in env and requirement.specifier.contains(env[key], prereleases=True) \
                    and version != env[key]:
                raise fail((*at, project), f"{pin} but the environment has {key} {env[key]}")


def _check_apply(pspec: PlatformSpec, plock: PlatformLock, at: KeyPath, fail: Fail) -> None:
    """The apply table is the spec's: apply reads it alone (a compiler edited out of it would
    leave the environment without one). A lock of format 2 has none: stale, not tampered."""
    from envforge.lockplan import apply_inputs

    if plock.apply is None:
        return
    wanted = apply_inputs(pspec)
    for key in type(wanted).model_fields:
        have, want = getattr(plock.apply, key), getattr(wanted, key)
        if have != want:
            raise fail((*at, "apply", key), f"{have!r} but the spec says {want!r}")


def _minor(version: str) -> str:
    return ".".join(version.split(".")[:2])


def _unique(names: list[str], at: KeyPath, fail: Fail, *, key: str = "name") -> None:
    seen: set[str] = set()
    for index, name in enumerate(names):
        if name in seen:
            raise fail((*at, index, key), f"{name!r} is listed twice")
        seen.add(name)


def stale_reasons(spec: Spec, lock: Lockfile) -> list[str]:
    """Why a lock no longer satisfies its spec; empty when it does. Pure, no network."""
    reasons = []
    if lock.meta.spec_hash != spec.content_hash:
        reasons.append(f"the spec changed since it was locked ({lock.meta.spec_hash[:19]}… -> "
                       f"{spec.content_hash[:19]}…)")
    extra = [p for p in lock.platforms if p not in spec.project.platforms]
    if extra:
        reasons.append(f"the lock has platforms the spec no longer targets: {', '.join(extra)}")
    if lock.meta.spec_name != spec.name:
        reasons.append(f"the lock is for {lock.meta.spec_name!r}, not {spec.name!r}")
    if any(plock.apply is None for plock in lock.platforms.values()):
        reasons.append("the lock's format (2) does not record what apply reads of the spec "
                       "(its [platforms.X.apply] table)")
    return reasons


def ensure_fresh(spec: Spec, lock: Lockfile, lock_path: Path) -> None:
    """StaleLockError (exit 3) naming every reason, and the command that fixes it."""
    reasons = stale_reasons(spec, lock)
    if reasons:
        raise StaleLockError(f"{lock_path} is stale: {'; '.join(reasons)}; run `envforge lock "
                             f"{spec.source}`")


def _is_version(text: str) -> bool:
    """A PEP 440 version and nothing else (a pin is handed to uv as one requirement)."""
    from packaging.version import InvalidVersion, Version

    try:
        Version(text)
    except InvalidVersion:
        return False
    return text == text.strip()
