"""The target platforms as data: one frozen object per target, the only place that knows them.

Modelled on uv's ``uv-platform-tags`` ``Platform{os, arch}``: code receives a
``TargetPlatform`` and asks it (path separator, library-path variable, wheel tags, ...)
instead of comparing platform names, so a third target is one entry in ``PLATFORMS``.
Where behaviour really differs by OS, code dispatches on ``platform.os`` with
``match ... case _: assert_never(...)``, and mypy lists every place a new OS must handle.
Facts taken from a standard or a tool carry their source in ``sources``. Pure: the only
host fact read is ``sys.platform``, in ``host_platform()``.
"""

from __future__ import annotations

import enum
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import PurePath, PurePosixPath, PureWindowsPath
from types import MappingProxyType
from typing import Literal, assert_never

Platform = Literal["win-64", "linux-64"]
"""A target's name, as specs and locks write it (conda's subdir names)."""


class Os(enum.Enum):
    LINUX = "linux"
    WINDOWS = "windows"


class Arch(enum.Enum):
    X86_64 = "x86_64"


@dataclass(frozen=True)
class TargetPlatform:
    """What envforge needs to know about one target; see ``sources`` for where facts come from."""

    name: Platform
    os: Os
    arch: Arch
    pathsep: str  # os.pathsep there: PATH, LD_LIBRARY_PATH and THEANORC are split on it
    exe_suffix: str
    pure_path: type[PurePath]
    library_path_var: str  # the variable the dynamic loader searches at run time
    case_insensitive_env: bool  # Windows: environment variable names ignore case
    case_insensitive_files: bool  # NTFS (as Windows mounts it): file names ignore case
    sys_platform: str  # PEP 508 ``sys_platform`` marker value
    platform_system: str  # PEP 508 ``platform_system`` marker value
    os_name: str  # PEP 508 ``os_name`` marker value
    platform_machine: str  # PEP 508 ``platform_machine`` marker value
    uv_triple: str  # uv's ``--python-platform`` value
    wheel_tags: tuple[str, ...]  # platform tags an interpreter there accepts, best first
    conda_subdir: str
    debian_arch: str | None  # None: no Debian packages for this target
    sources: Mapping[str, str] = field(default_factory=dict, compare=False)

    def shared_lib(self, stem: str, version: str | None = None) -> str:
        """The file name of a shared library ``stem`` (``gomp`` -> ``libgomp.so.1``,
        ``gomp.dll``): the loader's naming convention, not a library's actual name, which
        ``envforge.knowledge`` holds."""
        match self.os:
            case Os.LINUX:
                return f"lib{stem}.so" + (f".{version}" if version else "")
            case Os.WINDOWS:
                return f"{stem}{version or ''}.dll"
            case _:
                assert_never(self.os)

    def linker_files(self, lib: str) -> tuple[str, ...]:
        """The files the linker's ``-l<lib>`` looks for in a folder, in its order (GNU ld
        ``-l``; MinGW's ld also takes import libraries and DLLs)."""
        match self.os:
            case Os.LINUX:
                return (f"lib{lib}.so", f"lib{lib}.a")
            case Os.WINDOWS:
                return (f"lib{lib}.dll.a", f"lib{lib}.a", f"{lib}.lib", f"lib{lib}.dll",
                        f"{lib}.dll")
            case _:
                assert_never(self.os)

    def getenv(self, environ: Mapping[str, str], name: str) -> str | None:
        """``environ[name]`` as the target reads it: a Mapping built elsewhere may hold
        ``Path`` where Windows means ``PATH``."""
        if not self.case_insensitive_env:
            return environ.get(name)
        wanted = name.upper()
        return next((value for key, value in environ.items() if key.upper() == wanted), None)

    def same_file_name(self, a: str, b: str) -> bool:
        """Whether two file names name the same file there (NTFS ignores case)."""
        return a.casefold() == b.casefold() if self.case_insensitive_files else a == b

    def markers(self, python: str) -> dict[str, str]:
        """PEP 508's marker variables there, for a CPython of ``python`` (3.N or 3.N.N): what
        a requirement's marker is evaluated against when the lock resolves for it."""
        minor = ".".join(python.split(".")[:2])
        return {"sys_platform": self.sys_platform, "platform_system": self.platform_system,
                "os_name": self.os_name, "platform_machine": self.platform_machine,
                "python_version": minor,
                "python_full_version": python if python.count(".") == 2 else f"{minor}.0",
                "implementation_name": "cpython", "platform_python_implementation": "CPython",
                "implementation_version": python if python.count(".") == 2 else f"{minor}.0"}

    def __str__(self) -> str:
        return self.name


_PEP508 = "PEP 508 environment markers (sys.platform / platform.system() on that OS)"
_UV = "uv docs, `uv pip compile --python-platform` (reference/cli)"
_CONDA = "conda docs, 'Subdirectory (subdir)' of a channel: linux-64, win-64"
_LINUX = TargetPlatform(
    name="linux-64", os=Os.LINUX, arch=Arch.X86_64, pathsep=":", exe_suffix="",
    pure_path=PurePosixPath, library_path_var="LD_LIBRARY_PATH", case_insensitive_env=False,
    case_insensitive_files=False,
    sys_platform="linux", platform_system="Linux", os_name="posix", platform_machine="x86_64",
    uv_triple="x86_64-manylinux_2_17",
    wheel_tags=("manylinux_2_17_x86_64", "manylinux2014_x86_64", "manylinux_2_12_x86_64",
                "manylinux2010_x86_64", "manylinux_2_5_x86_64", "manylinux1_x86_64",
                "linux_x86_64"),
    conda_subdir="linux-64", debian_arch="amd64",
    sources=MappingProxyType({
        "sys_platform": _PEP508, "platform_system": _PEP508, "os_name": _PEP508,
        "platform_machine": _PEP508 + ", platform.machine(): x86_64 on 64-bit Linux",
        "uv_triple": _UV,
        "wheel_tags": "PEP 600 (manylinux_2_17 = manylinux2014, PEP 599; manylinux_2_12 = "
                      "manylinux2010, PEP 571; manylinux_2_5 = manylinux1, PEP 513), PEP 425 "
                      "linux_x86_64; glibc 2.17 as uv's x86_64-manylinux_2_17 target",
        "conda_subdir": _CONDA,
        "debian_arch": "Debian wiki, SupportedArchitectures: amd64 is x86-64 "
                       "(dpkg-architecture -qDEB_HOST_ARCH)",
        "library_path_var": "ld.so(8): LD_LIBRARY_PATH",
        "linker_files": "GNU ld manual, -l namespec (libX.so, then libX.a)",
    }))
_WINDOWS = TargetPlatform(
    name="win-64", os=Os.WINDOWS, arch=Arch.X86_64, pathsep=";", exe_suffix=".exe",
    pure_path=PureWindowsPath, library_path_var="PATH", case_insensitive_env=True,
    case_insensitive_files=True,
    sys_platform="win32", platform_system="Windows", os_name="nt", platform_machine="AMD64",
    uv_triple="x86_64-pc-windows-msvc",
    wheel_tags=("win_amd64",), conda_subdir="win-64", debian_arch=None,
    sources=MappingProxyType({
        "sys_platform": _PEP508, "platform_system": _PEP508, "os_name": _PEP508,
        "platform_machine": _PEP508 + ", platform.machine(): AMD64 on 64-bit Windows",
        "uv_triple": _UV,
        "wheel_tags": "PEP 425: distutils.util.get_platform() on 64-bit Windows is win-amd64",
        "conda_subdir": _CONDA,
        "debian_arch": "Debian builds no Windows packages",
        "library_path_var": "Microsoft, 'Dynamic-Link Library Search Order': PATH",
        "linker_files": "GNU ld manual, 'ld and WIN32 (cygwin/mingw)': -lX search order",
    }))

PLATFORMS: Mapping[Platform, TargetPlatform] = MappingProxyType(
    {p.name: p for p in (_WINDOWS, _LINUX)})
"""Every target envforge supports, by name, in ``spec.PLATFORMS`` order."""


def host_platform() -> TargetPlatform:
    """The platform this process runs on (a Linux answer for every non-Windows host)."""
    return _WINDOWS if sys.platform == "win32" else _LINUX


def threads_have_own_priority() -> bool:
    """Whether this host's kernel gives a thread a nice value of its own (Linux:
    ``setpriority`` on a thread id). Not asked of host_platform(), which answers Linux for
    every non-Windows host: elsewhere a thread id may name another process."""
    return sys.platform.startswith("linux")


def platform_of(platform: Platform | TargetPlatform) -> TargetPlatform:
    """The TargetPlatform for a name read from a spec or lock (already one: itself)."""
    return platform if isinstance(platform, TargetPlatform) else PLATFORMS[platform]
