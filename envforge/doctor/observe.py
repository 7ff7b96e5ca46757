"""Observing the host once: the only part of doctor that reads files and runs commands.

Everything it looks at is a parameter (environment, platform, current folder, where
toolkits and system libraries live, the registry, how commands run), so tests build
real layouts, Linux- or Windows-shaped, and observe them on any machine. What it
finds goes into ``HostFacts``; the rules never look at the host themselves.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import assert_never

from packaging.utils import canonicalize_name

from envforge.doctor.facts import (
    RELEVANT_VARIABLES,
    CommandOutput,
    Compiler,
    CudaVariable,
    CudnnHeader,
    DirListing,
    Driver,
    Environment,
    FrameworkConfig,
    Gpu,
    HostFacts,
    RegistryPath,
    SearchEntry,
    Toolkit,
)
from envforge.envvars import apply_edits
from envforge.errors import EnvforgeError
from envforge.host import proc
from envforge.host.cuda import (
    NVCC_RELEASE,
    candidate_roots,
    parse_nvidia_smi,
    parse_proc_driver,
    toolkit_version,
)
from envforge.host.installed import installed_records
from envforge.host.ldcache import cache_entries, ldconfig_output
from envforge.host.windows import (
    SYSTEM_ENVIRONMENT,
    USER_ENVIRONMENT,
    RegistrySeam,
    expand_vars,
    normalize_entry,
)
from envforge.knowledge import libgpuarray_names, library_file_patterns
from envforge.platforms import PLATFORMS, Os, Platform, TargetPlatform
from envforge.steps.cudnn import cudnn_header_version

Runner = Callable[[Sequence[str]], CommandOutput | None]

# Where the dynamic loader and the linker look when no variable says otherwise (Debian,
# Ubuntu, RHEL layouts), and where the compiler finds headers by default.
LINUX_LIB_DIRS = ("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64",
                  "/lib", "/usr/lib", "/usr/local/lib")
LINUX_INCLUDE_DIRS = ("/usr/include", "/usr/include/x86_64-linux-gnu")
PROC_DRIVER = Path("/proc/driver/nvidia/version")

GPU_QUERY = ("--query-gpu=name,compute_cap,memory.total,memory.free", "--format=csv,noheader")
# Drivers older than compute_cap (before r510) refuse the field; they still answer this.
GPU_QUERY_OLD = ("--query-gpu=name,memory.total,memory.free", "--format=csv,noheader")

BLAS_LIBRARIES = ("openblas", "blas", "mkl_rt")

# The CUDA/cuDNN/loader library names come from the knowledge base (any version).
_TOOLS = (r"nvcc(?:\.exe)?", r"g\+\+(?:\.exe)?", r"cl\.exe", r"nvidia-smi(?:\.exe)?")
_THREAD_MODEL = re.compile(r"Thread model:\s*(\S+)")
_GCC_VERSION = re.compile(r"gcc version (\S+)")


def run_command(argv: Sequence[str]) -> CommandOutput | None:
    """Run a probe command; None when it cannot be started at all."""
    try:
        done = proc.run(list(argv), check=False, timeout=60)
    except (EnvforgeError, OSError):
        return None
    text = (done.stdout + done.stderr).strip()
    return CommandOutput(argv=tuple(argv), returncode=done.returncode, output=text[-8000:])


def observe(*, environ: Mapping[str, str], platform: Platform, cwd: Path,
            prefix: Path | None = None, prefix_from: str = "spec",
            cuda_search: tuple[Path, ...] | None = None,
            system_lib_dirs: Sequence[Path] | None = None,
            system_include_dirs: Sequence[Path] | None = None,
            proc_driver: Path = PROC_DRIVER, python: str = "3.7",
            expected_settings: Mapping[str, Mapping[str, str]] | None = None,
            registry: RegistrySeam | None = None, runner: Runner = run_command,
            ldconfig: Sequence[str] = ("ldconfig", "-p")) -> HostFacts:
    """Everything the rules need, read once. ``prefix`` is the environment to judge (the
    spec's, or ``--prefix``; else VIRTUAL_ENV or CONDA_PREFIX): its envforge activation,
    if any, is applied first, so the host is judged as ``envforge run`` would see it."""
    target = PLATFORMS[platform]
    env = dict(environ)
    activated = False
    if prefix is not None:
        env, activated = _activated(prefix, env, target.pathsep)
    match target.os:
        case Os.WINDOWS:  # DLLs load from PATH: no library path, system folders, loader cache
            default_libs: tuple[Path, ...] = ()
            default_includes: tuple[Path, ...] = ()
            library_path: tuple[SearchEntry, ...] = ()
        case Os.LINUX:
            default_libs = tuple(map(Path, LINUX_LIB_DIRS))
            default_includes = tuple(map(Path, LINUX_INCLUDE_DIRS))
            library_path = _entries(target.library_path_var,
                                    env.get(target.library_path_var, ""), target, env)
        case _:
            assert_never(target.os)
    lib_dirs = [str(p) for p in (default_libs if system_lib_dirs is None else system_lib_dirs)]
    include_dirs = [str(p) for p in (default_includes if system_include_dirs is None
                                     else system_include_dirs)]

    path = _entries("PATH", target.getenv(env, "PATH") or "", target, env)
    environment = _environment(prefix, prefix_from, env, target, activated)
    env_prefix = Path(environment.prefix) if environment is not None else None
    frameworks = _frameworks(env, platform, cwd, python, path, env_prefix,
                             expected_settings or {})

    toolkits = _toolkits(env, target, cuda_search, runner)
    cuda_variables = tuple(_cuda_variable(name, value, runner)
                           for name in ("CUDA_ROOT", "CUDA_PATH", "CUDA_HOME")
                           if (value := target.getenv(env, name)))

    configs = tuple(frameworks.values())
    folders = _folders(path, library_path, lib_dirs, toolkits, configs)
    wanted = _interesting([lib for c in configs for lib in c.libraries], target)
    dirs = {folder: _listing(folder, wanted) for folder in dict.fromkeys(folders)}

    includes = _include_dirs(toolkits, configs, include_dirs)
    cudnn = {folder: header for folder in includes if (header := _cudnn_header(Path(folder)))}
    toolkits = tuple(t.model_copy(update={"cudnn": cudnn.get(str(Path(t.root) / "include"))})
                     for t in toolkits)

    driver, gpus, gpu_query = _driver(path, dirs, target, proc_driver, runner)
    gxx = _gxx(path, dirs, target, configs, runner)
    msvc = next((e for e in path if target.os is Os.WINDOWS
                 and _holds(dirs, e.path, "cl.exe", target)), None)
    kept = {n.upper() for n in (*RELEVANT_VARIABLES, *_pack_variables())}
    return HostFacts(
        platform=platform, cwd=str(cwd),
        environ={k: v for k, v in env.items()
                 if k.upper() in kept or k.upper().startswith("CUDA_PATH_V")},
        path=path, library_path=library_path, system_lib_dirs=tuple(lib_dirs),
        system_include_dirs=tuple(include_dirs), dirs=dirs,
        toolkits=toolkits, cuda_variables=cuda_variables, cudnn_headers=cudnn, driver=driver,
        gpus=gpus, gpu_query=gpu_query, gxx=gxx, msvc=msvc, frameworks=frameworks,
        env=environment,
        registry_path=_registry_path(registry, env) if target.os is Os.WINDOWS and registry
        else None,
        ld_cache=_ld_cache(ldconfig) if target.os is Os.LINUX else {},
    )


def _pack_variables() -> tuple[str, ...]:
    from envforge.packs import PACKS

    return tuple(name for pack in PACKS.values() for name in pack.doctor_variables)


def _frameworks(env: Mapping[str, str], platform: Platform, cwd: Path, python: str,
                path: Sequence[SearchEntry], prefix: Path | None,
                expected: Mapping[str, Mapping[str, str]]) -> dict[str, FrameworkConfig]:
    """Each registered pack's view of its configuration on this host."""
    from envforge.packs import PACKS

    return {name: pack.doctor_observe(environ=env, platform=platform, cwd=cwd, python=python,
                                      path=path, prefix=prefix,
                                      expected=expected.get(name, {}))
            for name, pack in PACKS.items()}


def _loader_names() -> tuple[str, ...]:
    """libgpuarray's unversioned Linux names (knowledge/libgpuarray.toml)."""
    loader = libgpuarray_names("linux-64", "0")
    return (loader.driver, *loader.nvrtc, *loader.cublas)


def _ld_cache(ldconfig: Sequence[str]) -> dict[str, str]:
    """libgpuarray's unversioned names as ``ldconfig -p`` lists them (x86-64 entries),
    read whole, not through the runner, whose output is clipped for the report: the cache
    lists thousands of libraries (on the H200 host libnvrtc.so was past the clip)."""
    found: dict[str, str] = {}
    for name, target in cache_entries(ldconfig_output(ldconfig)):
        if name in _loader_names():
            found.setdefault(name, target)
    return found


# -- environment and search paths ------------------------------------------------------

def _activated(prefix: Path, env: dict[str, str], sep: str) -> tuple[dict[str, str], bool]:
    from envforge.steps.activation import EDITS_FILE, load_edits

    if not (prefix / EDITS_FILE).is_file():
        return env, False
    try:
        edits = load_edits(prefix)
    except (ValueError, OSError):
        return env, False
    return apply_edits(edits, env, pathsep=sep), True


def _entries(variable: str, value: str, target: TargetPlatform,
             env: Mapping[str, str]) -> tuple[SearchEntry, ...]:
    found: list[SearchEntry] = []
    for raw in value.split(target.pathsep):
        if not raw.strip():
            continue
        # Windows reads "quoted" entries and %VARIABLES% in them; POSIX takes them as they are
        folder = expand_vars(raw.strip().strip('"'), env) if target.os is Os.WINDOWS else raw
        found.append(SearchEntry(variable=variable, index=len(found), entry=raw, path=folder))
    return tuple(found)


# -- CUDA -------------------------------------------------------------------------------

def toolkit_version_of(root: Path, runner: Runner) -> tuple[str | None, str]:
    """A toolkit's version and where it was read: version.json/.txt, then the wheels'
    dist-info (pip-installed toolkits have neither), then ``nvcc --version``."""
    version = toolkit_version(root)
    if version is not None:
        for name in ("version.json", "version.txt", "dist-info"):
            if (root / name).exists():
                return version, name
    for name in ("nvcc", "nvcc.exe"):
        nvcc = root / "bin" / name
        if nvcc.is_file() and _looks_like_toolkit(root):
            out = runner([str(nvcc), "--version"])
            match = NVCC_RELEASE.search(out.output) if out else None
            if match:
                return match[2], f"{nvcc} --version"
    return None, "unknown"


def _looks_like_toolkit(root: Path) -> bool:
    include = root / "include"
    return (include / "cuda_runtime.h").is_file() or (include / "cuda.h").is_file()


def _toolkits(env: Mapping[str, str], target: TargetPlatform, search: tuple[Path, ...] | None,
              runner: Runner) -> tuple[Toolkit, ...]:
    seen: set[str] = set()
    found = []
    for root, how in candidate_roots(env, platform=target, search=search):
        real = str(root.resolve()) if root.exists() else str(root)
        if real in seen or not root.is_dir():
            continue
        seen.add(real)
        version, source = toolkit_version_of(root, runner)
        if version is None and not _looks_like_toolkit(root):
            continue
        found.append(Toolkit(root=str(root), version=version, version_from=source, found_by=how))
    return tuple(found)


def _cuda_variable(name: str, value: str, runner: Runner) -> CudaVariable:
    root = Path(value)
    exists = root.is_dir()
    version = toolkit_version_of(root, runner)[0] if exists else None
    return CudaVariable(name=name, value=value, exists=exists, version=version)


def _cudnn_header(include: Path) -> CudnnHeader | None:
    for name in ("cudnn_version.h", "cudnn.h"):
        header = include / name
        if header.is_file():
            version = cudnn_header_version(header.read_text(encoding="utf-8", errors="replace"))
            if version is not None:
                return CudnnHeader(include=str(include), file=str(header),
                                   version=".".join(map(str, version)))
    return None


def _include_dirs(toolkits: Iterable[Toolkit], configs: Iterable[FrameworkConfig],
                  system: Sequence[str]) -> list[str]:
    folders = [str(Path(t.root) / "include") for t in toolkits]
    configs = tuple(configs)
    folders += [str(Path(r) / "include") for c in configs for r in c.roots]
    folders += [d for c in configs for d in c.include_dirs] + list(system)
    return list(dict.fromkeys(folders))


# -- folders and the files in them ------------------------------------------------------

def _folders(path: Sequence[SearchEntry], library_path: Sequence[SearchEntry],
             lib_dirs: Sequence[str], toolkits: Iterable[Toolkit],
             configs: Sequence[FrameworkConfig]) -> list[str]:
    roots = [t.root for t in toolkits] + [r for c in configs for r in c.roots]
    folders = [e.path for e in (*path, *library_path)] + list(lib_dirs)
    for root in roots:
        base = Path(root)
        folders += [str(base / "bin"), str(base / "lib64"), str(base / "lib" / "x64"),
                    str(base / "lib"), str(base / "targets" / "x86_64-linux" / "lib")]
    folders += [f for c in configs for f in c.folders]
    return folders


def _interesting(libs: Iterable[str], target: TargetPlatform) -> re.Pattern[str]:
    names = sorted({*libs, *BLAS_LIBRARIES})
    link = rf"(?:lib)?(?:{'|'.join(map(re.escape, names))})\.(?:so(?:\.\d+)*|a|dll\.a|lib|dll)"
    return re.compile(rf"^(?:{'|'.join((*library_file_patterns(), *_TOOLS, link))})$",
                      re.IGNORECASE if target.case_insensitive_files else 0)


def _listing(folder: str, wanted: re.Pattern[str]) -> DirListing:
    path = Path(folder)
    if not path.is_dir():
        return DirListing(path=folder, exists=False)
    names = []
    with contextlib.suppress(OSError), os.scandir(path) as entries:
        for entry in entries:
            if wanted.match(entry.name):
                with contextlib.suppress(OSError):
                    if entry.is_file():  # follows links: a dangling one loads nothing
                        names.append(entry.name)
    return DirListing(path=folder, exists=True, names=tuple(sorted(names)))


def _holds(dirs: Mapping[str, DirListing], folder: str, name: str,
           target: TargetPlatform) -> bool:
    listing = dirs.get(folder)
    return listing is not None and any(target.same_file_name(name, n) for n in listing.names)


def _first_on_path(path: Sequence[SearchEntry], dirs: Mapping[str, DirListing],
                   names: Sequence[str], target: TargetPlatform) -> tuple[SearchEntry, Path] | None:
    for entry in path:
        for name in names:
            if _holds(dirs, entry.path, name, target):
                return entry, Path(entry.path) / name
    return None


# -- driver and GPUs --------------------------------------------------------------------

def _driver(path: Sequence[SearchEntry], dirs: Mapping[str, DirListing],
            target: TargetPlatform, proc_driver: Path,
            runner: Runner) -> tuple[Driver, tuple[Gpu, ...], CommandOutput | None]:
    names = _exe_names("nvidia-smi", target)
    found = _first_on_path(path, dirs, names, target)
    if found is not None:
        smi = str(found[1])
        out = runner([smi])
        if out is not None and out.returncode == 0:
            info = parse_nvidia_smi(out.output)
            query = runner([smi, *GPU_QUERY])
            if query is None or query.returncode != 0:
                query = runner([smi, *GPU_QUERY_OLD])
            gpus = parse_gpu_query(query.output) if query and query.returncode == 0 else ()
            return Driver(version=info.version, cuda=info.cuda, source=smi, output=out), \
                gpus, query
        if out is not None:
            return Driver(version=None, cuda=None, source=smi, output=out), (), None
    match target.os:
        case Os.WINDOWS:
            return Driver(version=None, cuda=None, source="no nvidia-smi on PATH"), (), None
        case Os.LINUX:  # the kernel module's version file
            if proc_driver.is_file():
                text = proc_driver.read_text(encoding="utf-8", errors="replace")
                return Driver(version=parse_proc_driver(text), cuda=None,
                              source=str(proc_driver),
                              output=CommandOutput(argv=("cat", str(proc_driver)), returncode=0,
                                                   output=text.strip())), (), None
            return Driver(version=None, cuda=None,
                          source=f"no nvidia-smi on PATH and no {proc_driver}"), (), None
        case _:
            assert_never(target.os)


def _exe_names(stem: str, target: TargetPlatform) -> tuple[str, ...]:
    """The names a program is found by on PATH there (``nvidia-smi.exe``, then as written)."""
    return tuple(dict.fromkeys((f"{stem}{target.exe_suffix}", stem)))


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


# -- compilers --------------------------------------------------------------------------

def _gxx(path: Sequence[SearchEntry], dirs: Mapping[str, DirListing], target: TargetPlatform,
         configs: Sequence[FrameworkConfig], runner: Runner) -> Compiler | None:
    found = _first_on_path(path, dirs, _exe_names("g++", target), target)
    fallback = next((c for c in configs if c.compiler_fallback), None)
    if found is not None:
        entry, exe = found
        index, how = entry.index, f"PATH entry {entry.index}"
    elif fallback is not None and fallback.compiler_fallback is not None:
        exe, index, how = Path(fallback.compiler_fallback), -1, fallback.compiler_fallback_from
    else:
        return None
    out = runner([str(exe), "-v"])
    text = out.output if out else ""
    model = _THREAD_MODEL.search(text)
    version = _GCC_VERSION.search(text)
    return Compiler(path=str(exe), path_index=index, found_by=how,
                    version=version[1] if version else None,
                    thread_model=model[1] if model else None, output=out)


# -- the Python environment -------------------------------------------------------------

def _environment(prefix: Path | None, found_by: str, env: Mapping[str, str],
                 target: TargetPlatform, activated: bool) -> Environment | None:
    if prefix is None:
        for name in ("VIRTUAL_ENV", "CONDA_PREFIX"):
            value = target.getenv(env, name)
            if value:
                prefix, found_by = Path(value), name
                break
    if prefix is None:
        return None
    if not prefix.is_dir():
        return Environment(prefix=str(prefix), exists=False, found_by=found_by)
    versions, sources = installed_versions(prefix)
    return Environment(prefix=str(prefix), exists=True, found_by=found_by, activated=activated,
                       versions=versions, sources=sources)


def canonical_package(name: str) -> str:
    """PEP 503 normalised, with a pack's distributions counted as the package they install
    (every distribution of ``theano`` is Theano): the rules are per release."""
    from envforge.packs import PACKS

    return next((package for pack in PACKS.values()
                 if (package := pack.distribution_package(name)) is not None),
                canonicalize_name(name))


def installed_versions(prefix: Path) -> tuple[dict[str, str], dict[str, str]]:
    """Package -> version, and the metadata file each came from (the first record wins)."""
    versions: dict[str, str] = {}
    sources: dict[str, str] = {}
    for name, version, source in installed_records(prefix):
        key = canonical_package(name)
        if key not in versions:
            versions[key] = version
            sources[key] = str(source)
    return versions, sources


# -- Windows registry -------------------------------------------------------------------

def _registry_path(registry: RegistrySeam, env: Mapping[str, str]) -> RegistryPath:
    system = registry.get(SYSTEM_ENVIRONMENT, "Path")
    user = registry.get(USER_ENVIRONMENT, "Path")
    values = [str(v[0]) for v in (system, user) if v is not None]
    entries = [expand_vars(e.strip().strip('"'), env) for value in values
               for e in value.split(";") if e.strip()]
    unique: dict[str, str] = {}
    for entry in entries:
        unique.setdefault(normalize_entry(entry), entry)
    return RegistryPath(system=None if system is None else str(system[0]),
                        user=None if user is None else str(user[0]), entries=tuple(unique.values()))
