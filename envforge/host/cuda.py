"""What CUDA a host has: toolkit folders and their versions, and the driver's version.

Parsing is pure; discovery reads the filesystem and environment given to it, so tests
build CUDA-shaped trees (Linux and Windows layouts) and point the functions at them.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import assert_never

from envforge.errors import EnvforgeError
from envforge.host import proc
from envforge.platforms import Os, TargetPlatform

_TXT_VERSION = re.compile(r"CUDA Version (\d+\.\d+(?:\.\d+)?)")
# "NVRM version: NVIDIA UNIX x86_64 Kernel Module  440.33.01 ..." and, for the open kernel
# modules, "... NVIDIA UNIX Open Kernel Module for x86_64  580.159.04 ..." (seen on the H200).
_DRIVER_PROC = re.compile(r"Kernel Module(?: for \S+)?\s+(\d+\.\d+(?:\.\d+)?)")
_DIST_INFO = re.compile(r"^nvidia_cuda_(?:nvcc|runtime)-(\d+\.\d+(?:\.\d+)?)\.dist-info$")
_SMI_DRIVER = re.compile(r"Driver Version:\s*(\d+\.\d+(?:\.\d+)?)")
_SMI_CUDA = re.compile(r"CUDA Version:\s*(\d+\.\d+)")


@dataclass(frozen=True)
class CudaToolkit:
    root: Path
    version: str  # e.g. 10.2.89 or 13.0.48
    found_by: str

    @property
    def minor(self) -> str:
        return ".".join(self.version.split(".")[:2])


@dataclass(frozen=True)
class DriverInfo:
    version: str | None
    cuda: str | None  # the highest CUDA the driver supports, as nvidia-smi reports it
    source: str


def toolkit_version(root: Path) -> str | None:
    """The version a toolkit folder declares: version.json since 11.1, version.txt before,
    and for toolkits assembled from NVIDIA's wheels (as here and on the H200 host), the
    nvcc or runtime wheel's dist-info folder name."""
    as_json = root / "version.json"
    if as_json.is_file():
        try:
            return str(json.loads(as_json.read_text(encoding="utf-8"))["cuda"]["version"])
        except (ValueError, KeyError, TypeError):
            return None
    as_text = root / "version.txt"
    if as_text.is_file():
        match = _TXT_VERSION.search(as_text.read_text(encoding="utf-8", errors="replace"))
        return match.group(1) if match else None
    dist_info = root / "dist-info"
    if dist_info.is_dir():
        for entry in sorted(dist_info.iterdir()):
            found = _DIST_INFO.match(entry.name)
            if found:
                return found.group(1)
    return None


NVCC_RELEASE = re.compile(r"release (\d+\.\d+), V(\d+\.\d+(?:\.\d+)?)")


def nvcc_version(root: Path) -> str | None:
    """What ``<root>/bin/nvcc --version`` reports: the last resort for a toolkit that carries
    no version file (the H200 host's /usr/local/cuda has none)."""
    for name in ("nvcc", "nvcc.exe"):
        nvcc = root / "bin" / name
        if nvcc.is_file():
            try:
                out = proc.run([nvcc, "--version"], timeout=30).stdout
            except EnvforgeError:
                return None
            match = NVCC_RELEASE.search(out)
            return match.group(2) if match else None
    return None


def candidate_roots(environ: Mapping[str, str], *, platform: TargetPlatform,
                    search: tuple[Path, ...] | None = None) -> Iterator[tuple[Path, str]]:
    """Toolkit folders in the order Theano and NVIDIA's tools consult them."""
    for var in ("CUDA_ROOT", "CUDA_PATH", "CUDA_HOME"):
        if environ.get(var):
            yield Path(environ[var]), var
    exe = f"nvcc{platform.exe_suffix}"
    for folder in environ.get("PATH", "").split(platform.pathsep):
        if folder and (Path(folder) / exe).is_file():
            yield Path(folder).resolve().parent, "PATH (nvcc)"
    match platform.os:
        case Os.WINDOWS:
            default: tuple[Path, ...] = (Path(environ.get("ProgramFiles", r"C:\Program Files"))
                                         / "NVIDIA GPU Computing Toolkit" / "CUDA",)
            link = None
        case Os.LINUX:
            default, link = (Path("/usr/local"),), "cuda"  # the installers' /usr/local/cuda
        case _:
            assert_never(platform.os)
    for base in default if search is None else search:
        if not base.is_dir():
            continue
        if link is not None and (base / link).is_dir():
            yield base / link, str(base / link)
        for entry in sorted(base.iterdir(), reverse=True):
            if re.fullmatch(r"(cuda-|v)\d+\.\d+", entry.name):
                yield entry, str(base)


def find_toolkits(environ: Mapping[str, str], *, platform: TargetPlatform,
                  search: tuple[Path, ...] | None = None) -> list[CudaToolkit]:
    """Every distinct toolkit found, first the one the environment points at."""
    seen: set[Path] = set()
    found = []
    for root, how in candidate_roots(environ, platform=platform, search=search):
        real = root.resolve() if root.exists() else root
        if real in seen:
            continue
        seen.add(real)
        version = toolkit_version(root) or nvcc_version(root)
        if version is not None:
            found.append(CudaToolkit(root, version, how))
    return found


def parse_nvidia_smi(text: str) -> DriverInfo:
    driver = _SMI_DRIVER.search(text)
    cuda = _SMI_CUDA.search(text)
    return DriverInfo(driver.group(1) if driver else None, cuda.group(1) if cuda else None,
                      "nvidia-smi")


def parse_proc_driver(text: str) -> str | None:
    match = _DRIVER_PROC.search(text)
    return match.group(1) if match else None


def read_driver(environ: Mapping[str, str]) -> DriverInfo:
    """The driver as nvidia-smi (first on PATH) or the kernel module reports it."""
    smi = shutil.which("nvidia-smi", path=environ.get("PATH"))
    if smi:
        try:
            return parse_nvidia_smi(proc.run([smi], timeout=30).stdout)
        except EnvforgeError:
            pass
    version_file = Path("/proc/driver/nvidia/version")
    if version_file.is_file():
        return DriverInfo(parse_proc_driver(version_file.read_text(encoding="utf-8")), None,
                          str(version_file))
    return DriverInfo(None, None, "none found")
