"""Where apply finds each locked file with no network: in a bundle, or in envforge's cache.

``preflight`` answers for the whole lock before any step runs, so a missing or altered
file stops apply with one error and nothing changed. The steps then ask for single files
through ``LockedSources`` (the ``Sources`` the app layer puts in their context) and get the
same verified copies; host/ and steps/ never read a bundle's manifest themselves.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import suppress
from functools import partial
from pathlib import Path

from envforge.background import in_background
from envforge.bundle.buildcache import BuiltWheel
from envforge.bundle.wheelcheck import check_built_wheel
from envforge.bundle.wheels import (
    build_interpreter,
    build_sdist_wheel,
    cached_built_wheel,
    sdist_label,
)
from envforge.confine import inside
from envforge.errors import ArtifactError, EnvforgeError, OfflineError
from envforge.host.archives import sha256_file
from envforge.host.cores import usable_cores
from envforge.host.fetch import FileRef, Lookup, Progress, cache_path, obtain
from envforge.host.headstart import landed
from envforge.host.interpreters import Interpreter
from envforge.host.unpacked import unpacked_deb, unpacked_wheel
from envforge.host.uv import uv_binary
from envforge.host.wheelinstall import WheelToInstall
from envforge.lockfile import LockedDeb, LockedPypiFile, Lockfile
from envforge.steps.base import StepContext, unpacked_cache

_PARALLEL_FETCHES = 16  # downloads wait on the network: uv keeps 50 going
_PARALLEL_HASHES = 8  # at most: a stat check is the GIL's, a hash the kernel's
_UNPACKS = 4  # unpacks: inflate, lzma and hashing let go of the GIL
_BUILDS = 4  # builds wait on their own subprocess


class UnpackGate:
    """How many unpacks run at once: while an sdist builds, as many as leave it a core
    (``cores - 1``, at least one, at most ``_UNPACKS``), then ``_UNPACKS``. A build is a cold
    apply's longest chain, and its work is CPU (uv unpacking the sdist and making the build
    environment, setuptools copying and zipping); four unpacks beside it on a 2-core host
    stretched it by about as long as they ran (uv build of Theano-PyMC alone 1.68 / 2.24 s,
    beside four unpack threads 2.64 / 3.26 s, beside one 2.36 / 2.54 s), while their own work
    has time to spare until the build ends. Where no build runs, or once the last has, every
    unpack may run."""

    def __init__(self, builds: int, *, cores: int | None = None) -> None:
        wide = _UNPACKS
        narrow = max(1, min(wide, (cores or usable_cores()) - 1))
        self._builds = builds
        self._held = wide - narrow if builds else 0  # permits kept back until the builds end
        self._free = threading.Semaphore(wide - self._held)
        self._lock = threading.Lock()

    def built(self) -> None:
        """One build ended (built, found built or failed): after the last, widen."""
        with self._lock:
            self._builds -= 1
            held, self._held = (self._held, 0) if self._builds <= 0 else (0, self._held)
        if held:
            self._free.release(held)

    def run(self, work: Callable[[Path], object], path: Path) -> object:
        """``work(path)`` once a place is free."""
        with self._free:
            return work(path)


class LockedSources:
    """The ``Sources`` of a run: the context's bundle when it has one, else envforge's cache,
    else the network unless the context is offline; every copy checked against the lock."""

    def obtain(self, ctx: StepContext, ref: FileRef, *, offline: bool = False,
               progress: Progress | None = None) -> Path:
        return obtain(ref, cache=ctx.dirs.cache, bundle=bundle_lookup(ctx.bundle),
                      offline=offline or ctx.offline, progress=progress, report=ctx.ui.download)

    def pypi_wheels(self, ctx: StepContext,
                    files: Sequence[LockedPypiFile]) -> list[WheelToInstall]:
        return pypi_wheels(ctx, files)

    def preflight(self, ctx: StepContext, lock: Lockfile) -> dict[str, Path]:
        return preflight(ctx, lock)

    def prefetch(self, ctx: StepContext) -> dict[str, Path]:
        return prefetch(ctx)


def in_bundle(bundle: Path, ref: FileRef) -> Path | None:
    """The bundle's copy of ``ref`` (unchecked): by sha256 through its manifest, else by name."""
    from envforge.bundle.manifest import bundle_index  # a bundle's only: apply without one

    listed = bundle_index(bundle).get(ref.sha256)
    named = inside(bundle, ref.filename, what="locked file name")
    for candidate in (listed, named, bundle / named.name):
        if candidate is not None and candidate.is_file():
            return candidate
    return None


def bundle_lookup(bundle: Path | None) -> Lookup | None:
    """What ``fetch.obtain`` takes for a bundle folder (None: no bundle)."""
    if bundle is None:
        return None
    return lambda ref: in_bundle(bundle, ref)


def preflight(ctx: StepContext, lock: Lockfile) -> dict[str, Path]:
    """Refuse (ArtifactError) unless every locked file is at hand and unaltered; returns the
    artifacts by role (cuDNN ...) for the steps that take them."""
    if ctx.bundle is not None:
        return _preflight_bundle(ctx, lock, ctx.bundle)
    return _preflight_cache(ctx)


def _preflight_bundle(ctx: StepContext, lock: Lockfile, bundle: Path) -> dict[str, Path]:
    from envforge.bundle.check import check_bundle  # its models: a bundle's only

    result = check_bundle(bundle, ctx.registry, lock=lock, platform=ctx.platform)
    if not result.ok:
        raise ArtifactError(f"bundle {bundle} cannot provision {lock.meta.spec_name} for "
                            f"{ctx.platform}, nothing was changed: {len(result.problems)} "
                            f"problem(s): " + "; ".join(result.problems))
    carried = result.manifest.by_sha256()
    for f in ctx.lock.pypi:
        if f.kind == "sdist":
            built = result.manifest.built_wheel_for(f.sha256)
            if built is not None:  # else check_bundle has reported it
                wheel = inside(bundle, built.path, what="bundle path")
                _unchanged(partial(_check, ctx, f, wheel, None))
    found: dict[str, Path] = {a.role: inside(bundle, carried[a.sha256].path, what="bundle path")
                              for a in ctx.lock.artifacts}
    return {**found, **_supplied(ctx)}


def _preflight_cache(ctx: StepContext) -> dict[str, Path]:
    cache = ctx.dirs.cache
    refs = [FileRef(f.url, f.sha256, f.filename, f.size) for f in ctx.lock.pypi]
    refs += [FileRef(c.url, c.sha256, c.filename, c.size) for c in ctx.lock.conda]
    refs += [FileRef(d.url, d.sha256, d.filename, d.size) for d in ctx.lock.deb]
    with ThreadPoolExecutor(min(_PARALLEL_HASHES, usable_cores())) as pool:
        checked = dict(zip(refs, pool.map(lambda ref: _cache_problem(cache, ref), refs),
                           strict=True))
    problems = []
    for f in ctx.lock.pypi:
        ref = FileRef(f.url, f.sha256, f.filename, f.size)
        found_problems = checked[ref]
        problems += found_problems
        if f.kind == "sdist":
            built = cached_built_wheel(cache, f.sha256, ctx.lock.python, ctx.lock.build,
                                       ctx.platform, ctx.lock.deb)
            if built is None:
                problems.append(f"{f.filename}: no wheel built from it in the cache")
            elif not found_problems:
                archive = cache_path(cache, ref)
                _unchanged(partial(_check, ctx, f, built.path, archive))
    for ref in refs[len(ctx.lock.pypi):]:
        problems += checked[ref]
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
    and checked against the lock, and every locked sdist built (or found built in the host's
    cache) and its wheel checked, before the first change; so a wrong hash, a moved URL, no
    network or a failed build stops apply with nothing changed. The steps then find them in
    the cache.

    As uv's installs do, each file's own work starts as soon as it has landed, while the
    others still download: a wheel or a .deb is unpacked into the unpacked cache (its entry
    is what the steps link from), an sdist built. The archive was hashed by ``obtain`` as it
    landed, so its entry is made without hashing it again. Sdists and the largest files are
    asked for first (their work is the longest), each download thread keeps its connection
    (a new one per file cost ml75 a TLS handshake each, through this host's proxy)."""
    supplied = _supplied(ctx)
    unpacked = unpacked_cache(ctx)
    builder = in_background("python", _for_builds, ctx.lock.python, ctx.environ,
                            cache=ctx.dirs.cache) \
        if any(f.kind == "sdist" for f in ctx.lock.pypi) else None
    for f in ctx.lock.pypi:  # apply's head start downloaded it: cached now, so its build
        if f.kind == "sdist" and landed(f.url, f.sha256):  # starts before 16 downloads do
            with suppress(EnvforgeError, OSError):  # the download below meets it again
                obtain(FileRef(f.url, f.sha256, f.filename, f.size), cache=ctx.dirs.cache,
                       report=ctx.ui.download)
    gate = UnpackGate(sum(f.kind == "sdist" for f in ctx.lock.pypi))
    jobs: list[tuple[str | None, FileRef, Callable[[Path], object] | None]] = []
    for f in ctx.lock.pypi:
        ref = FileRef(f.url, f.sha256, f.filename, f.size)
        then = partial(gate.run, partial(unpacked_wheel, unpacked, sha256=f.sha256,
                                         checked=True)) \
            if f.kind == "wheel" else partial(_build_and_unpack, ctx, f, unpacked,
                                              builder=builder, gate=gate)
        jobs.append((None, ref, then))
    jobs += [(None, FileRef(c.url, c.sha256, c.filename, c.size), None) for c in ctx.lock.conda]
    jobs += [(None, FileRef(d.url, d.sha256, d.filename, d.size),
              partial(gate.run, partial(unpacked_deb, unpacked, sha256=d.sha256, checked=True)))
             for d in ctx.lock.deb]
    for a in ctx.lock.artifacts:
        if a.role not in supplied and a.url:  # no URL: the user supplies it, its step says how
            jobs.append((a.role, FileRef(a.url, a.sha256, a.filename, a.size), None))
    sdists = {f.sha256 for f in ctx.lock.pypi if f.kind == "sdist"}
    first = sorted(range(len(jobs)), key=lambda i: (jobs[i][1].sha256 not in sdists,
                                                     -(jobs[i][1].size or 0)))
    found: dict[str, Path] = {}
    sessions = threading.local()
    # the first failure in lock order is reported; a build waits on its own subprocess, so
    # it starts as its sdist lands, never queued behind the unpacks (ml30's waited 0.3 s)
    with ThreadPoolExecutor(_PARALLEL_FETCHES) as fetches, \
            ThreadPoolExecutor(_UNPACKS) as work, ThreadPoolExecutor(_BUILDS) as builds:
        futures = {i: fetches.submit(_fetch_then, ctx, jobs[i][1], jobs[i][2], sessions,
                                     builds if jobs[i][1].sha256 in sdists else work)
                   for i in first}
        for i, (role_or_none, _, _) in enumerate(jobs):
            try:
                path, after = futures[i].result()
                if after is not None:
                    after.result()
            except _RefusedError as refused:
                _cancel(fetches, work, builds)
                raise refused.error from None
            except ArtifactError as exc:
                _cancel(fetches, work, builds)
                raise ArtifactError(f"{exc}; nothing was changed") from None
            except EnvforgeError as exc:
                _cancel(fetches, work, builds)
                raise EnvforgeError(f"{exc}; nothing was changed") from None
            if role_or_none is not None:
                found[role_or_none] = path
    return {**found, **supplied}


def _for_builds(target_python: str, environ: Mapping[str, str], *,
                cache: Path) -> tuple[Interpreter, bool]:
    """What a build waits for, found while the sdists download: the Python it runs with
    (running each candidate took a cold apply a tenth of a second between the sdist and its
    build), and uv (its module's import and search, 20 ms)."""
    with suppress(EnvforgeError):
        uv_binary()
    return build_interpreter(target_python, environ, cache=cache)


def _build_and_unpack(ctx: StepContext, sdist: LockedPypiFile, unpacked: Path,
                      archive: Path, *, builder: Future[tuple[Interpreter, bool]] | None,
                      gate: UnpackGate) -> None:
    """The build, then its wheel's entry: past the gate, as the longest chain goes on."""
    try:
        built = _built_or_build(ctx, sdist, archive, builder=builder)
    finally:
        gate.built()
    # hashed just now: by read_entry (a cached build) or write_entry (this one)
    unpacked_wheel(unpacked, built.path, built.sha256, checked=True)


class _RefusedError(Exception):
    """What a file's own work (unpack, build) refused, worded by ``_unchanged`` already."""

    def __init__(self, error: EnvforgeError) -> None:
        super().__init__(str(error))
        self.error = error


def _fetch_then(ctx: StepContext, ref: FileRef, then: Callable[[Path], object] | None,
                sessions: threading.local, work: ThreadPoolExecutor,
                ) -> tuple[Path, Future[None] | None]:
    """On a download thread: the checked file, and its own work handed to ``work``."""
    session = None
    if not cache_path(ctx.dirs.cache, ref).is_file():  # requests is imported only to fetch
        session = getattr(sessions, "http", None)
        if session is None:
            from envforge.host.http import session as new_session

            session = sessions.http = new_session()
    path = obtain(ref, cache=ctx.dirs.cache, report=ctx.ui.download, session=session)
    return path, None if then is None else work.submit(_then, then, path)


def _then(then: Callable[[Path], object], path: Path) -> None:
    try:
        _unchanged(partial(then, path))
    except EnvforgeError as exc:
        raise _RefusedError(exc) from None


def _cancel(*pools: ThreadPoolExecutor) -> None:
    for pool in pools:
        pool.shutdown(wait=False, cancel_futures=True)


def _unchanged(check: Callable[[], object]) -> None:
    """Run a check of preflight (before the first change), saying so when it refuses."""
    try:
        check()
    except EnvforgeError as exc:
        first, newline, rest = str(exc).partition("\n")  # a build's log follows its first line
        message = f"{first}; nothing was changed{newline}{rest}"
        try:
            error = type(exc)(message)
        except TypeError:  # an error class that takes more than a message
            error = EnvforgeError(message)
            error.exit_code = exc.exit_code
        raise error from None


def _cache_problem(cache: Path, ref: FileRef) -> list[str]:
    """Hashed through ``obtain``, which remembers it: the install step's ``obtain`` of the
    same unchanged file does not hash it again."""
    path = cache_path(cache, ref)
    if not path.is_file():
        return [f"{Path(ref.filename).name}: not in the cache"]
    try:
        obtain(ref, cache=cache, offline=True)
    except OfflineError:  # removed since
        return [f"{Path(ref.filename).name}: not in the cache"]
    except ArtifactError:
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
    """A verified local wheel per locked file: the wheel itself (the lock's sha256), or for an
    sdist the wheel built from it: the bundle's (its manifest's sha256), the host's build
    cache's (its record's), or built now when online; each checked against the sdist."""
    wheels = []
    offline = ctx.offline or ctx.bundle is not None
    for f in files:
        ref = FileRef(f.url, f.sha256, f.filename, f.size)
        if f.kind == "wheel":
            path = obtain(ref, cache=ctx.dirs.cache, bundle=bundle_lookup(ctx.bundle),
                          offline=offline, report=ctx.ui.download)
            wheels.append(WheelToInstall(path, f.sha256))
            continue
        if ctx.bundle is not None:
            from envforge.bundle.manifest import read_manifest

            carried = read_manifest(ctx.bundle).built_wheel_for(f.sha256)
            if carried is not None:
                wheel = inside(ctx.bundle, carried.path, what="bundle path")
                _check(ctx, f, wheel, None)
                wheels.append(WheelToInstall(wheel, carried.sha256))
                continue
        try:
            sdist: Path | None = obtain(ref, cache=ctx.dirs.cache,
                                        bundle=bundle_lookup(ctx.bundle), offline=offline,
                                        report=ctx.ui.download)
        except OfflineError:
            sdist = None  # a bundle carries the wheel, not the sdist
        built = _built_or_build(ctx, f, sdist, offline=offline)
        wheels.append(WheelToInstall(built.path, built.sha256))
    return wheels


def _check(ctx: StepContext, sdist: LockedPypiFile, wheel: Path, archive: Path | None) -> None:
    check_built_wheel(wheel, sdist, archive, target_python=ctx.lock.python,
                      platform=ctx.platform)


def _built_or_build(ctx: StepContext, sdist: LockedPypiFile, archive: Path | None, *,
                    offline: bool = False,
                    builder: Future[tuple[Interpreter, bool]] | None = None) -> BuiltWheel:
    """The host's cached build of ``sdist`` for this target (checked), else a build now
    (with ``builder``'s Python when one was searched for already), announced on stderr;
    offline or with no sdist at hand, an OfflineError."""
    cached = cached_built_wheel(ctx.dirs.cache, sdist.sha256, ctx.lock.python, ctx.lock.build,
                                ctx.platform, ctx.lock.deb)
    if cached is not None:
        _check(ctx, sdist, cached.path, archive)
        return cached
    if offline or archive is None:
        raise OfflineError(f"{sdist.filename} is an sdist, and no wheel built from it is in the "
                           f"{'bundle' if ctx.bundle else 'cache'}: build one with "
                           "`envforge bundle`, or apply online to build it")
    ctx.ui.info(f"building {sdist_label(sdist)} from source…")
    return build_sdist_wheel(sdist, archive, target_python=ctx.lock.python,
                             platform=ctx.platform, cache=ctx.dirs.cache, environ=ctx.environ,
                             build=ctx.lock.build, builder=builder, debs=ctx.lock.deb,
                             fetch_deb=partial(_deb_for_build, ctx))


def _deb_for_build(ctx: StepContext, deb: LockedDeb) -> Path:
    """A .deb a build is handed, verified: the bundle's or the cache's copy, else downloaded
    (waiting on prefetch's download of it, if under way)."""
    return obtain(FileRef(deb.url, deb.sha256, deb.filename, deb.size), cache=ctx.dirs.cache,
                  bundle=bundle_lookup(ctx.bundle))
