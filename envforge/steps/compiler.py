"""The C++ compiler a framework builds its C code with: found on Linux, installed on Windows.

Linux (``kind = "gcc"``): ``g++`` (or the one the framework's section names:
``FrameworkPack.compiler_need``) must be on the environment's PATH; nothing is
installed, a missing one fails with the command that installs it.
Windows (``kind = "mingw-w64"``): the locked MinGW-w64 archive (a .7z) is fetched or taken
from the cache, a bundle or ``--artifact compiler=PATH``, checked against the lock's
sha256, unpacked safely into envforge's tools folder and accepted only if its layout
shows the locked thread and exception models. The folder is adopted by the journal, so
rollback removes it. ``mingw_bin`` says where its ``g++.exe`` lives, for the user PATH
and for a framework's own setting (Theano's ``.theanorc`` ``cxx``).
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path, PurePath, PureWindowsPath
from typing import Any

from envforge.errors import ArtifactError, OfflineError, StepError, ToolError
from envforge.host import proc
from envforge.host.archives import (
    check_unpacked_size,
    refuse_member,
    safe_member_name,
)
from envforge.host.fetch import FileRef
from envforge.journal import Journal, Transaction
from envforge.lockfile import LockedArtifact
from envforge.platforms import PLATFORMS, Os
from envforge.spec import Platform
from envforge.steps.base import (
    Change,
    CompilerNeed,
    StepContext,
    state_of,
    supplied_artifact,
)

MINGW_TARGET = "x86_64-w64-mingw32"
MINGW_TOP = "mingw64"  # the archive's one top folder (x86_64 builds)
MARKER = ".envforge-artifact"  # "<sha256>  <filename>" of the archive the tree came from

# mingw-builds' names: x86_64-8.1.0-release-posix-seh-rt_v6-rev0.7z
_MINGW_BUILDS = re.compile(r"^x86_64-(?P<version>\d+\.\d+\.\d+)-release-(?P<threads>posix|win32)"
                           r"-(?P<exceptions>seh|sjlj|dwarf)-rt_v\d+-rev\d+\.7z$")
# libgcc's DLL is named after the exception model it unwinds with.
_EH_DLL = {"seh": "libgcc_s_seh-1.dll", "sjlj": "libgcc_s_sjlj-1.dll",
           "dwarf": "libgcc_s_dw2-1.dll"}
# libstdc++'s configure defines this only where gthreads has C++11 threads: the posix model
# (winpthreads); GCC < 13 built with the win32 model lacks it, hence no std::thread there.
_GTHREADS = re.compile(r"^[ \t]*#[ \t]*define[ \t]+_GLIBCXX_HAS_GTHREADS\b", re.MULTILINE)


# -- which MinGW-w64, and where ---------------------------------------------------------

@dataclass(frozen=True)
class MingwVariant:
    version: str
    threads: str
    exceptions: str

    @property
    def folder(self) -> str:
        return f"mingw-w64-{self.version}-{self.threads}-{self.exceptions}"

    def __str__(self) -> str:
        return f"{self.version} ({self.threads} threads, {self.exceptions} exceptions)"


def mingw_artifact(ctx: StepContext) -> LockedArtifact:
    found = next((a for a in ctx.lock.artifacts if a.role == "compiler"), None)
    if found is None:
        raise StepError("the lock has no MinGW-w64 archive (role compiler); run `envforge lock`")
    return found


def mingw_variant(ctx: StepContext) -> MingwVariant:
    """The locked archive's variant, from its mingw-builds name; the spec must agree with it."""
    artifact = mingw_artifact(ctx)
    match = _MINGW_BUILDS.match(artifact.filename)
    if match is None:
        raise StepError(f"cannot tell the MinGW-w64 variant from {artifact.filename!r} "
                        "(expected x86_64-<version>-release-<threads>-<exceptions>-rt_vN-revN.7z)")
    variant = MingwVariant(match["version"], match["threads"], match["exceptions"])
    compiler = ctx.pspec.compiler
    if compiler is not None:
        for what, wanted, locked in (("version", compiler.version, variant.version),
                                     ("threads", compiler.threads, variant.threads),
                                     ("exceptions", compiler.exceptions, variant.exceptions)):
            if wanted is not None and wanted != locked and not (
                    what == "version" and locked.startswith(f"{wanted}.")):
                raise StepError(f"the spec asks for MinGW-w64 {what} = {wanted!r} but the lock "
                                f"holds {artifact.filename} ({locked}); run `envforge lock`")
    return variant


def mingw_home(ctx: StepContext) -> Path:
    """The install folder: ``<data>/tools/mingw-w64-8.1.0-posix-seh`` (holds ``mingw64/``)."""
    return ctx.dirs.data / "tools" / mingw_variant(ctx).folder


def mingw_bin(ctx: StepContext) -> PurePath:
    """MinGW's bin folder as a Windows path, whatever the host, for PATH and ``cxx``."""
    return PureWindowsPath(mingw_home(ctx)) / MINGW_TOP / "bin"


def mingw_gxx(ctx: StepContext) -> PurePath:
    return mingw_bin(ctx) / "g++.exe"


def check_mingw_tree(home: Path, variant: MingwVariant) -> list[str]:
    """What is wrong with an unpacked MinGW-w64 for ``variant``; empty when it is right.

    Thread model: posix ships ``libwinpthread-1.dll`` and its ``c++config.h`` defines
    ``_GLIBCXX_HAS_GTHREADS``. Exception model: libgcc's DLL name (``libgcc_s_seh-1.dll``).
    """
    top = home / MINGW_TOP
    bin_dir = top / "bin"
    gcc_lib = top / "lib" / "gcc" / MINGW_TARGET
    problems: list[str] = []
    if not (bin_dir / "g++.exe").is_file():
        problems.append(f"no {MINGW_TOP}/bin/g++.exe")
    if not (gcc_lib / variant.version).is_dir():
        found = sorted(p.name for p in gcc_lib.iterdir()) if gcc_lib.is_dir() else []
        problems.append(f"no {MINGW_TOP}/lib/gcc/{MINGW_TARGET}/{variant.version}/ "
                        f"(gcc versions found: {', '.join(found) or 'none'})")
    config = (gcc_lib / variant.version / "include" / "c++" / MINGW_TARGET / "bits" /
              "c++config.h")
    has_gthreads = config.is_file() and bool(_GTHREADS.search(
        config.read_text(encoding="utf-8", errors="replace")))
    pthread_dll = (bin_dir / "libwinpthread-1.dll").is_file()
    if variant.threads == "posix" and not (has_gthreads and pthread_dll):
        missing = [what for what, ok in (
            ("bin/libwinpthread-1.dll", pthread_dll),
            (f"_GLIBCXX_HAS_GTHREADS in {config.relative_to(home).as_posix()}", has_gthreads))
            if not ok]
        problems.append(f"not the posix thread model: no {' and no '.join(missing)}")
    if variant.threads == "win32" and has_gthreads:
        problems.append("not the win32 thread model: c++config.h defines _GLIBCXX_HAS_GTHREADS")
    models = sorted(m for m, dll in _EH_DLL.items() if (bin_dir / dll).is_file())
    if models != [variant.exceptions]:
        problems.append(f"not the {variant.exceptions} exception model: wanted bin/"
                        f"{_EH_DLL[variant.exceptions]}, found {', '.join(models) or 'none'}")
    return problems


# -- .7z, unpacked safely -----------------------------------------------------------------

_DEVICE_NAMES = {"con", "prn", "aux", "nul", *(f"{p}{n}" for p in ("com", "lpt")
                                             for n in range(1, 10))}


def _safe_name(archive: Path, raw: str) -> str:
    """The rules of host/archives.py, plus Windows' own: no ``:`` streams, no device names."""
    name = safe_member_name(archive, raw)
    for part in name.split("/"):
        if ":" in part or part.split(".")[0].rstrip(" ").casefold() in _DEVICE_NAMES:
            raise refuse_member(archive, raw, "not a plain Windows file name")
    return name


def scan_7z(archive: Path, files: Iterable[Any]) -> list[str]:
    """Every member's safe name, or ArtifactError naming the first bad one.

    Links of any kind are refused, not resolved: MinGW's archives are made on Windows
    and hold none, and reading a 7z link's target would mean unpacking it first.
    """
    names: dict[str, bool] = {}  # name -> is a folder
    for member in files:
        raw = str(member.filename)
        name = _safe_name(archive, raw)
        if member.is_symlink or member.is_junction:
            raise refuse_member(archive, raw, "a link (symbolic link or junction)")
        fmt = member.st_fmt
        if member.is_socket or (fmt is not None and fmt not in (stat.S_IFREG, stat.S_IFDIR)):
            raise refuse_member(archive, raw, "device file, FIFO or other special file")
        mode = member.posix_mode
        if mode is not None and mode & (stat.S_ISUID | stat.S_ISGID):
            raise refuse_member(archive, raw, "set-uid or set-gid bit")
        if name in names:
            raise refuse_member(archive, raw, "appears twice")
        names[name] = bool(member.is_directory)
    for name in names:
        parts = name.split("/")
        for depth in range(1, len(parts)):
            if names.get("/".join(parts[:depth])) is False:
                raise refuse_member(archive, name, f"{'/'.join(parts[:depth])} is a file")
    return list(names)


def extract_7z(archive: Path, dest: Path) -> list[str]:
    """Unpack a .7z into ``dest`` (new or empty) after scanning every member; returns the names.

    Files come out writable by their owner, so the tree can be removed again on Windows.
    """
    try:
        import py7zr
        from py7zr.exceptions import AbsolutePathError, ArchiveError, PasswordRequired
    except ImportError:
        raise StepError("unpacking MinGW-w64's .7z needs py7zr: pip install py7zr") from None
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise ArtifactError(f"cannot unpack {archive} into {dest}: it is not an empty folder")
    try:
        with py7zr.SevenZipFile(archive, "r") as sz:
            names = scan_7z(archive, sz.files)
            check_unpacked_size(archive, archive.stat().st_size,
                                sum(int(f.uncompressed or 0) for f in sz.files))
            sz.extractall(path=dest)
    except (ArchiveError, AbsolutePathError, PasswordRequired, EOFError, ValueError,
            KeyError) as exc:
        raise ArtifactError(f"{archive}: damaged or unsupported 7z archive ({exc})") from None
    for root, dirs, files in os.walk(dest):
        for name in (*dirs, *files):
            path = Path(root) / name
            st = path.lstat()
            if stat.S_ISLNK(st.st_mode):  # the scan refused links; never trust one that appears
                raise ArtifactError(f"{archive}: unpacking made a link at {path}")
            path.chmod(stat.S_IMODE(st.st_mode) | (stat.S_IRWXU if stat.S_ISDIR(st.st_mode)
                                                   else stat.S_IRUSR | stat.S_IWUSR))
    return names


# -- the host's gcc -----------------------------------------------------------------------

@dataclass(frozen=True)
class HostCompiler:
    path: Path
    version: str


def compiler_need(ctx: StepContext) -> CompilerNeed | None:
    """The first mounted pack's need, if it has one."""
    return next((need for pack in ctx.registry.active(ctx.pspec.packs)
                 if (need := pack.compiler_need(ctx.pspec)) is not None), None)


def find_host_gxx(ctx: StepContext) -> HostCompiler:
    """The framework's compiler setting or ``g++``, on the PATH of ``ctx.environ``, with its
    version."""
    need = compiler_need(ctx)
    wanted = (need.cxx if need is not None else None) or "g++"
    found = shutil.which(wanted, path=ctx.environ.get("PATH", ""))
    if found is None:
        who = (f"{need.framework} compiles its C code with it" if need
               else "the C code is compiled with it")
        setting = f" or set {need.setting} in the spec to its full path" if need else ""
        raise StepError(
            f"{wanted} not found on PATH ({ctx.environ.get('PATH', '')!r}); {who}. Install it "
            "(Debian/Ubuntu: `sudo apt-get install g++`; Fedora/RHEL: `sudo dnf install gcc-c++`)"
            f"{setting}")
    try:
        # -dumpfullversion is gcc >= 7; older ones ignore it and answer -dumpversion.
        done = proc.run([found, "-dumpfullversion", "-dumpversion"], env=ctx.environ, timeout=60)
    except ToolError as exc:
        raise StepError(f"{found} does not answer like g++: {exc}") from None
    version = done.stdout.strip()
    if not re.fullmatch(r"\d+(\.\d+)*", version):
        raise StepError(f"{found} -dumpfullversion printed {version!r}, not a gcc version")
    return HostCompiler(Path(found), version)


def gxx_search_paths(ctx: StepContext) -> list[str]:
    """What ``find_host_gxx`` reads to find the compiler: the PATH folders up to the one that
    has it (one added to an earlier folder would win) and each link from it to the
    compiler; the no-op stamp watches them."""
    from envforge.host.noopstamp import link_chain

    need = compiler_need(ctx)
    wanted = (need.cxx if need is not None else None) or "g++"
    found: list[str] = []
    for folder in ctx.environ.get("PATH", "").split(os.pathsep):
        found.append(folder)
        candidate = Path(folder, wanted)
        if candidate.is_file() and os.access(candidate, os.X_OK):
            break
    else:
        return found
    return [*found, *link_chain(str(candidate))]


def gcc_limit_finding(gcc_version: str, cuda: str, platform: Platform,
                      need: CompilerNeed | None = None) -> str | None:
    """A warning when nvcc of ``cuda`` refuses this gcc as its host compiler; None if fine
    (``need``: the framework's, whose note says why it is not affected)."""
    from envforge.knowledge import max_host_gcc

    limit = max_host_gcc(cuda, platform)
    major = int(gcc_version.split(".")[0])
    if limit is None or major <= limit.value:
        return None
    note = f": {need.nvcc_note}" if need is not None and need.nvcc_note else ""
    return (f"g++ {gcc_version} is newer than gcc {limit.value}, the newest nvcc of CUDA {cuda} "
            f"accepts (source: {limit.source}); this matters only where code is built with "
            f"nvcc{note}")


# -- the step -----------------------------------------------------------------------------

class CompilerStep:
    """``kind = "gcc"``: check the host's g++; ``kind = "mingw-w64"``: install the locked one."""

    name = "compiler"

    def __init__(self) -> None:
        self._warned: set[str] = set()

    def describe(self, ctx: StepContext) -> tuple[Change, ...]:
        if self._kind(ctx) == "gcc":
            self._check_gcc(ctx)
            return ()
        artifact = mingw_artifact(ctx)
        variant = mingw_variant(ctx)
        home = mingw_home(ctx)
        if _installed(home, artifact, variant):
            return ()
        if os.path.lexists(home) and not _ours(ctx, home):
            raise StepError(f"{home} already exists and envforge did not create it; move it away "
                            "so envforge can unpack the locked MinGW-w64 there")
        archive = self._archive(ctx, artifact, fetch=False)
        where = str(archive) if archive is not None else f"download {artifact.url}"
        before = state_of(home)
        return (Change(action="create" if before is None else "replace", target=str(home),
                       before=before, after=f"sha256:{artifact.sha256}",
                       detail=f"MinGW-w64 {variant} from {artifact.filename} ({where})"),)

    def observe(self, ctx: StepContext) -> str | None:
        """MinGW's folder as the plan saw it (the step writes outside the prefix)."""
        return state_of(mingw_home(ctx)) if self._kind(ctx) == "mingw-w64" else None

    def apply(self, ctx: StepContext, tx: Transaction) -> None:
        if self._kind(ctx) == "gcc":
            self._check_gcc(ctx)
            return
        artifact = mingw_artifact(ctx)
        variant = mingw_variant(ctx)
        home = mingw_home(ctx)
        if _installed(home, artifact, variant):
            return
        archive = self._archive(ctx, artifact, fetch=True)
        assert archive is not None
        # Everything is checked in a temporary folder first: a refused archive changes nothing.
        with tempfile.TemporaryDirectory(prefix="envforge-mingw-") as tmp:
            staged = Path(tmp) / "tree"
            extract_7z(archive, staged)
            problems = check_mingw_tree(staged, variant)
            if problems:
                raise ArtifactError(f"{archive}: not MinGW-w64 {variant}: {'; '.join(problems)}")
            (staged / MARKER).write_text(f"{artifact.sha256}  {artifact.filename}\n",
                                         encoding="utf-8")
            tx.adopt_tree(home)  # refuses a folder this journal did not make
            if os.path.lexists(home):
                # Ours (adopt_tree said so), left incomplete by a crash: rollback would delete
                # it whole anyway, so backing up each file first would only cost time.
                shutil.rmtree(home)
            shutil.move(staged, home)

    @staticmethod
    def _kind(ctx: StepContext) -> str:
        compiler = ctx.pspec.compiler
        if compiler is None:
            raise StepError("the spec has no [compiler] section")
        if compiler.kind == "mingw-w64" and PLATFORMS[ctx.platform].os is not Os.WINDOWS:
            raise StepError(f"MinGW-w64 is a Windows compiler; {ctx.platform} uses kind = \"gcc\"")
        return compiler.kind

    def _check_gcc(self, ctx: StepContext) -> None:
        gxx = find_host_gxx(ctx)
        cuda = ctx.pspec.cuda
        if cuda is None or not cuda.exact:
            return
        finding = gcc_limit_finding(gxx.version, cuda.number, ctx.platform, compiler_need(ctx))
        if finding is not None and finding not in self._warned:
            self._warned.add(finding)
            ctx.ui.warn(finding)

    @staticmethod
    def _archive(ctx: StepContext, artifact: LockedArtifact, *, fetch: bool) -> Path | None:
        """A verified local copy; None when it is still to be downloaded and ``fetch`` is off."""
        supplied = supplied_artifact(ctx, "compiler", artifact.sha256)
        if supplied is not None:
            return supplied
        ref = FileRef(url=artifact.url or "", sha256=artifact.sha256, filename=artifact.filename,
                      size=artifact.size)
        try:
            return ctx.sources.obtain(ctx, ref, offline=True)
        except OfflineError:
            if ctx.offline or ctx.bundle is not None:
                raise
        if artifact.url is None:
            raise ArtifactError(f"{artifact.filename} has no download address in the lock; pass "
                                f"--artifact compiler=PATH/{artifact.filename}")
        if not fetch:
            return None
        with ctx.ui.progress(f"downloading {artifact.filename}", total=artifact.size) as hook:
            return ctx.sources.obtain(ctx, ref, progress=hook.advance)


def _installed(home: Path, artifact: LockedArtifact, variant: MingwVariant) -> bool:
    marker = home / MARKER
    if home.is_symlink() or not marker.is_file():
        return False
    recorded = marker.read_text(encoding="utf-8").split()
    return recorded[:1] == [artifact.sha256] and not check_mingw_tree(home, variant)


def _ours(ctx: StepContext, home: Path) -> bool:
    first = Journal(ctx.state_dir).original(home)
    return first is not None and (first.op == "created" or first.kind == "absent")
