"""Make a bundle: gather every file a lock names for a platform into one folder.

Downloads run in a thread pool into envforge's content-addressed cache (resuming ``.part``
files, each hash-checked as it lands), so a second bundle, an interrupted one run again,
or ``apply --offline`` reuse them. Files the user must supply (cuDNN) come from
``--artifact ROLE=PATH`` or the cache; all missing ones are named before any download.
Then sdists are built into wheels for the target, envforge's own wheels are added when
asked, and the folder is assembled: files first, the manifest last.
"""

from __future__ import annotations

import shutil
import sys
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath

from envforge import __version__
from envforge.bundle.check import BundlePack
from envforge.bundle.manifest import (
    FOLDERS,
    MANIFEST,
    README,
    BuiltFrom,
    BundleFile,
    EnvforgeWheels,
    Manifest,
    Omitted,
    Source,
    write_manifest,
)
from envforge.bundle.wheelcheck import check_built_wheel
from envforge.bundle.wheels import (
    build_envforge_wheel,
    build_sdist_wheel,
    cached_built_wheel,
    envforge_source_root,
    resolve_envforge_deps,
    sdist_label,
)
from envforge.errors import ArtifactError, EnvforgeError, InputError
from envforge.host.archives import sha256_file
from envforge.host.fetch import FileRef, Progress, cache_path, obtain
from envforge.host.http import session as new_session
from envforge.lockcheck import ensure_fresh
from envforge.lockfile import LockedArtifact, Lockfile, PlatformLock, load_lock
from envforge.packapi import Registry
from envforge.platforms import PLATFORMS, host_platform
from envforge.spec import PYPI_SIMPLE, Platform, load_spec
from envforge.ui import UI

MiB = 1 << 20


@dataclass(frozen=True)
class BundleRequest:
    lock: Path
    output: Path
    platform: Platform | None = None
    artifacts: Mapping[str, Path] = field(default_factory=dict)  # role -> file the user has
    with_envforge: bool = False
    with_suite: bool = False  # verify --suite's runner and tests' sdist (about 4 MiB more)
    envforge_python: str = f"{sys.version_info.major}.{sys.version_info.minor}"
    jobs: int = 8


@dataclass(frozen=True)
class Item:
    """One file the bundle will hold: downloaded (``ref``) or already local (``local``)."""

    dest: str
    source: Source
    role: str
    name: str
    version: str | None
    sha256: str
    ref: FileRef | None = None
    local: Path | None = None
    built_from: BuiltFrom | None = None


def find_spec(lock_path: Path, lock: Lockfile) -> Path:
    """The spec a lock was made from: ``specs/X.toml`` beside ``locks/``, else ``meta.spec``."""
    candidates = [lock_path.resolve().parent.parent / "specs" / f"{lock_path.stem}.toml",
                  Path(lock.meta.spec), lock_path.resolve().parent.parent / lock.meta.spec]
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    raise InputError(f"{lock_path}: its spec {lock.meta.spec} was not found (looked at "
                     f"{', '.join(str(c) for c in candidates)}); a bundle carries it")


def pick_platform(lock: Lockfile, lock_path: Path, wanted: Platform | None) -> Platform:
    if wanted is not None:
        if wanted not in lock.platforms:
            raise InputError(f"{lock_path} has no {wanted} section (it has "
                             f"{', '.join(lock.platforms)})")
        return wanted
    host = host_platform().name
    if host in lock.platforms:
        return host
    if len(lock.platforms) == 1:
        return next(iter(lock.platforms))
    raise InputError(f"{lock_path} locks {', '.join(lock.platforms)}: pick one with --platform")


def lock_items(plock: PlatformLock) -> list[Item]:
    """Everything downloadable the lock names; user-supplied artifacts are left to the caller."""
    items = []
    for f in plock.pypi:
        items.append(Item(f"{FOLDERS['pypi']}/{f.filename}", "pypi", f.kind, f.name, f.version,
                          f.sha256, ref=FileRef(f.url, f.sha256, f.filename, f.size)))
    for c in plock.conda:
        items.append(Item(f"{FOLDERS['conda']}/{c.filename}", "conda", "conda", c.name,
                          f"{c.version}-{c.build}", c.sha256,
                          ref=FileRef(c.url, c.sha256, c.filename, c.size)))
    for d in plock.deb:
        items.append(Item(f"{FOLDERS['deb']}/{PurePosixPath(d.filename).name}", "deb", "deb",
                          d.name, d.version, d.sha256,
                          ref=FileRef(d.url, d.sha256, d.filename, d.size)))
    return items


def suite_items(plock: PlatformLock) -> list[Item]:
    """``verify --suite --bundle`` on a closed host: the runner's wheels and the sdist the tests
    come from (kept as it is, under suite/: the pypi/ copy is replaced by its built wheel).
    Empty where the lock has no test group or no such sdist."""
    from envforge.suite.runner import find_tests_sdist

    if plock.suite is None:
        return []
    sdist = find_tests_sdist(plock.suite, plock.pypi)
    if sdist is None:
        return []
    return [Item(f"suite/{f.filename}", "pypi", "suite", f.name, f.version, f.sha256,
                 ref=FileRef(f.url, f.sha256, f.filename, f.size))
            for f in (*plock.suite.runner, sdist)]


def artifact_items(artifacts: Sequence[LockedArtifact], supplied: Mapping[str, Path],
                   cache: Path) -> list[Item]:
    """The lock's artifacts: the user's file, the cache's, or a download; all missing ones
    named in one error before anything is fetched."""
    items: list[Item] = []
    missing: list[str] = []
    for a in artifacts:
        dest = f"{FOLDERS['artifact']}/{a.filename}"
        ref = FileRef(a.url or "", a.sha256, a.filename, a.size)
        given = supplied.get(a.role)
        if given is not None:
            found = sha256_file(given)
            if found != a.sha256:
                raise ArtifactError(f"--artifact {a.role}={given}: sha256 {found} is not the "
                                    f"lock's {a.sha256} for {a.filename}")
            cached = cache_path(cache, ref)
            if not _cached_ok(cached, a.sha256):  # kept, so `apply --offline` finds it too
                _copy(given, cached)
            items.append(Item(dest, "artifact", a.role, a.filename, None, a.sha256,
                              local=cached))
        elif _cached_ok(cache_path(cache, ref), a.sha256):
            items.append(Item(dest, "artifact", a.role, a.filename, None, a.sha256,
                              local=cache_path(cache, ref)))
        elif a.url and not a.user_supplied:
            items.append(Item(dest, "artifact", a.role, a.filename, None, a.sha256, ref=ref))
        else:
            where = a.url or a.source
            missing.append(f"{a.role} archive {a.filename} (sha256 {a.sha256}) is not at hand: "
                           f"download it from {where} and pass --artifact {a.role}=PATH")
    if missing:
        raise ArtifactError("; ".join(missing))
    return items


def _cached_ok(path: Path, sha256: str) -> bool:
    return path.is_file() and sha256_file(path) == sha256


def fetch_all(refs: Sequence[FileRef], *, cache: Path, ui: UI, jobs: int) -> dict[str, Path]:
    """sha256 -> verified cached copy, through fetch.obtain (the same checks as apply); the
    files not cached yet are downloaded in parallel, resuming."""
    unique = list({r.sha256: r for r in refs}.values())
    total = sum(r.size or 0 for r in unique if not cache_path(cache, r).is_file())
    local = threading.local()
    errors: list[str] = []
    have: dict[str, Path] = {}

    def one(ref: FileRef, advance: Progress) -> Path:
        session = getattr(local, "session", None)
        if session is None:
            session = local.session = new_session()
        target = cache_path(cache, ref)
        part = target.with_name(target.name + ".part")
        if part.is_file():
            advance(part.stat().st_size)  # already there from an earlier, interrupted run
        return obtain(ref, cache=cache, progress=advance, session=session)

    with ui.progress(f"fetching {len(unique)} files, MiB", total=total / MiB or None) as hook:
        lock = threading.Lock()

        def advance(amount: int) -> None:
            with lock:
                hook.advance(amount / MiB)

        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            futures = {pool.submit(one, ref, advance): ref for ref in unique}
            for future in as_completed(futures):
                ref = futures[future]
                try:
                    have[ref.sha256] = future.result()
                except EnvforgeError as exc:
                    errors.append(f"{ref.filename}: {exc}")
    if errors:
        raise EnvforgeError(f"{len(errors)} file(s) could not be had (run again to resume): "
                            + "; ".join(errors))
    return have


def build_bundle(request: BundleRequest, registry: Registry[BundlePack], *, cache: Path, ui: UI,
                 environ: Mapping[str, str]) -> Manifest:
    """Gather, build and assemble; returns the manifest written to ``request.output``."""
    lock = load_lock(request.lock, registry)
    spec_path = find_spec(request.lock, lock)
    ensure_fresh(load_spec(spec_path, registry), lock, request.lock)
    platform = pick_platform(lock, request.lock, request.platform)
    plock = lock.platforms[platform]
    _check_output(request.output)

    items = lock_items(plock) + artifact_items(plock.artifacts, request.artifacts, cache)
    if request.with_suite:
        items += suite_items(plock)
    if request.with_envforge:
        items += _envforge_deps(request, lock, platform, ui)
    fetched = fetch_all([i.ref for i in items if i.ref is not None and i.local is None],
                        cache=cache, ui=ui, jobs=request.jobs)
    items = [replace(i, local=i.local or fetched[i.sha256]) for i in items]
    items, omitted = _build_sdists(items, plock, platform, cache=cache, environ=environ, ui=ui)
    wheels_info = None
    if request.with_envforge:
        own = build_envforge_wheel(cache / "envforge-self", environ=environ, cache=cache)
        items.append(Item(f"{FOLDERS['envforge']}/{own.name}", "envforge", "envforge",
                          "envforge", __version__, sha256_file(own), local=own))
        wheels_info = EnvforgeWheels(
            python=request.envforge_python, platform=PLATFORMS[platform].uv_triple,
            folder=FOLDERS["envforge"],
            install=f"python3 -m pip install --no-index --find-links BUNDLE/"
                    f"{FOLDERS['envforge']} envforge")

    out = request.output
    out.mkdir(parents=True, exist_ok=True)
    files = _assemble(out, items)
    spec_copy = f"specs/{spec_path.stem}.toml"
    lock_copy = f"locks/{spec_path.stem}.lock"  # where apply looks for SPEC's lock
    _copy(spec_path, out / spec_copy)
    _copy(request.lock, out / lock_copy)
    manifest = Manifest(envforge=__version__, spec_name=lock.meta.spec_name,
                        spec_hash=lock.meta.spec_hash, spec=spec_copy, lock=lock_copy,
                        lock_sha256=sha256_file(out / lock_copy), platform=platform,
                        python=plock.python, files=tuple(files), omitted=tuple(omitted),
                        envforge_wheels=wheels_info)
    (out / README).write_text(readme(manifest), encoding="utf-8")
    write_manifest(manifest, out)  # last: a folder with a manifest is a finished bundle
    return manifest


def _envforge_deps(request: BundleRequest, lock: Lockfile, platform: Platform,
                   ui: UI) -> list[Item]:
    """envforge's dependencies as wheels for the Python envforge will run on there."""
    root = envforge_source_root()  # before any download: a non-checkout fails fast
    ui.info(f"resolving envforge's dependencies for Python {request.envforge_python} "
            f"({PLATFORMS[platform].uv_triple})")
    return [Item(f"{FOLDERS['envforge']}/{f.filename}", "envforge", "dependency", f.name,
                 f.version, f.sha256, ref=FileRef(f.url, f.sha256, f.filename, f.size))
            for f in resolve_envforge_deps(root, python=request.envforge_python,
                                           platform=platform,
                                           index=lock.meta.pypi_index or PYPI_SIMPLE)]


def _build_sdists(items: Sequence[Item], plock: PlatformLock, platform: Platform, *,
                  cache: Path, environ: Mapping[str, str],
                  ui: UI) -> tuple[list[Item], list[Omitted]]:
    """Each locked sdist replaced by the wheel built from it for the target's Python."""
    kept: list[Item] = []
    omitted: list[Omitted] = []
    for item in items:
        if not (item.source == "pypi" and item.role == "sdist"):
            kept.append(item)
            continue
        assert item.local is not None
        sdist = next(f for f in plock.pypi if f.sha256 == item.sha256)
        built = cached_built_wheel(cache, sdist.sha256, plock.python, plock.build, platform,
                                   plock.deb)
        if built is None:
            ui.info(f"building {sdist_label(sdist)} from source…")
            built = build_sdist_wheel(sdist, item.local, target_python=plock.python,
                                      platform=platform, cache=cache, environ=environ,
                                      build=plock.build, debs=plock.deb)
        else:
            check_built_wheel(built.path, sdist, item.local, target_python=plock.python,
                              platform=platform)
        dest = f"{FOLDERS['pypi']}/{built.path.name}"
        kept.append(Item(dest, "pypi", "built-wheel", sdist.name, sdist.version, built.sha256,
                         local=built.path,
                         built_from=BuiltFrom(filename=sdist.filename, sha256=sdist.sha256,
                                              python=built.python, pure=built.pure,
                                              build_requires=built.build_requires)))
        omitted.append(Omitted(filename=sdist.filename, sha256=sdist.sha256, source="pypi",
                               reason=f"replaced by {dest}, built from it with Python "
                                      f"{built.python}{' (pure Python)' if built.pure else ''}"))
    return kept, omitted


def _check_output(out: Path) -> None:
    """Refuse to fill a folder that holds something other than a bundle."""
    if out.exists() and not out.is_dir():
        raise InputError(f"{out} exists and is not a folder")
    if out.is_dir() and any(out.iterdir()) and not (out / MANIFEST).is_file():
        raise InputError(f"{out} is not empty and not a bundle; pick an empty folder")


def _assemble(out: Path, items: Sequence[Item]) -> list[BundleFile]:
    """Copy each file in (unchanged ones are kept) and drop what an earlier bundle left."""
    files = []
    for item in items:
        assert item.local is not None
        target = out / item.dest
        if not _cached_ok(target, item.sha256):
            _copy(item.local, target)
        files.append(BundleFile(path=item.dest, source=item.source, role=item.role,
                                name=item.name, version=item.version, sha256=item.sha256,
                                size=target.stat().st_size,
                                url=item.ref.url if item.ref and item.ref.url else None,
                                built_from=item.built_from))
    keep = {out / f.path for f in files}
    for folder in dict.fromkeys(FOLDERS.values()):
        for stale in (out / folder).rglob("*") if (out / folder).is_dir() else ():
            if stale.is_file() and stale not in keep:
                stale.unlink()
    return files


def _copy(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    part = target.with_name(target.name + ".part")
    shutil.copyfile(source, part)
    part.replace(target)


def readme(manifest: Manifest) -> str:
    """What to type on the closed host; paths are relative to wherever the bundle was copied."""
    spec = manifest.spec
    lines = [f"# envforge bundle: {manifest.spec_name} ({manifest.platform})", "",
             f"Made by envforge {manifest.envforge} from `{manifest.lock}` "
             f"(spec hash `{manifest.spec_hash}`). Every file, its source and sha256 are in "
             f"`{MANIFEST}`. Nothing here needs a network.", "",
             "From the folder that holds this README:", "", "```sh",
             'BUNDLE="$(pwd)"']
    if manifest.envforge_wheels is not None:
        wheels = manifest.envforge_wheels
        lines += [f"# envforge itself and its dependencies (wheels for Python {wheels.python}, "
                  f"{wheels.platform}):",
                  f'python3 -m pip install --no-index --find-links "$BUNDLE/{wheels.folder}" '
                  "envforge"]
    lines += ['envforge bundle --check "$BUNDLE"',
              f'envforge apply "$BUNDLE/{spec}" --bundle "$BUNDLE" --yes',
              f'envforge verify "$BUNDLE/{spec}"', "```", "",
              "Apply checks the whole bundle against the lock first and changes nothing if a "
              "file is missing or altered. The repository's own spec works as well "
              f"(`envforge apply specs/{PurePosixPath(spec).name} --bundle \"$BUNDLE\"`) when "
              "its lock is the one the bundle was made from. `--prefix DIR` puts the "
              "environment elsewhere (give verify the same one).", ""]
    if manifest.envforge_wheels is not None:
        lines += ["Where pip refuses to change the system's Python (PEP 668: "
                  "externally-managed-environment), install into a venv instead: "
                  '`python3 -m venv ~/envforge-venv && ~/envforge-venv/bin/python -m pip install '
                  f'--no-index --find-links "$BUNDLE/{manifest.envforge_wheels.folder}" '
                  "envforge`, then use `~/envforge-venv/bin/envforge`. "
                  "`python3 -m envforge` works where the script is not on PATH.", ""]
    sizes = manifest.sizes()
    lines += ["## Contents", "", "| source | files | MiB |", "|---|---:|---:|"]
    lines += [f"| {s} | {n} | {b / MiB:.1f} |" for s, (n, b) in sizes.items()]
    lines += [f"| total | {len(manifest.files)} | {manifest.total_size / MiB:.1f} |", ""]
    lines += [f"- left out: {o.filename}: {o.reason}" for o in manifest.omitted]
    return "\n".join(lines).rstrip() + "\n"
