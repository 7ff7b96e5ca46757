"""Install wheels into another interpreter's environment with pypa's ``installer``: no pip, no uv.

A closed host has neither uv nor, inside a ``--without-pip`` venv, pip; ``installer`` is pure
Python and only unpacks. Where files go is the target's business, so its own
``sysconfig.get_paths()`` is asked over a subprocess (the target may be Python 3.7 while
envforge runs on 3.12), and a venv's answer kept in envforge's cache for the next venv of the
same base interpreter (``target_scheme``'s memo). Every wheel's sha256 is checked before the
first one is installed, and a wheel whose tags the target cannot use is refused rather than
half-installed. No bytecode is compiled: this interpreter's would not fit the target's.

Given envforge's cache, each wheel is unzipped once into it (``host/unpacked.py``) and
installed by hard-linking its files from there on a few threads; only what depends on the target
is written: entry-point scripts and ``#!python`` shebangs by ``installer``, INSTALLER and
RECORD from the entry's plan (``host/wheelplan.py``: its rows, sorted and spelled once).
"""

from __future__ import annotations

import base64
import contextlib
import functools
import hashlib
import json
import os
import warnings
import zipfile
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from itertools import chain
from pathlib import Path
from typing import BinaryIO, Literal, assert_never

from installer import install
from installer.destinations import SchemeDictionaryDestination
from installer.records import Hash, RecordEntry
from installer.sources import WheelFile
from installer.utils import Scheme
from installer.utils import parse_wheel_filename as installer_wheel_name
from packaging.tags import compatible_tags, cpython_tags
from packaging.utils import InvalidWheelFilename, parse_wheel_filename

from envforge.errors import ArtifactError, StepError
from envforge.host import proc
from envforge.host.archives import safe_member_name, sha256_file
from envforge.host.atomicfile import write_atomic
from envforge.host.cores import usable_cores
from envforge.host.filelink import link_file
from envforge.host.unpacked import UnpackedWheel, unpacked_wheel
from envforge.host.wheelplan import WheelPlan
from envforge.host.wheelremove import INSTALLER, remove_distribution
from envforge.platforms import Os, host_platform

INSTALLER_NAME = INSTALLER.encode("ascii")
_INSTALLER_SHA256 = base64.urlsafe_b64encode(hashlib.sha256(INSTALLER_NAME).digest()) \
    .decode("ascii").rstrip("=")  # RECORD's spelling, as installer's write_to_fs hashes
# Links and copies wait on the kernel, but each is queued, made and checked by Python: more
# threads than cores traded the GIL back and forth (ml30's 10,000 links on 2 cores: 8 threads
# 565 ms, 4 470 ms, 2 440 ms, 1 555 ms).
_MAX_THREADS = 8

# Runs in the target: stdlib only, Python 3.6+ syntax.
_SCHEME_SCRIPT = r"""
import json, os, sys, sysconfig
paths = sysconfig.get_paths()
print(json.dumps({
    "version": list(sys.version_info[:2]),
    "implementation": sys.implementation.name,
    "prefix": sys.prefix,
    "paths": paths,
    "headers": os.path.join(sys.prefix, "include", "site", "python%d.%d" % sys.version_info[:2]),
}))
"""


@dataclass(frozen=True)
class TargetScheme:
    """Where the target interpreter installs each kind of wheel file."""

    python: Path
    version: tuple[int, int]
    implementation: str
    prefix: Path
    purelib: Path
    platlib: Path
    scripts: Path
    data: Path
    headers: Path  # a folder per distribution goes below it, as pip does in a venv

    def scheme_dict(self, distribution: str) -> dict[str, str]:
        return {"purelib": str(self.purelib), "platlib": str(self.platlib),
                "scripts": str(self.scripts), "data": str(self.data),
                "headers": str(self.headers / distribution)}


@dataclass(frozen=True)
class WheelToInstall:
    path: Path
    sha256: str  # what the lock or the bundle's manifest says it must hash to


def target_scheme(python: Path, *, memo: Path | None = None) -> TargetScheme:
    """Ask ``python`` where it installs things (JSON over a subprocess). ``memo``: a folder of
    envforge's cache where a venv's answer is kept relative to its prefix, so that a new venv
    of the same base interpreter is not asked again (``_venv_key``: a Python start-up, 20-30
    ms of a warm apply's critical path)."""
    key = _venv_key(python) if memo is not None else None
    if memo is not None and key is not None:
        kept = _remembered_scheme(memo / f"{key}.json", python)
        if kept is not None:
            return kept
    done = proc.run([python, "-c", _SCHEME_SCRIPT], timeout=60)
    try:
        info = json.loads(done.stdout)
        paths = info["paths"]
        scheme = TargetScheme(
            python=python, version=(int(info["version"][0]), int(info["version"][1])),
            implementation=str(info["implementation"]), prefix=Path(info["prefix"]),
            purelib=Path(paths["purelib"]), platlib=Path(paths["platlib"]),
            scripts=Path(paths["scripts"]), data=Path(paths["data"]),
            headers=Path(info["headers"]))
    except (ValueError, KeyError, TypeError) as exc:
        raise StepError(f"{python} did not say where it installs packages ({exc}): "
                        f"{done.stdout.strip()[:500]}") from None
    if memo is not None and key is not None:
        _remember_scheme(memo / f"{key}.json", scheme)
    return scheme


_SCHEME_KEYS = ("purelib", "platlib", "scripts", "data", "headers")


def _venv_key(python: Path) -> str | None:
    """What a venv's answer rests on, for ``PREFIX/bin/python*`` beside ``PREFIX/pyvenv.cfg``
    (POSIX; elsewhere None: always asked): the base interpreter the link leads to, by path
    and stat (a rebuilt Python has another), the link's name and pyvenv.cfg's text (the
    same in every venv made from that base where it does not name the venv: Python 3.11's
    ``command`` line does, so such venvs are asked each time). The prefix itself is not in
    it: the answer is kept relative to it."""
    if host_platform().os is Os.WINDOWS or python.parent.name != "bin":
        return None
    try:
        config = (python.parent.parent / "pyvenv.cfg").read_text(encoding="utf-8")
        base = python.resolve()
        st = base.stat()
    except (OSError, UnicodeDecodeError):
        return None
    identity = [1, python.name, str(base), st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns,
                config]
    return hashlib.blake2b(json.dumps(identity).encode("utf-8"), digest_size=20).hexdigest()


def _remember_scheme(record: Path, scheme: TargetScheme) -> None:
    """Kept only where the answer's prefix is the venv's and every folder lies inside it;
    one that cannot be written costs the next apply a question."""
    prefix = scheme.python.parent.parent.resolve()
    if scheme.prefix.resolve() != prefix:
        return
    relative = {}
    for key in _SCHEME_KEYS:
        try:
            relative[key] = getattr(scheme, key).resolve().relative_to(prefix).as_posix()
        except ValueError:  # a folder outside the prefix
            return
    text = json.dumps({"version": list(scheme.version), "implementation": scheme.implementation,
                       "paths": relative})
    with contextlib.suppress(OSError):
        write_atomic(record, text.encode("utf-8"))


def _remembered_scheme(record: Path, python: Path) -> TargetScheme | None:
    """The kept answer for this venv, its folders joined to its prefix; None when there is
    none or it is not one ``_remember_scheme`` writes (a folder that would leave the prefix)."""
    try:
        info = json.loads(record.read_text(encoding="utf-8"))
        prefix = python.parent.parent
        folders = {}
        for key in _SCHEME_KEYS:
            inside = Path(str(info["paths"][key]))
            if inside.is_absolute() or os.pardir in inside.parts:
                return None
            folders[key] = prefix / inside
        major, minor = (int(v) for v in info["version"])
        return TargetScheme(python=python, version=(major, minor),
                            implementation=str(info["implementation"]), prefix=prefix,
                            purelib=folders["purelib"], platlib=folders["platlib"],
                            scripts=folders["scripts"], data=folders["data"],
                            headers=folders["headers"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


@functools.cache  # asked once a wheel
def accepted_tags(version: tuple[int, int]) -> frozenset[tuple[str, str]]:
    """(interpreter, abi) pairs a CPython of ``version`` installs; platforms are the lock's job."""
    major, minor = version
    abi = f"cp{major}{minor}{'m' if version < (3, 8) else ''}"
    tags = chain(cpython_tags(version, abis=[abi, "abi3", "none"], platforms=["any"]),
                 compatible_tags(version, f"cp{major}{minor}", platforms=["any"]))
    return frozenset((t.interpreter, t.abi) for t in tags)


def check_fits(wheel: Path, version: tuple[int, int]) -> tuple[str, str]:
    """The wheel's (distribution, version); refuse one the target's Python cannot import."""
    try:
        name, dist_version, _, tags = parse_wheel_filename(wheel.name)
    except InvalidWheelFilename as exc:
        raise ArtifactError(f"{wheel}: not a wheel file name ({exc})") from None
    accepted = accepted_tags(version)
    if not any((t.interpreter, t.abi) in accepted for t in tags):
        shown = ".".join(sorted({f"{t.interpreter}-{t.abi}" for t in tags}))
        raise ArtifactError(f"{wheel.name} is built for {shown}, which Python "
                            f"{version[0]}.{version[1]} cannot use")
    return str(name), str(dist_version)


def verify_wheels(wheels: Sequence[WheelToInstall]) -> None:
    """Every wheel present and matching its sha256, before anything is installed."""
    for wheel in wheels:
        if not wheel.path.is_file():
            raise ArtifactError(f"{wheel.path}: no such wheel")
        found = sha256_file(wheel.path)
        if found != wheel.sha256:
            raise ArtifactError(f"{wheel.path}: sha256 {found} does not match the expected "
                                f"{wheel.sha256}; refusing to install it")


def install_wheels(wheels: Sequence[WheelToInstall], python: Path, *,
                   cache: Path | None = None, schemes: Path | None = None,
                   skipped: Counter[str] | None = None) -> list[str]:
    """Install each wheel into ``python``'s environment, replacing any other installed version
    of the same distribution; returns ``name==version`` per wheel, in order. With ``cache``
    (envforge's), wheels are unpacked there once and copied from there: an entry is made
    only from an archive hashed and scanned as here, so one already made needs neither;
    its files are hard-linked (read-only) into the environment where they can be. Members
    under ``__pycache__/`` are not installed, as installer skips them: an entry's are counted
    per distribution in ``skipped`` where given (PyPI's PyYAML 5.4.1 wheels carry 17), else
    warned of one by one, as installer warns. ``schemes``: ``target_scheme``'s memo."""
    if cache is None:
        verify_wheels(wheels)
        for wheel in wheels:
            scan_wheel(wheel.path)
    kind = _script_kind()
    installed = []
    threads = min(_MAX_THREADS, max(2, usable_cores()))
    with ThreadPoolExecutor(threads) as pool:
        # The target's answer (a Python start-up) while the entries are stat-checked.
        asked = pool.submit(target_scheme, python, memo=schemes)
        checked = [pool.submit(unpacked_wheel, cache, w.path, w.sha256) for w in wheels] \
            if cache is not None else []
        scheme = asked.result()
        named = [(w, *check_fits(w.path, scheme.version)) for w in wheels]
        entries = [f.result() for f in checked] if cache is not None else [None] * len(wheels)
        for _, name, _ in named:  # all first: an old version's RECORD may name a new file
            remove_distribution(scheme, name)
        linker = _Linker(pool, threads)
        for (wheel, name, version), entry in zip(named, entries, strict=True):
            destination = _Destination(
                scheme.scheme_dict(name), interpreter=str(python), script_kind=kind,
                overwrite_existing=True,  # a re-run after a crash mid-install converges
                linker=linker)
            if entry is None:
                with WheelFile.open(wheel.path) as source:
                    install(source, destination, {"INSTALLER": INSTALLER_NAME})
            else:
                _install_entry(entry, wheel.path, destination, skipped)
            installed.append(f"{name}=={version}")
        linker.finish()
    return installed


class _Linker:
    """Links cache entries' members on a pool while installer reads the next wheel, and
    writes each wheel's RECORD once every link is made (a crash leaves no RECORD over
    missing files). A target already queued waits for the queue first, so a later wheel's
    file replaces an earlier one's, as installing in order does."""

    def __init__(self, pool: ThreadPoolExecutor, threads: int) -> None:
        self.pool, self.threads = pool, threads
        self.queued: set[str] = set()
        self._pending: list[Future[None]] = []
        self._records: list[Callable[[], None]] = []
        self._folders: set[str] = set()

    def submit(self, todo: list[tuple[str, str, bool]]) -> None:
        if not todo:
            return
        size = -(-len(todo) // (self.threads * 4))  # runs of neighbours share their folders
        self._pending += [self.pool.submit(self._place, todo[i:i + size])
                          for i in range(0, len(todo), size)]

    def _place(self, batch: list[tuple[str, str, bool]]) -> None:
        """On a worker: folders too, as a mkdir can take milliseconds on a busy disk."""
        for source, target, executable in batch:
            folder = target.rpartition("/")[0]
            if folder not in self._folders:
                os.makedirs(folder, exist_ok=True)  # noqa: PTH103 (strings, as below)
                self._folders.add(folder)
            link_file(source, target, executable=executable)

    def drain(self) -> None:
        pending, self._pending = self._pending, []
        for future in pending:
            future.result()
        self.queued.clear()

    def record_later(self, write: Callable[[], None]) -> None:
        self._records.append(write)

    def finish(self) -> None:
        self.drain()
        for write in self._records:
            write()
        self._records.clear()


def _script_kind() -> Literal["posix", "win-amd64"]:
    """installer's launcher kind for console scripts on this host (an .exe on Windows)."""
    host = host_platform()
    match host.os:
        case Os.WINDOWS:
            return "win-amd64"
        case Os.LINUX:
            return "posix"
        case _:
            assert_never(host.os)


def scan_wheel(path: Path) -> None:
    """Refuse a wheel with a member that would land outside its scheme folder (``../``,
    absolute, over-long), before any wheel is installed: installer would raise mid-way."""
    try:
        with zipfile.ZipFile(path) as zf:
            names = zf.namelist()
    except (zipfile.BadZipFile, OSError) as exc:
        raise ArtifactError(f"{path}: not a readable wheel ({exc})") from None
    for name in names:
        safe_member_name(path, name)


def install_wheels_into(wheels: Sequence[WheelToInstall], folder: Path,
                        version: tuple[int, int]) -> list[str]:
    """Install pure wheels into a plain folder (a ``--target`` for PYTHONPATH), for a Python
    of ``version``; nothing is installed unless every wheel is verified and fits."""
    verify_wheels(wheels)
    named = [(w, *check_fits(w.path, version)) for w in wheels]
    kind = _script_kind()
    scheme = {"purelib": str(folder), "platlib": str(folder), "scripts": str(folder / "bin"),
              "data": str(folder / "data"), "headers": str(folder / "include")}
    installed = []
    for wheel, name, dist_version in named:
        destination = _Destination(scheme, interpreter="python", script_kind=kind,
                                   overwrite_existing=True)
        with WheelFile.open(wheel.path) as source:
            install(source, destination, {"INSTALLER": INSTALLER_NAME})
        installed.append(f"{name}=={dist_version}")
    return installed


def _install_entry(entry: UnpackedWheel, wheel: Path, destination: _Destination,
                   skipped: Counter[str] | None = None) -> None:
    """installer's ``install()`` for an unpacked cache entry, without its per-file machinery:
    the entry's plan (``host/wheelplan.py``, made with the entry from the hash-checked
    archive) holds what WHEEL and entry_points.txt say and every member's RECORD row, so
    members are queued for linking by path and only what depends on the target is written
    (entry-point and ``.data/scripts`` scripts, whose shebang names the interpreter;
    INSTALLER and RECORD once the links land). Where each member goes, what RECORD holds
    and in what order are installer's own."""
    plan = entry.plan
    if plan is None:
        raise ArtifactError(f"{wheel}: its cache entry has no install plan")
    distribution = installer_wheel_name(wheel.name)[0]
    if skipped is None:
        for path in plan.pycache:
            warnings.warn(f"Skip installing {path} from {distribution}: files in a "
                          "__pycache__ directory should not be in a wheel", RuntimeWarning,
                          stacklevel=2)
    elif plan.pycache:
        skipped[distribution] += len(plan.pycache)
    scripts = [destination.write_script(name=name, module=module, attr=attr, section=section)
               for name, module, attr, section in plan.scripts]
    data, done = [], 0
    for member in plan.data:  # in the archive's order, as installer writes them
        destination.link_members(plan.root, entry, range(done, member.index), plan.unlinked)
        done = member.index + 1
        i = member.index
        source = f"{entry.root}/{entry.paths[i]}"
        if member.scheme == "scripts":  # a #!python shebang names the target
            with open(source, "rb") as real:
                data.append(destination.write_file(member.scheme, member.inside, real,
                                                   i in entry.executable))
        else:
            data.append(destination.link(member.scheme, member.inside, source,
                                         (entry.sha256[i], entry.sizes[i],
                                          i in entry.executable)))
    destination.link_members(plan.root, entry, range(done, len(entry.paths)), plan.unlinked)
    destination.finish_entry(plan, scripts, data)


@dataclass
class _Destination(SchemeDictionaryDestination):
    """Scripts are made executable whatever mode the archive stored, as pip does; a file
    already there is unlinked, never written through (it may be a link); members of a cache
    entry are linked by ``linker`` (``link``, ``link_members``), which writes INSTALLER and
    RECORD once they are (``finish_entry``)."""

    linker: _Linker | None = None
    _todo: list[tuple[str, str, bool]] = field(default_factory=list)  # source, target, +x

    def write_file(self, scheme: Scheme, path: str | os.PathLike[str], stream: BinaryIO,
                   is_executable: bool) -> RecordEntry:
        return super().write_file(scheme, path, stream, is_executable or scheme == "scripts")

    def link(self, scheme: Scheme, path: str, source: str,
             member: tuple[str, int, bool]) -> RecordEntry:
        """Queue a cache entry's member (its sha256, size, whether executable) for
        ``linker``; its RECORD row is the manifest's."""
        assert self.linker is not None
        # Strings, not Paths: pathlib's parsing was a second of ml30's 10,000 files. The
        # entry's member names were made safe (relative, no "..") when it was made.
        target = f"{self.scheme_dict[scheme]}/{path}"
        self._wait_for(target)
        sha256, size, executable = member
        self._todo.append((source, target, executable))
        self.linker.queued.add(target)
        return RecordEntry(path, Hash("sha256", sha256), size)

    def link_members(self, scheme: Scheme, entry: UnpackedWheel, indexes: range,
                     skip: frozenset[int]) -> None:
        """Queue the entry's members at ``indexes`` (less ``skip``) for ``linker``, each to
        its own path in ``scheme``: ``link`` without a RECORD row (the plan has them)."""
        assert self.linker is not None
        root, folder, executable = str(entry.root), self.scheme_dict[scheme], entry.executable
        todo = [(f"{root}/{path}", f"{folder}/{path}", i in executable)
                for i, path in enumerate(entry.paths[indexes.start:indexes.stop], indexes.start)
                if i not in skip]
        targets = [target for _, target, _ in todo]
        if not self.linker.queued.isdisjoint(targets):
            self._land_queued()
        self.linker.queued.update(targets)
        self._todo += todo

    def _wait_for(self, target: str) -> None:
        """A target an earlier link is queued for: let every queued link land first."""
        if self.linker is not None and target in self.linker.queued:
            self._land_queued()

    def _land_queued(self) -> None:
        assert self.linker is not None
        todo, self._todo = self._todo, []
        self.linker.submit(todo)
        self.linker.drain()

    def write_to_fs(self, scheme: Scheme, path: str, stream: BinaryIO,
                    is_executable: bool) -> RecordEntry:
        self._wait_for(f"{self.scheme_dict[scheme]}/{path}")
        target = self._path_with_destdir(scheme, path)
        if self.overwrite_existing and (target.is_symlink() or target.exists()):
            target.unlink()
        return super().write_to_fs(scheme, path, stream, is_executable)

    def finish_entry(self, plan: WheelPlan, scripts: Sequence[RecordEntry],
                     data: Sequence[RecordEntry]) -> None:
        """Submit the entry's queued links; INSTALLER and RECORD are written once every
        link has landed (``_Linker.finish``)."""
        assert self.linker is not None
        todo, self._todo = self._todo, []
        self.linker.submit(todo)
        info = f"{self.scheme_dict[plan.root]}/{plan.dist_info}"
        installer = RecordEntry(f"{plan.dist_info}/INSTALLER",
                                Hash("sha256", _INSTALLER_SHA256), len(INSTALLER_NAME))
        record = plan.record(self.scheme_dict, scripts, data, installer)
        self.linker.record_later(partial(_write_new, f"{info}/INSTALLER", INSTALLER_NAME))
        self.linker.record_later(partial(_write_new, f"{info}/RECORD", record))


def _write_new(path: str, data: bytes) -> None:
    """Write ``data`` into a new file at ``path`` as installer's ``write_to_fs`` does (mode
    0666 less the umask); a file there is unlinked, never written through (it may be a
    link). A system call a step: these are two files a wheel."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags, 0o666)
    except FileExistsError:
        os.unlink(path)  # noqa: PTH108 (a str, as the links' are)
        fd = os.open(path, flags, 0o666)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)
