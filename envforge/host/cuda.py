"""What CUDA a host has: toolkit folders and their versions, the driver, and its GPUs.

The one place that observes them: doctor, the steps and verify all read these. Parsing is
pure (``parse_*`` take the text nvcc, nvidia-smi or the kernel module print); discovery
reads only the environment, folders and runner given to it, so tests build CUDA-shaped
trees (Linux and Windows layouts) and point the functions at them.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import assert_never

from envforge.host.cmdoutput import CommandOutput, Runner, run_command
from envforge.host.windows import expand_vars
from envforge.model import Frozen
from envforge.platforms import Os, TargetPlatform, host_platform

PROC_DRIVER = Path("/proc/driver/nvidia/version")
GPU_QUERY = ("--query-gpu=name,compute_cap,memory.total,memory.free", "--format=csv,noheader")
# Drivers older than compute_cap (before r510) refuse the field; they still answer this.
GPU_QUERY_OLD = ("--query-gpu=name,memory.total,memory.free", "--format=csv,noheader")

_TXT_VERSION = re.compile(r"CUDA Version (\d+\.\d+(?:\.\d+)?)")
# "NVRM version: NVIDIA UNIX x86_64 Kernel Module  440.33.01 ..." and, for the open kernel
# modules, "... NVIDIA UNIX Open Kernel Module for x86_64  580.159.04 ..." (seen on the H200).
_DRIVER_PROC = re.compile(r"Kernel Module(?: for \S+)?\s+(\d+\.\d+(?:\.\d+)?)")
_DIST_INFO = re.compile(r"^nvidia_cuda_(?:nvcc|runtime)-(\d+\.\d+(?:\.\d+)?)\.dist-info$")
_SMI_DRIVER = re.compile(r"Driver Version:\s*(\d+\.\d+(?:\.\d+)?)")
_SMI_CUDA = re.compile(r"CUDA Version:\s*(\d+\.\d+)")
_NVCC_RELEASE = re.compile(r"release (\d+\.\d+), V(\d+\.\d+(?:\.\d+)?)")
_VERSION_FILES = ("version.json", "version.txt", "dist-info")


class Toolkit(Frozen):
    """A toolkit folder as found: its version (None: toolkit-shaped, version unreadable),
    what the version was read from, and what pointed at the folder."""

    root: str
    version: str | None
    version_from: str
    found_by: str


class CudaToolkit(Frozen):
    """A toolkit whose version is known: what a step can pick and check a driver against."""

    root: Path
    version: str  # e.g. 10.2.89 or 13.0.48
    found_by: str

    @property
    def minor(self) -> str:
        return ".".join(self.version.split(".")[:2])


class Driver(Frozen):
    version: str | None
    cuda: str | None  # the newest CUDA the driver runs, as nvidia-smi says
    source: str
    output: CommandOutput | None = None

    @property
    def smi(self) -> str | None:
        """The nvidia-smi that answered, if one did: its GPUs can be asked for."""
        out = self.output
        answered = out is not None and out.returncode == 0 and out.argv == (self.source,)
        return self.source if answered else None


class Gpu(Frozen):
    index: int
    name: str
    compute_capability: str | None
    memory_total_mib: int | None
    memory_free_mib: int | None


# -- parsing ----------------------------------------------------------------------------

def parse_version_json(text: str) -> str | None:
    """``version.json`` (CUDA 11.1 on): ``{"cuda": {"version": "13.0.48"}}``."""
    try:
        return str(json.loads(text)["cuda"]["version"])
    except (ValueError, KeyError, TypeError):
        return None


def parse_version_txt(text: str) -> str | None:
    """``version.txt`` (before 11.1): ``CUDA Version 10.2.89``."""
    match = _TXT_VERSION.search(text)
    return match.group(1) if match else None


def parse_nvcc_version(text: str) -> str | None:
    """``nvcc --version``'s ``Cuda compilation tools, release 13.0, V13.0.88`` -> 13.0.88."""
    match = _NVCC_RELEASE.search(text)
    return match.group(2) if match else None


def parse_nvidia_smi(text: str) -> tuple[str | None, str | None]:
    """The driver's version and the newest CUDA it runs, from nvidia-smi's banner."""
    driver = _SMI_DRIVER.search(text)
    cuda = _SMI_CUDA.search(text)
    return driver.group(1) if driver else None, cuda.group(1) if cuda else None


def parse_proc_driver(text: str) -> str | None:
    """The kernel module's version from ``/proc/driver/nvidia/version``."""
    match = _DRIVER_PROC.search(text)
    return match.group(1) if match else None


def parse_gpu_query(text: str) -> tuple[Gpu, ...]:
    """``nvidia-smi --query-gpu=name[,compute_cap],memory.total,memory.free`` CSV lines."""
    gpus = []
    for index, line in enumerate(line for line in text.splitlines() if line.strip()):
        fields = [f.strip() for f in line.rsplit(",", 3)]
        if len(fields) == 4:
            name, cap, total, free = fields
        else:
            fields = [f.strip() for f in line.rsplit(",", 2)]
            if len(fields) != 3:
                continue
            (name, total, free), cap = fields, None
        gpus.append(Gpu(index=index, name=name,
                        compute_capability=cap if cap and re.fullmatch(r"\d+\.\d+", cap) else None,
                        memory_total_mib=_mib(total), memory_free_mib=_mib(free)))
    return tuple(gpus)


def _mib(text: str) -> int | None:
    match = re.match(r"(\d+)", text)
    return int(match[1]) if match else None


# -- toolkits ---------------------------------------------------------------------------

def toolkit_version(root: Path) -> str | None:
    """The version a toolkit folder declares: version.json since 11.1, version.txt before,
    and for toolkits assembled from NVIDIA's wheels (as here and on the H200 host), the
    nvcc or runtime wheel's dist-info folder name."""
    as_json = root / "version.json"
    if as_json.is_file():
        return parse_version_json(as_json.read_text(encoding="utf-8"))
    as_text = root / "version.txt"
    if as_text.is_file():
        return parse_version_txt(as_text.read_text(encoding="utf-8", errors="replace"))
    dist_info = root / "dist-info"
    if dist_info.is_dir():
        for entry in sorted(dist_info.iterdir()):
            found = _DIST_INFO.match(entry.name)
            if found:
                return found.group(1)
    return None


def toolkit_version_of(root: Path, runner: Runner = run_command) -> tuple[str | None, str]:
    """A toolkit's version and where it was read: version.json/.txt, then the wheels'
    dist-info, then ``bin/nvcc --version`` (the H200 host's /usr/local/cuda has no file).
    nvcc is asked only in a folder holding CUDA's headers: a wrapper script on PATH (this
    host's /usr/local/bin/nvcc) would make /usr/local a toolkit."""
    version = toolkit_version(root)
    if version is not None:
        return version, next(name for name in _VERSION_FILES if (root / name).exists())
    for name in ("nvcc", "nvcc.exe"):
        nvcc = root / "bin" / name
        if nvcc.is_file() and looks_like_toolkit(root):
            out = runner([str(nvcc), "--version"])
            version = parse_nvcc_version(out.output) if out else None
            if version is not None:
                return version, f"{nvcc} --version"
    return None, "unknown"


def looks_like_toolkit(root: Path) -> bool:
    include = root / "include"
    return (include / "cuda_runtime.h").is_file() or (include / "cuda.h").is_file()


def candidate_roots(environ: Mapping[str, str], *, platform: TargetPlatform,
                    search: tuple[Path, ...] | None = None) -> Iterator[tuple[Path, str]]:
    """Toolkit folders in the order Theano and NVIDIA's tools consult them (variables and
    PATH read as the target reads them: on Windows ``Path`` is PATH)."""
    for var in ("CUDA_ROOT", "CUDA_PATH", "CUDA_HOME"):
        if value := platform.getenv(environ, var):
            yield Path(value), var
    exe = f"nvcc{platform.exe_suffix}"
    for folder in path_folders(environ, platform):
        if (Path(folder) / exe).is_file():
            yield Path(folder).resolve().parent, "PATH (nvcc)"
    match platform.os:
        case Os.WINDOWS:
            program_files = platform.getenv(environ, "ProgramFiles") or r"C:\Program Files"
            default: tuple[Path, ...] = (Path(program_files)
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


def observe_toolkits(environ: Mapping[str, str], *, platform: TargetPlatform,
                     search: tuple[Path, ...] | None = None,
                     runner: Runner = run_command) -> tuple[Toolkit, ...]:
    """Every distinct toolkit folder, first the one the environment points at; one whose
    version cannot be read is kept when it holds CUDA's headers (doctor names it)."""
    seen: set[str] = set()
    found = []
    for root, how in candidate_roots(environ, platform=platform, search=search):
        real = str(root.resolve()) if root.exists() else str(root)
        if real in seen or not root.is_dir():
            continue
        seen.add(real)
        version, source = toolkit_version_of(root, runner)
        if version is None and not looks_like_toolkit(root):
            continue
        found.append(Toolkit(root=str(root), version=version, version_from=source, found_by=how))
    return tuple(found)


def find_toolkits(environ: Mapping[str, str], *, platform: TargetPlatform,
                  search: tuple[Path, ...] | None = None,
                  runner: Runner = run_command) -> list[CudaToolkit]:
    """The toolkits whose version is known, in ``observe_toolkits``' order."""
    return [CudaToolkit(root=Path(t.root), version=t.version, found_by=t.found_by)
            for t in observe_toolkits(environ, platform=platform, search=search, runner=runner)
            if t.version is not None]


# -- driver and GPUs --------------------------------------------------------------------

def path_folders(environ: Mapping[str, str], platform: TargetPlatform) -> tuple[str, ...]:
    """PATH's folders as the target reads them (Windows: quotes dropped, %VARS% expanded)."""
    folders = []
    for raw in (platform.getenv(environ, "PATH") or "").split(platform.pathsep):
        if raw.strip():
            folders.append(expand_vars(raw.strip().strip('"'), environ)
                           if platform.os is Os.WINDOWS else raw)
    return tuple(folders)


def exe_names(stem: str, platform: TargetPlatform) -> tuple[str, ...]:
    """The names a program is found by on PATH there (``nvidia-smi.exe``, then as written)."""
    return tuple(dict.fromkeys((f"{stem}{platform.exe_suffix}", stem)))


def nvidia_smi_on_path(folders: Iterable[str], platform: TargetPlatform) -> Path | None:
    """The first nvidia-smi on PATH (its name compared as the target's file system does)."""
    names = exe_names("nvidia-smi", platform)
    for folder in folders:
        present = _files(Path(folder))
        for name in names:
            if any(platform.same_file_name(name, n) for n in present):
                return Path(folder) / name
    return None


def _files(folder: Path) -> tuple[str, ...]:
    names = []
    with contextlib.suppress(OSError), os.scandir(folder) as entries:
        for entry in entries:
            with contextlib.suppress(OSError):
                if entry.is_file():  # follows links: a dangling one runs nothing
                    names.append(entry.name)
    return tuple(names)


def read_driver(environ: Mapping[str, str], *, platform: TargetPlatform | None = None,
                folders: Iterable[str] | None = None, proc_driver: Path = PROC_DRIVER,
                runner: Runner = run_command) -> Driver:
    """The driver as the first nvidia-smi on PATH (``folders``, else ``environ``'s) reports
    it, else, on Linux, as the kernel module's version file does. An nvidia-smi that fails
    is the answer (its output says why), not a reason to look further."""
    target = platform or host_platform()
    smi = nvidia_smi_on_path(path_folders(environ, target) if folders is None else folders,
                             target)
    if smi is not None:
        out = runner([str(smi)])
        if out is not None and out.returncode == 0:
            version, cuda = parse_nvidia_smi(out.output)
            return Driver(version=version, cuda=cuda, source=str(smi), output=out)
        if out is not None:
            return Driver(version=None, cuda=None, source=str(smi), output=out)
    match target.os:
        case Os.WINDOWS:
            return Driver(version=None, cuda=None, source="no nvidia-smi on PATH")
        case Os.LINUX:
            if proc_driver.is_file():
                text = proc_driver.read_text(encoding="utf-8", errors="replace")
                return Driver(version=parse_proc_driver(text), cuda=None,
                              source=str(proc_driver),
                              output=CommandOutput(argv=("cat", str(proc_driver)), returncode=0,
                                                   output=text.strip()))
            return Driver(version=None, cuda=None,
                          source=f"no nvidia-smi on PATH and no {proc_driver}")
        case _:
            assert_never(target.os)


def read_gpus(smi: str, runner: Runner = run_command) -> tuple[tuple[Gpu, ...],
                                                               CommandOutput | None]:
    """The GPUs an nvidia-smi that answered lists, and the query's output (asked again
    without compute_cap when an old driver refuses it)."""
    query = runner([smi, *GPU_QUERY])
    if query is None or query.returncode != 0:
        query = runner([smi, *GPU_QUERY_OLD])
    gpus = parse_gpu_query(query.output) if query and query.returncode == 0 else ()
    return gpus, query
