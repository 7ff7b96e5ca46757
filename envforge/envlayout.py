"""Where things live inside an environment, per platform and kind. Pure: paths only.

Windows paths are computed as PureWindowsPath so their logic is tested on Linux.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path, PurePath, PureWindowsPath
from typing import assert_never

from envforge.envvars import EnvEdit
from envforge.lockfile import PlatformLock
from envforge.platforms import Os, Platform, TargetPlatform, platform_of

DEB_ROOT = "deb"  # Debian packages are unpacked under <prefix>/deb
MULTIARCH = "x86_64-linux-gnu"  # linux-64's multiarch folders, the only Debian platform
LINKS_DIR = "envforge-libs"  # unversioned library names a framework's loader and -l flags need
COMPILEDIR_IN_ENV = "theano-compiledir"


@dataclass(frozen=True)
class EnvLayout:
    platform: TargetPlatform
    kind: str
    prefix: PurePath
    python_minor: str

    @property
    def python(self) -> PurePath:
        match self.platform.os:
            case Os.WINDOWS:
                return self.prefix / ("python.exe" if self.kind == "conda"
                                      else "Scripts/python.exe")
            case Os.LINUX:
                return self.prefix / "bin" / "python"
            case _:
                assert_never(self.platform.os)

    @property
    def site_packages(self) -> PurePath:
        match self.platform.os:
            case Os.WINDOWS:
                return self.prefix / "Lib" / "site-packages"
            case Os.LINUX:
                return self.prefix / "lib" / f"python{self.python_minor}" / "site-packages"
            case _:
                assert_never(self.platform.os)

    @property
    def bin_dirs(self) -> tuple[PurePath, ...]:
        p = self.prefix
        match self.platform.os:
            case Os.WINDOWS if self.kind == "conda":
                return (p / "Library" / "mingw-w64" / "bin", p, p / "Library" / "bin",
                        p / "Scripts")
            case Os.WINDOWS:
                return (p / "Scripts",)
            case Os.LINUX:
                return (p / "bin",)
            case _:
                assert_never(self.platform.os)

    @property
    def deb_root(self) -> PurePath:
        return self.prefix / DEB_ROOT

    @property
    def deb_lib_dirs(self) -> tuple[PurePath, ...]:
        return deb_lib_dirs(self.deb_root)

    @property
    def deb_bin_dirs(self) -> tuple[PurePath, ...]:
        """Unpacked packages' programs (ffmpeg), after the environment's own."""
        return (self.deb_root / "usr" / "bin", self.deb_root / "bin")

    @property
    def links_dir(self) -> PurePath:
        return self.prefix / LINKS_DIR

    @property
    def compiledir(self) -> PurePath:
        return self.prefix / COMPILEDIR_IN_ENV

    @property
    def debian_python(self) -> PurePath:
        return self.deb_root / "usr" / "bin" / f"python{self.python_minor}"


def deb_lib_dirs(root: PurePath) -> tuple[PurePath, ...]:
    """Where the libraries of Debian packages unpacked in ``root`` are: bookworm's packages
    still put some in /lib (libcap2, libexpat1); blas/ and lapack/ are the folders
    update-alternatives would link from (dpkg's scripts do not run here), after OpenBLAS's,
    which wins; pulseaudio/ is libpulse0's private library, found by an absolute RUNPATH."""
    lib = root / "usr" / "lib"
    multiarch = lib / MULTIARCH
    return (multiarch / "openblas-pthread", multiarch, lib, root / "lib" / MULTIARCH,
            multiarch / "blas", multiarch / "lapack", multiarch / "pulseaudio")


def deb_include_dirs(root: PurePath) -> tuple[PurePath, ...]:
    """Where the headers of Debian packages unpacked in ``root`` are (a ``-dev`` package's)."""
    return (root / "usr" / "include" / MULTIARCH, root / "usr" / "include")


def layout_for(platform: Platform | TargetPlatform, kind: str, prefix: Path | str,
               python: str) -> EnvLayout:
    minor = ".".join(python.split(".")[:2])
    target = platform_of(platform)
    match target.os:
        case Os.WINDOWS:
            root: PurePath = PureWindowsPath(prefix)
        case Os.LINUX:
            root = Path(prefix)
        case _:
            assert_never(target.os)
    return EnvLayout(platform=target, kind=kind, prefix=root, python_minor=minor)


def env_edits(layout: EnvLayout, lock: PlatformLock, *, cuda_root: PurePath | None = None,
              spec_dir: Path | None = None) -> tuple[EnvEdit, ...]:
    """The variables an activated environment needs: PATH, library path, the spec's
    PYTHONPATH where its folder (``spec_dir``) is known (packs add theirs)."""
    target = layout.platform
    paths = [str(d) for d in layout.bin_dirs]
    if cuda_root is not None:
        paths.append(str(cuda_root / "bin"))
    if lock.deb and target.os is Os.LINUX:
        paths += [str(d) for d in layout.deb_bin_dirs]
    edits = [EnvEdit(name="PATH", op="prepend", value=target.pathsep.join(paths))]
    match target.os:
        case Os.WINDOWS:
            pass  # DLLs load from PATH (the library path there), set above
        case Os.LINUX:
            libs = [str(layout.links_dir)]
            if lock.deb:
                libs += [str(d) for d in layout.deb_lib_dirs]
            edits.append(EnvEdit(name=target.library_path_var, op="prepend",
                                 value=target.pathsep.join(libs)))
        case _:
            assert_never(target.os)
    if lock.apply is not None and lock.apply.pythonpath and spec_dir is not None:
        folders = [os.path.normpath(spec_dir / p) for p in lock.apply.pythonpath]
        edits.append(EnvEdit(name="PYTHONPATH", op="prepend",
                             value=target.pathsep.join(folders)))
    return tuple(edits)
