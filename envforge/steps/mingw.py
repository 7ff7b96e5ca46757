"""Which MinGW-w64 the lock holds and where it goes: its variant (version, thread and
exception models) read from mingw-builds' archive name, its folder under envforge's tools,
and the check that an unpacked tree really is that variant."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path, PurePath, PureWindowsPath

from envforge.errors import StepError
from envforge.lockfile import LockedArtifact
from envforge.steps.base import StepContext

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
    """The locked archive's variant, from its mingw-builds name; the lock's compiler table
    must agree with it."""
    artifact = mingw_artifact(ctx)
    match = _MINGW_BUILDS.match(artifact.filename)
    if match is None:
        raise StepError(f"cannot tell the MinGW-w64 variant from {artifact.filename!r} "
                        "(expected x86_64-<version>-release-<threads>-<exceptions>-rt_vN-revN.7z)")
    variant = MingwVariant(match["version"], match["threads"], match["exceptions"])
    compiler = ctx.inputs.compiler
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
    """MinGW's bin folder as a Windows path, whatever the host, for the user PATH and a
    framework's own setting (Theano's ``.theanorc`` ``cxx``)."""
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
