"""The compiler step: the host's real g++ on Linux; real .7z archives in MinGW-w64's layout."""

from __future__ import annotations

import hashlib
import io
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path, PureWindowsPath

import py7zr
import pytest
from rich.console import Console

from envforge.bundle.sources import LockedSources
from envforge.envlayout import layout_for
from envforge.errors import ArtifactError, OfflineError, StepError
from envforge.host.fetch import FileRef, cache_path
from envforge.journal import Journal, Transaction, rollback
from envforge.lockfile import ApplyInputs, Expectations, LockedArtifact, PlatformLock
from envforge.packs.theano.expect import TheanoExpect
from envforge.paths import EnvforgeDirs
from envforge.spec import CompilerSection, Platform
from envforge.steps.base import Facts, StepContext
from envforge.steps.compiler import CompilerStep, gcc_limit_finding
from envforge.steps.mingw import (
    MARKER,
    MingwVariant,
    mingw_bin,
    mingw_home,
)
from envforge.ui import UI
from tests.testing.contexts import apply_step
from tests.testing.packs import REGISTRY
from tests.testing.trees import snapshot

MINGW_NAME = "x86_64-8.1.0-release-posix-seh-rt_v6-rev0.7z"
GCC_LIB = "mingw64/lib/gcc/x86_64-w64-mingw32/8.1.0"
CXXCONFIG = f"{GCC_LIB}/include/c++/x86_64-w64-mingw32/bits/c++config.h"
POSIX_SEH = MingwVariant("8.1.0", "posix", "seh")

# Stand-ins under the real names of x86_64-8.1.0-release-posix-seh-rt_v6-rev0.7z.
MINGW_FILES: dict[str, bytes] = {
    "mingw64/bin/g++.exe": b"MZ g++ 8.1.0",
    "mingw64/bin/gcc.exe": b"MZ gcc 8.1.0",
    "mingw64/bin/x86_64-w64-mingw32-g++.exe": b"MZ g++ 8.1.0",
    "mingw64/bin/libwinpthread-1.dll": b"MZ winpthreads",
    "mingw64/bin/libgcc_s_seh-1.dll": b"MZ libgcc seh",
    "mingw64/bin/libstdc++-6.dll": b"MZ libstdc++",
    f"{GCC_LIB}/libgcc.a": b"!<arch>\n",
    f"{GCC_LIB}/libgcc_eh.a": b"!<arch>\n",
    CXXCONFIG: b"#ifndef _GLIBCXX_CXX_CONFIG_H\n#define _GLIBCXX_CXX_CONFIG_H 1\n"
               b"/* Define if gthreads library is available. */\n"
               b"#define _GLIBCXX_HAS_GTHREADS 1\n#endif\n",
    "mingw64/x86_64-w64-mingw32/include/windows.h": b"/* windows.h */\n",
    "mingw64/x86_64-w64-mingw32/lib/libwinpthread.dll.a": b"!<arch>\n",
}


def mingw_7z(path: Path, files: Mapping[str, bytes | None] | None = None,
             edit: Callable[[py7zr.SevenZipFile], None] | None = None,
             filters: list[dict[str, int]] | None = None) -> Path:
    """A real .7z of a MinGW-shaped folder (folders stored too); None in ``files`` drops one."""
    tree = path.parent / f"{path.name}.tree"
    for name, data in {**MINGW_FILES, **(files or {})}.items():
        if data is not None:
            (tree / name).parent.mkdir(parents=True, exist_ok=True)
            (tree / name).write_bytes(data)
    with py7zr.SevenZipFile(path, "w", filters=filters) as sz:
        sz.writeall(tree / "mingw64", "mingw64")
        if edit is not None:
            edit(sz)
    return path


def compiler_artifact(archive: Path, *, sha256: str | None = None, url: str | None = "file",
                      filename: str = MINGW_NAME) -> LockedArtifact:
    digest = sha256 or hashlib.sha256(archive.read_bytes()).hexdigest()
    return LockedArtifact(role="compiler", filename=filename, sha256=digest,
                          url=archive.as_uri() if url == "file" else url,
                          source="mingw-w64 builds on SourceForge / public recipes")


def make_ctx(tmp: Path, platform: Platform, *, compiler: CompilerSection | None = None,
             artifacts: tuple[LockedArtifact, ...] = (), environ: Mapping[str, str] | None = None,
             cuda: str | None = None, cuda_root: Path | None = None, path_scope: str = "env",
             supplied: Mapping[str, Path] | None = None, data: Path | None = None,
             cxx: str | None = None, ui: UI | None = None) -> StepContext:
    prefix = tmp / "prefix"
    return StepContext(
        platform=platform, prefix=prefix, environ=dict(environ or {}), home=tmp / "home",
        state_dir=tmp / "state", artifacts=dict(supplied or {}),
        lock=PlatformLock(python="3.7.16", environment="conda", artifacts=artifacts,
                          expect=Expectations(versions={}, device="cuda", float_x="float32",
                                              cuda=cuda, packs={"theano": TheanoExpect(
                                                  flags={"cxx": cxx} if cxx else {})}),
                          apply=ApplyInputs(compiler=compiler,
                                            path_scope=path_scope)),  # type: ignore[arg-type]
        layout=layout_for(platform, "conda", prefix, "3.7"),
        dirs=EnvforgeDirs(tmp / "cache", data or tmp / "data", tmp / "state"),
        sources=LockedSources(), ui=ui or UI(quiet=True), facts=Facts(cuda_root=cuda_root),
        registry=REGISTRY)


MINGW = CompilerSection(kind="mingw-w64", version="8.1.0", threads="posix", exceptions="seh")


def mingw_ctx(tmp: Path, archive: Path, *, artifact: LockedArtifact | None = None,
              compiler: CompilerSection = MINGW, supplied: Mapping[str, Path] | None = None,
              data: Path | None = None) -> StepContext:
    return make_ctx(tmp, "win-64", compiler=compiler,
                    artifacts=(artifact or compiler_artifact(archive),), supplied=supplied,
                    data=data)


def apply(step: CompilerStep, ctx: StepContext) -> Journal:
    return apply_step(step, ctx)


def captured_ui() -> tuple[UI, io.StringIO]:
    buffer = io.StringIO()
    return UI(quiet=True, err=Console(file=buffer, highlight=False, soft_wrap=True)), buffer


# -- Windows: MinGW-w64 from a .7z --------------------------------------------------------

def test_mingw_is_downloaded_checked_unpacked_and_rolled_back(tmp_path: Path) -> None:
    archive = mingw_7z(tmp_path / "upstream" / MINGW_NAME)
    ctx = mingw_ctx(tmp_path, archive)
    home = tmp_path / "data" / "tools" / "mingw-w64-8.1.0-posix-seh"
    assert mingw_home(ctx) == home
    step = CompilerStep()

    changes = step.describe(ctx)
    assert [(c.action, c.target, c.before) for c in changes] == [("create", str(home), None)]
    assert changes[0].after == f"sha256:{compiler_artifact(archive).sha256}"
    assert f"download {archive.as_uri()}" in changes[0].detail
    assert not (tmp_path / "data").exists() and not (tmp_path / "cache").exists()

    journal = apply(step, ctx)

    for name, data in MINGW_FILES.items():
        assert (home / name).read_bytes() == data, name
    assert (home / MARKER).read_text().split() == [compiler_artifact(archive).sha256, MINGW_NAME]
    ref_sha = compiler_artifact(archive).sha256
    assert (tmp_path / "cache" / "files" / ref_sha[:2] / ref_sha / MINGW_NAME).is_file()
    assert step.describe(ctx) == ()

    undone = rollback(journal)
    assert f"removed {home}" in undone
    assert not (tmp_path / "data").exists()


def test_bcj_filtered_archive_as_mingw_builds_packs_binaries(tmp_path: Path) -> None:
    # mingw-builds' archives show "BCJ LZMA2:26" for their executables in 7-Zip.
    archive = mingw_7z(tmp_path / "upstream" / MINGW_NAME, filters=[
        {"id": py7zr.FILTER_X86}, {"id": py7zr.FILTER_LZMA2, "preset": 7}])
    with py7zr.SevenZipFile(archive) as sz:
        assert "BCJ" in sz.archiveinfo().method_names
    ctx = mingw_ctx(tmp_path, archive)
    apply(CompilerStep(), ctx)
    assert (mingw_home(ctx) / "mingw64" / "bin" / "g++.exe").read_bytes() == b"MZ g++ 8.1.0"


def test_second_apply_changes_nothing(tmp_path: Path) -> None:
    ctx = mingw_ctx(tmp_path, mingw_7z(tmp_path / "upstream" / MINGW_NAME))
    step = CompilerStep()
    journal = apply(step, ctx)
    after_first = snapshot(tmp_path / "data")
    count = len(journal.entries())

    apply(step, ctx)

    assert snapshot(tmp_path / "data") == after_first
    assert [e.op for e in Journal(ctx.state_dir).entries()[count:]] == ["step-begin", "step-done"]


@pytest.mark.parametrize("source", ["cache", "bundle", "supplied"])
def test_mingw_from_a_local_copy_needs_no_network(tmp_path: Path, source: str) -> None:
    archive = mingw_7z(tmp_path / "upstream" / MINGW_NAME)
    artifact = compiler_artifact(archive, url=None)
    if source == "cache":
        ref = cache_path(tmp_path / "cache", _ref(artifact))
        ref.parent.mkdir(parents=True)
        ref.write_bytes(archive.read_bytes())
        ctx = replace(mingw_ctx(tmp_path, archive, artifact=artifact), offline=True)
    elif source == "bundle":
        ctx = replace(mingw_ctx(tmp_path, archive, artifact=artifact), bundle=archive.parent)
    else:
        ctx = mingw_ctx(tmp_path, archive, artifact=artifact, supplied={"compiler": archive})
    step = CompilerStep()
    (change,) = step.describe(ctx)
    assert change.action == "create"

    apply(step, ctx)

    assert (mingw_home(ctx) / "mingw64" / "bin" / "g++.exe").read_bytes() == b"MZ g++ 8.1.0"
    assert step.describe(ctx) == ()


def _ref(artifact: LockedArtifact) -> FileRef:
    return FileRef(url="", sha256=artifact.sha256, filename=artifact.filename)


def test_offline_without_a_copy_and_no_address_are_refused(tmp_path: Path) -> None:
    archive = mingw_7z(tmp_path / "upstream" / MINGW_NAME)
    with pytest.raises(OfflineError, match=re.escape(f"{MINGW_NAME} (sha256 ")):
        CompilerStep().describe(replace(mingw_ctx(tmp_path, archive), offline=True))
    no_url = mingw_ctx(tmp_path, archive, artifact=compiler_artifact(archive, url=None))
    with pytest.raises(ArtifactError, match=re.escape(f"--artifact compiler=PATH/{MINGW_NAME}")):
        CompilerStep().describe(no_url)


def test_tampered_cache_copy_is_refused_and_nothing_changes(tmp_path: Path) -> None:
    archive = mingw_7z(tmp_path / "upstream" / MINGW_NAME)
    artifact = compiler_artifact(archive)
    cached = cache_path(tmp_path / "cache", _ref(artifact))
    cached.parent.mkdir(parents=True)
    cached.write_bytes(archive.read_bytes() + b"\x00")  # one byte added after the lock
    ctx = mingw_ctx(tmp_path, archive, artifact=artifact)
    step = CompilerStep()

    with pytest.raises(ArtifactError, match="the cache copy was altered; refusing it"):
        step.describe(ctx)
    journal = Journal(ctx.state_dir)
    with pytest.raises(ArtifactError, match="the cache copy was altered; refusing it"):
        step.apply(ctx, Transaction(journal, step.name))
    assert journal.entries() == []
    assert not (tmp_path / "data").exists()


def test_tampered_download_is_refused_and_nothing_changes(tmp_path: Path) -> None:
    archive = mingw_7z(tmp_path / "upstream" / MINGW_NAME)
    artifact = compiler_artifact(archive)
    with open(archive, "ab") as handle:
        handle.write(b"\x00")  # the server's file changed after the lock was made
    ctx = mingw_ctx(tmp_path, archive, artifact=artifact)
    step = CompilerStep()
    journal = Journal(ctx.state_dir)

    with pytest.raises(ArtifactError, match=f"does not match the lock's {artifact.sha256}"):
        step.apply(ctx, Transaction(journal, step.name))

    assert journal.entries() == []
    assert not (tmp_path / "data").exists()
    assert not cache_path(tmp_path / "cache", _ref(artifact)).exists()


def _member(name: str) -> Callable[[py7zr.SevenZipFile], None]:
    # py7zr's public writers refuse such names; an attacker's writer does not.
    return lambda sz: sz._writestr(b"MZ evil", name)


def _link(tmp: Path, name: str, target: str) -> Callable[[py7zr.SevenZipFile], None]:
    def add(sz: py7zr.SevenZipFile) -> None:
        link = tmp / "evil-link"
        link.symlink_to(target)
        sz.write(link, name)
    return add


@pytest.mark.parametrize(("member", "why"), [
    ("mingw64/../../evil.dll", "'..' leads outside the folder"),
    ("/evil.dll", "absolute path"),
    ("C:/Windows/System32/evil.dll", "absolute path"),
    ("mingw64/bin/g++.exe:evil", "not a plain Windows file name"),
], ids=["dotdot", "absolute", "drive", "stream"])
def test_unsafe_member_with_the_locked_hash_still_changes_nothing(tmp_path: Path, member: str,
                                                                  why: str) -> None:
    archive = mingw_7z(tmp_path / "upstream" / MINGW_NAME, edit=_member(member))
    ctx = mingw_ctx(tmp_path, archive)  # the hash matches: the lock was made from this file
    step = CompilerStep()
    journal = Journal(ctx.state_dir)

    with pytest.raises(ArtifactError, match=re.escape(f"refusing to unpack member {member!r}: "
                                                      f"{why}")):
        step.apply(ctx, Transaction(journal, step.name))

    assert journal.entries() == []
    assert not (tmp_path / "data").exists()
    assert not (tmp_path / "evil.dll").exists()


@pytest.mark.posix_only("builds a 7z holding a symlink")
def test_link_member_is_refused(tmp_path: Path) -> None:
    archive = mingw_7z(tmp_path / "upstream" / MINGW_NAME,
                       edit=_link(tmp_path, "mingw64/bin/libevil.dll", "/etc/passwd"))
    ctx = mingw_ctx(tmp_path, archive)
    journal = Journal(ctx.state_dir)
    with pytest.raises(ArtifactError, match=re.escape(
            "refusing to unpack member 'mingw64/bin/libevil.dll': a link")):
        CompilerStep().apply(ctx, Transaction(journal, "compiler"))
    assert journal.entries() == []
    assert not (tmp_path / "data").exists()


def test_not_a_7z_is_refused(tmp_path: Path) -> None:
    archive = tmp_path / "upstream" / MINGW_NAME
    archive.parent.mkdir()
    archive.write_bytes(b"<html>SourceForge mirror error page</html>")
    ctx = mingw_ctx(tmp_path, archive)
    with pytest.raises(ArtifactError, match="damaged or unsupported 7z archive"):
        CompilerStep().apply(ctx, Transaction(Journal(ctx.state_dir), "compiler"))
    assert not (tmp_path / "data").exists()


@pytest.mark.parametrize(("files", "problem"), [
    ({"mingw64/bin/libwinpthread-1.dll": None,
      CXXCONFIG: b"#define _GLIBCXX_CXX_CONFIG_H 1\n"},
     "not the posix thread model: no bin/libwinpthread-1.dll and no _GLIBCXX_HAS_GTHREADS in "
     f"{CXXCONFIG}"),
    ({"mingw64/bin/libgcc_s_seh-1.dll": None, "mingw64/bin/libgcc_s_sjlj-1.dll": b"MZ sjlj"},
     "not the seh exception model: wanted bin/libgcc_s_seh-1.dll, found sjlj"),
    ({f"{GCC_LIB}/libgcc.a": None, f"{GCC_LIB}/libgcc_eh.a": None, CXXCONFIG: None,
      "mingw64/lib/gcc/x86_64-w64-mingw32/7.3.0/libgcc.a": b"!<arch>\n"},
     "no mingw64/lib/gcc/x86_64-w64-mingw32/8.1.0/ (gcc versions found: 7.3.0)"),
    ({"mingw64/bin/g++.exe": None}, "no mingw64/bin/g++.exe"),
], ids=["win32-threads", "sjlj", "gcc-7", "no-g++"])
def test_archive_of_another_variant_is_refused(tmp_path: Path, files: dict[str, bytes | None],
                                               problem: str) -> None:
    archive = mingw_7z(tmp_path / "upstream" / MINGW_NAME, files)
    ctx = mingw_ctx(tmp_path, archive)
    journal = Journal(ctx.state_dir)
    with pytest.raises(ArtifactError, match=re.escape(problem)):
        CompilerStep().apply(ctx, Transaction(journal, "compiler"))
    assert journal.entries() == []
    assert not (tmp_path / "data").exists()


def test_spec_and_lock_must_name_the_same_variant(tmp_path: Path) -> None:
    archive = mingw_7z(tmp_path / "upstream" / MINGW_NAME)
    ctx = mingw_ctx(tmp_path, archive, compiler=CompilerSection(kind="mingw-w64", threads="win32"))
    with pytest.raises(StepError, match=re.escape(
            f"MinGW-w64 threads = 'win32' but the lock holds {MINGW_NAME} (posix)")):
        CompilerStep().describe(ctx)
    older = mingw_ctx(tmp_path, archive, compiler=CompilerSection(kind="mingw-w64", version="7.3"))
    with pytest.raises(StepError, match=re.escape("version = '7.3' but the lock holds")):
        CompilerStep().describe(older)
    prefix = mingw_ctx(tmp_path, archive, compiler=CompilerSection(kind="mingw-w64", version="8.1"))
    assert mingw_home(prefix).name == "mingw-w64-8.1.0-posix-seh"


def test_a_folder_envforge_did_not_make_is_left_alone(tmp_path: Path) -> None:
    archive = mingw_7z(tmp_path / "upstream" / MINGW_NAME)
    ctx = mingw_ctx(tmp_path, archive)
    home = mingw_home(ctx)
    (home / "mingw64").mkdir(parents=True)
    (home / "mingw64" / "notes.txt").write_text("the user's own\n")
    before = snapshot(tmp_path / "data")
    step = CompilerStep()

    with pytest.raises(StepError, match="envforge did not create it"):
        step.describe(ctx)
    with pytest.raises(StepError, match="envforge did not create it"):
        step.apply(ctx, Transaction(Journal(ctx.state_dir), step.name))
    assert snapshot(tmp_path / "data") == before


def test_a_tree_left_incomplete_is_replaced_and_rollback_still_removes_it(tmp_path: Path) -> None:
    archive = mingw_7z(tmp_path / "upstream" / MINGW_NAME)
    ctx = mingw_ctx(tmp_path, archive)
    step = CompilerStep()
    journal = apply(step, ctx)
    home = mingw_home(ctx)
    (home / "mingw64" / "bin" / "libwinpthread-1.dll").unlink()  # as if cut short

    (change,) = step.describe(ctx)
    assert (change.action, change.before) == ("replace", "folder")
    apply(step, ctx)
    assert (home / "mingw64" / "bin" / "libwinpthread-1.dll").read_bytes() == b"MZ winpthreads"
    assert step.describe(ctx) == ()

    rollback(journal)
    assert not (tmp_path / "data").exists()


def test_mingw_bin_names_the_installed_bin(tmp_path: Path) -> None:
    ctx = mingw_ctx(tmp_path, mingw_7z(tmp_path / "upstream" / MINGW_NAME))
    apply(CompilerStep(), ctx)
    as_windows = mingw_bin(ctx)
    assert isinstance(as_windows, PureWindowsPath)
    installed = Path(as_windows) if sys.platform == "win32" else Path("/", *as_windows.parts[1:])
    assert (installed / "g++.exe").read_bytes() == \
        MINGW_FILES["mingw64/bin/g++.exe"]


# -- Linux: the host's g++ ----------------------------------------------------------------

GCC = CompilerSection(kind="gcc")


def host_path() -> str:
    return os.environ["PATH"]


def real_gxx_version() -> str:
    return subprocess.run(["g++", "-dumpfullversion"], capture_output=True, text=True,
                          check=True).stdout.strip()


@pytest.mark.posix_only("the host's Linux g++")
def test_real_gxx_is_found_and_describes_nothing(tmp_path: Path) -> None:
    ui, err = captured_ui()
    ctx = make_ctx(tmp_path, "linux-64", compiler=GCC, environ={"PATH": host_path()},
                   cuda="10.2", ui=ui)
    step = CompilerStep()

    assert step.describe(ctx) == ()
    assert step.describe(ctx) == ()
    step.apply(ctx, Transaction(Journal(ctx.state_dir), step.name))

    version = real_gxx_version()
    if int(version.split(".")[0]) > 8:
        warning = err.getvalue()
        assert warning.count("warning:") == 1  # once, however often the step is asked
        assert f"g++ {version} is newer than gcc 8" in warning
        assert "(source: Spack's cuda package (conflicts))" in warning
        assert "Theano compiles its GPU kernels with NVRTC, not nvcc" in warning
    else:
        assert err.getvalue() == ""
    assert not (tmp_path / "state").exists()


@pytest.mark.posix_only("the host's Linux g++")
def test_no_warning_without_cuda(tmp_path: Path) -> None:
    ui, err = captured_ui()
    ctx = make_ctx(tmp_path, "linux-64", compiler=GCC, environ={"PATH": host_path()}, ui=ui)
    assert CompilerStep().describe(ctx) == ()
    assert err.getvalue() == ""


@pytest.mark.parametrize("environ", [{"PATH": ""}, {}, {"PATH": "EMPTY"}],
                         ids=["empty", "unset", "no-gxx-there"])
def test_missing_gxx_names_the_remedy(tmp_path: Path, environ: dict[str, str]) -> None:
    if environ.get("PATH") == "EMPTY":
        (tmp_path / "bin").mkdir()
        environ = {"PATH": str(tmp_path / "bin")}
    ctx = make_ctx(tmp_path, "linux-64", compiler=GCC, environ=environ, cuda="10.2")
    with pytest.raises(StepError, match=re.escape(
            "g++ not found on PATH") + ".*" + re.escape("`sudo apt-get install g++`")):
        CompilerStep().describe(ctx)


@pytest.mark.posix_only("its stand-in nvidia-smi, nvcc or g++ is an sh script")
def test_theano_cxx_is_the_compiler_looked_for(tmp_path: Path) -> None:
    real = shutil.which("g++")
    assert real is not None
    found = make_ctx(tmp_path, "linux-64", compiler=GCC, environ={"PATH": ""},
                     cxx=real)
    assert CompilerStep().describe(found) == ()
    missing = make_ctx(tmp_path, "linux-64", compiler=GCC, environ={"PATH": host_path()},
                       cxx="g++-4.8-not-installed")
    with pytest.raises(StepError, match=re.escape("g++-4.8-not-installed not found on PATH")):
        CompilerStep().describe(missing)


@pytest.mark.parametrize(("gcc", "cuda", "platform", "warns"), [
    ("8.4.0", "10.2", "linux-64", False),
    ("9.1.0", "10.2", "linux-64", True),
    ("12.2.0", "9.0", "linux-64", True),
    ("12.2.0", "11.8", "linux-64", False),
    ("12.2.0", "10.2", "win-64", False),
])
def test_gcc_limit_from_the_knowledge_base(gcc: str, cuda: str, platform: Platform,
                                           warns: bool) -> None:
    finding = gcc_limit_finding(gcc, cuda, platform)
    assert (finding is not None) == warns
    if finding is not None:
        assert finding.startswith(f"g++ {gcc} is newer than gcc 8, the newest nvcc of CUDA {cuda}")


def test_mingw_on_linux_is_refused(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path, "linux-64", compiler=MINGW)
    with pytest.raises(StepError, match="MinGW-w64 is a Windows compiler"):
        CompilerStep().describe(ctx)
