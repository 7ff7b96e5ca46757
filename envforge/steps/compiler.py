"""The C++ compiler a framework builds its C code with: found on Linux, installed on Windows.

Linux (``kind = "gcc"``): ``g++`` (or the one the framework's section names:
``FrameworkPack.compiler_need``) must be on the environment's PATH; nothing is
installed, a missing one fails with the command that installs it.
Windows (``kind = "mingw-w64"``): the locked MinGW-w64 archive (a .7z) is fetched or taken
from the cache, a bundle or ``--artifact compiler=PATH``, checked against the lock's
sha256, unpacked safely into envforge's tools folder and accepted only if its layout
shows the locked thread and exception models. The folder is adopted by the journal, so
rollback removes it. Which MinGW-w64 and where: steps/mingw.py; the .7z is unpacked by
host/sevenzip.py.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from envforge.errors import ArtifactError, OfflineError, StepError, ToolError
from envforge.host import proc
from envforge.host.fetch import FileRef
from envforge.host.sevenzip import extract_7z
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
from envforge.steps.mingw import (
    MARKER,
    MingwVariant,
    check_mingw_tree,
    mingw_artifact,
    mingw_home,
    mingw_variant,
)

# -- the host's gcc -----------------------------------------------------------------------

@dataclass(frozen=True)
class HostCompiler:
    path: Path
    version: str


def compiler_need(ctx: StepContext) -> CompilerNeed | None:
    """The first mounted pack's need, if it has one."""
    return next((need for pack in ctx.registry.locked(ctx.lock.expect.packs)
                 if (need := pack.compiler_need(ctx.lock.expect)) is not None), None)


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
        compiler = ctx.inputs.compiler
        if compiler is None:
            raise StepError("the lock has no compiler (the spec no [compiler] section)")
        if compiler.kind == "mingw-w64" and PLATFORMS[ctx.platform].os is not Os.WINDOWS:
            raise StepError(f"MinGW-w64 is a Windows compiler; {ctx.platform} uses kind = \"gcc\"")
        return compiler.kind

    def _check_gcc(self, ctx: StepContext) -> None:
        gxx = find_host_gxx(ctx)
        cuda = ctx.cuda
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
