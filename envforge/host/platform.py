"""Where things live on each target platform: pure, no I/O.

The CUDA tree's shape and a user's home folder as a given Python finds it (a framework's
config files live there: Theano's ``.theanorc`` places are its pack's). Host facts
(environment variables) are parameters, so a Windows layout is computed, and tested, on
Linux. Library names (CUDA, cuDNN) are facts in ``envforge.knowledge``, a framework's own
loader's in its pack.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePath, PurePosixPath, PureWindowsPath
from typing import assert_never

from envforge.platforms import Os, Platform, TargetPlatform, platform_of


@dataclass(frozen=True)
class CudaLayout:
    """The folders of a CUDA toolkit tree that cuDNN and the loaders care about."""

    root: Path
    bin: Path
    include: Path
    lib: Path  # import libraries on Windows (lib\x64), shared objects on Linux (lib64)


def cuda_layout(platform: Platform | TargetPlatform, root: Path) -> CudaLayout:
    """``<root>/lib/x64`` on Windows, ``<root>/lib64`` on Linux (Theano's dnn.library_path)."""
    target = platform_of(platform)
    match target.os:
        case Os.WINDOWS:
            lib = root / "lib" / "x64"
        case Os.LINUX:
            lib = root / "lib64"
        case _:
            assert_never(target.os)
    return CudaLayout(root=root, bin=root / "bin", include=root / "include", lib=lib)


def home_dir(platform: Platform | TargetPlatform, environ: Mapping[str, str], *,
             python: str = "3.7") -> PurePath | None:
    """What ``os.path.expanduser("~")`` gives inside the target environment.

    Windows, Python <= 3.7: %HOME%, else %USERPROFILE%, else %HOMEDRIVE%%HOMEPATH%.
    Python 3.8 stopped reading %HOME% (bpo-36264). Linux: $HOME.
    """
    target = platform_of(platform)
    match target.os:
        case Os.LINUX:
            home = environ.get("HOME")
            return PurePosixPath(home) if home else None
        case Os.WINDOWS:
            py = tuple(int(p) for p in python.split(".")[:2])
            names = ("USERPROFILE",) if py >= (3, 8) else ("HOME", "USERPROFILE")
            for name in names:
                value = target.getenv(environ, name)
                if value:
                    return PureWindowsPath(value)
            homepath = target.getenv(environ, "HOMEPATH")
            if homepath is None:
                return None
            return PureWindowsPath((target.getenv(environ, "HOMEDRIVE") or "") + homepath)
        case _:
            assert_never(target.os)


def expand_home(item: str, home: PurePath | None, pure: type[PurePath]) -> PurePath:
    """``expanduser`` for ``~`` and ``~/...``; ``~user`` and unexpandable ``~`` stay as written."""
    if home is not None and (item == "~" or item[:2] in ("~/", "~\\")):
        return home / item[2:]
    return pure(item)
