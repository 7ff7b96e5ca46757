"""Where things live and what they are called on each target platform: pure, no I/O.

The CUDA tree's shape, the library names CUDA and cuDNN ship, the names libgpuarray
0.7.6 asks the loader for, and where Theano looks for ``.theanorc``. Host facts
(environment variables, the driver's CUDA version) are parameters, so a Windows
layout is computed, and tested, on Linux. The name tables are private here until
``envforge.knowledge`` carries them; each row names its source.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePath, PurePosixPath, PureWindowsPath

from envforge.spec import Platform

# Sources for the rows below.
_K = "KNOWLEDGE.md §4 (NVIDIA release files)"
_G = "GPU.md (seen on the H200 host)"
_P = "public DLL/SO listings of NVIDIA redistributables (TensorFlow, CNTK, ONNX logs)"
_GA = "libgpuarray v0.7.6 src/loaders/libnvrtc.c, libcublas.c, gpuarray_buffer_cuda.c"


@dataclass(frozen=True)
class CudaLayout:
    """The folders of a CUDA toolkit tree that cuDNN and the loaders care about."""

    root: Path
    bin: Path
    include: Path
    lib: Path  # import libraries on Windows (lib\x64), shared objects on Linux (lib64)


def cuda_layout(platform: Platform, root: Path) -> CudaLayout:
    """``<root>/lib/x64`` on Windows, ``<root>/lib64`` on Linux, as Theano's dnn.library_path."""
    lib = root / "lib" / "x64" if platform == "win-64" else root / "lib64"
    return CudaLayout(root=root, bin=root / "bin", include=root / "include", lib=lib)


def cudnn_library_name(platform: Platform, major: int) -> str:
    """The cuDNN library programs load: ``cudnn64_7.dll`` / ``libcudnn.so.7`` (KNOWLEDGE §2, §4)."""
    return f"cudnn64_{major}.dll" if platform == "win-64" else f"libcudnn.so.{major}"


@dataclass(frozen=True)
class CudaLibraryNames:
    """File names of the CUDA runtime, cuBLAS and NVRTC as a toolkit ships them."""

    cudart: str
    cublas: str
    nvrtc: str
    source: str


def _row(win: tuple[str, str, str], linux: tuple[str, str, str],
         source: str) -> tuple[CudaLibraryNames, CudaLibraryNames]:
    return CudaLibraryNames(*win, source=source), CudaLibraryNames(*linux, source=source)


# Key: "major.minor", or "major" where every minor release ships the same names.
_CUDA_LIBRARIES: dict[str, tuple[CudaLibraryNames, CudaLibraryNames]] = {
    **{f"9.{m}": _row((f"cudart64_9{m}.dll", f"cublas64_9{m}.dll", f"nvrtc64_9{m}.dll"),
                      (f"libcudart.so.9.{m}", f"libcublas.so.9.{m}", f"libnvrtc.so.9.{m}"), _P)
       for m in (0, 1, 2)},
    "10.0": _row(("cudart64_100.dll", "cublas64_100.dll", "nvrtc64_100_0.dll"),
                 ("libcudart.so.10.0", "libcublas.so.10.0", "libnvrtc.so.10.0"), _P),
    "10.1": _row(("cudart64_101.dll", "cublas64_10.dll", "nvrtc64_101_0.dll"),
                 ("libcudart.so.10.1", "libcublas.so.10", "libnvrtc.so.10.1"), _P),
    "10.2": _row(("cudart64_102.dll", "cublas64_10.dll", "nvrtc64_102_0.dll"),
                 ("libcudart.so.10.2", "libcublas.so.10", "libnvrtc.so.10.2"), _K),
    "11.0": _row(("cudart64_110.dll", "cublas64_11.dll", "nvrtc64_110_0.dll"),
                 ("libcudart.so.11.0", "libcublas.so.11", "libnvrtc.so.11.0"), _P),
    "11.1": _row(("cudart64_110.dll", "cublas64_11.dll", "nvrtc64_111_0.dll"),
                 ("libcudart.so.11.0", "libcublas.so.11", "libnvrtc.so.11.1"), _P),
    **{f"11.{m}": _row(("cudart64_110.dll", "cublas64_11.dll", "nvrtc64_112_0.dll"),
                       ("libcudart.so.11.0", "libcublas.so.11", "libnvrtc.so.11.2"), _P)
       for m in range(2, 9)},
    "12": _row(("cudart64_12.dll", "cublas64_12.dll", "nvrtc64_120_0.dll"),
               ("libcudart.so.12", "libcublas.so.12", "libnvrtc.so.12"), _P),
    "13": _row(("cudart64_13.dll", "cublas64_13.dll", "nvrtc64_130_0.dll"),
               ("libcudart.so.13", "libcublas.so.13", "libnvrtc.so.13"), f"{_G}; {_P}"),
}


def parse_cuda_version(text: str) -> tuple[int, int]:
    """``"10.2"``, ``"10.2.89"`` -> (10, 2); anything else is a ValueError."""
    match = re.fullmatch(r"\s*(\d+)\.(\d+)(?:\.\d+)*\s*", text)
    if match is None:
        raise ValueError(f"not a CUDA version: {text!r} (expected e.g. 10.2)")
    return int(match[1]), int(match[2])


def cuda_library_names(platform: Platform, version: str) -> CudaLibraryNames | None:
    """What a CUDA toolkit of ``version`` ships; None for a release not in the table."""
    major, minor = parse_cuda_version(version)
    row = _CUDA_LIBRARIES.get(f"{major}.{minor}") or _CUDA_LIBRARIES.get(str(major))
    if row is None:
        return None
    return row[0] if platform == "win-64" else row[1]


# Tried, in this order, when the name for the driver's own version does not load [GA].
GPUARRAY_FALLBACK_VERSIONS: tuple[tuple[int, int], ...] = ((9, 1), (9, 0), (8, 0), (7, 5), (7, 0))


@dataclass(frozen=True)
class GpuarrayLoaderNames:
    """The names libgpuarray 0.7.6 dlopens, in the order it tries them [GA].

    ``cublas[i]`` is asked for when ``nvrtc[i]`` was the one that loaded: the loader
    reuses the version it settled on for NVRTC when it loads cuBLAS.
    """

    driver: str
    nvrtc: tuple[str, ...]
    cublas: tuple[str, ...]


def gpuarray_loader_names(platform: Platform,
                          driver_cuda: str | None = None) -> GpuarrayLoaderNames:
    """On Windows the digits come from the DRIVER's CUDA version (cuDriverGetVersion).

    The driver reports e.g. 10020; libgpuarray formats ``%d%d`` of (10, 2), giving
    ``nvrtc64_102.dll`` — a name no CUDA 10 toolkit ships, hence the copies the libs
    step makes. On Linux the names are unversioned and the version does not matter.
    """
    if platform != "win-64":
        return GpuarrayLoaderNames("libcuda.so", ("libnvrtc.so",), ("libcublas.so",))
    if driver_cuda is None:
        raise ValueError("the Windows loader names depend on the driver's CUDA version")
    first = parse_cuda_version(driver_cuda)
    versions = (first, *(v for v in GPUARRAY_FALLBACK_VERSIONS if v < first))
    return GpuarrayLoaderNames(
        "nvcuda.dll",
        tuple(f"nvrtc64_{a}{b}.dll" for a, b in versions),
        tuple(f"cublas64_{a}{b}.dll" for a, b in versions),
    )


@dataclass(frozen=True)
class TheanorcPaths:
    """The config files Theano reads, in reading order (a file further right wins)."""

    home: PurePath | None  # what ``~`` expands to for that Python; None: it does not expand
    files: tuple[PurePath, ...]
    write_to: PurePath  # the file whose settings win: write here for them to take effect


def _getenv(platform: Platform, environ: Mapping[str, str], name: str) -> str | None:
    """Windows variable names are case-insensitive; a Mapping built elsewhere may not be."""
    if platform != "win-64":
        return environ.get(name)
    wanted = name.upper()
    for key, value in environ.items():
        if key.upper() == wanted:
            return value
    return None


def home_dir(platform: Platform, environ: Mapping[str, str], *,
             python: str = "3.7") -> PurePath | None:
    """What ``os.path.expanduser("~")`` gives inside the target environment.

    Windows, Python <= 3.7: %HOME%, else %USERPROFILE%, else %HOMEDRIVE%%HOMEPATH%.
    Python 3.8 stopped reading %HOME% (bpo-36264). Linux: $HOME.
    """
    if platform != "win-64":
        home = environ.get("HOME")
        return PurePosixPath(home) if home else None
    py = tuple(int(p) for p in python.split(".")[:2])
    names = ("USERPROFILE",) if py >= (3, 8) else ("HOME", "USERPROFILE")
    for name in names:
        value = _getenv(platform, environ, name)
        if value:
            return PureWindowsPath(value)
    homepath = _getenv(platform, environ, "HOMEPATH")
    if homepath is None:
        return None
    return PureWindowsPath((_getenv(platform, environ, "HOMEDRIVE") or "") + homepath)


def theanorc_paths(platform: Platform, environ: Mapping[str, str], *,
                   python: str = "3.7") -> TheanorcPaths:
    """Theano's ``config_files_from_theanorc`` (1.0.5), computed for another machine.

    THEANORC (split on the target's ``os.pathsep``) or ``~/.theanorc``; on Windows with
    THEANORC unset, ``~/.theanorc.txt`` is read too, last, so it wins.
    """
    pure: type[PurePath] = PureWindowsPath if platform == "win-64" else PurePosixPath
    home = home_dir(platform, environ, python=python)
    theanorc = _getenv(platform, environ, "THEANORC")
    raw = ["~/.theanorc"] if theanorc is None else theanorc.split(
        ";" if platform == "win-64" else ":")
    if theanorc is None and platform == "win-64":
        raw.append("~/.theanorc.txt")
    files = tuple(_expand_home(item, home, pure) for item in raw if item)
    # THEANORC="" makes Theano read nothing; ~/.theanorc is where it reads once unset.
    fallback = _expand_home("~/.theanorc", home, pure)
    return TheanorcPaths(home=home, files=files, write_to=files[-1] if files else fallback)


def _expand_home(item: str, home: PurePath | None, pure: type[PurePath]) -> PurePath:
    """``expanduser`` for ``~`` and ``~/...``; ``~user`` and unexpandable ``~`` stay as written."""
    if home is not None and (item == "~" or item[:2] in ("~/", "~\\")):
        return home / item[2:]
    return pure(item)
