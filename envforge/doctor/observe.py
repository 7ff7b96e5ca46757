"""Observing the host once: the only part of doctor that reads files and runs commands
(toolkits, the driver and GPUs through host/cuda, the observation apply and verify use).

Everything it looks at is a parameter (environment, platform, current folder, where
toolkits and system libraries live, the registry, how commands run), so tests build
real layouts, Linux- or Windows-shaped, and observe them on any machine. What it
finds goes into ``HostFacts``; the rules never look at the host themselves.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Protocol, assert_never

from packaging.utils import canonicalize_name

from envforge.doctor.facts import (
    RELEVANT_VARIABLES,
    Compiler,
    CudaVariable,
    CudnnHeader,
    DirListing,
    Environment,
    FrameworkConfig,
    HostFacts,
    RegistryPath,
    SearchEntry,
    Toolkit,
)
from envforge.envvars import apply_edits
from envforge.host.cmdoutput import Runner, run_command
from envforge.host.cuda import (
    PROC_DRIVER,
    exe_names,
    observe_toolkits,
    read_driver,
    read_gpus,
    toolkit_version_of,
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
from envforge.knowledge import library_file_patterns
from envforge.packapi import Pack, Registry
from envforge.platforms import PLATFORMS, Os, Platform, TargetPlatform
from envforge.steps.cudnn import cudnn_header_version

# Where the dynamic loader and the linker look when no variable says otherwise (Debian,
# Ubuntu, RHEL layouts), and where the compiler finds headers by default.
LINUX_LIB_DIRS = ("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64",
                  "/lib", "/usr/lib", "/usr/local/lib")
LINUX_INCLUDE_DIRS = ("/usr/include", "/usr/include/x86_64-linux-gnu")

BLAS_LIBRARIES = ("openblas", "blas", "mkl_rt")

# The CUDA/cuDNN/loader library names come from the knowledge base (any version).
_TOOLS = (r"nvcc(?:\.exe)?", r"g\+\+(?:\.exe)?", r"cl\.exe", r"nvidia-smi(?:\.exe)?")
_THREAD_MODEL = re.compile(r"Thread model:\s*(\S+)")
_GCC_VERSION = re.compile(r"gcc version (\S+)")


def observe(*, environ: Mapping[str, str], platform: Platform, cwd: Path,
            prefix: Path | None = None, prefix_from: str = "spec",
            cuda_search: tuple[Path, ...] | None = None,
            system_lib_dirs: Sequence[Path] | None = None,
            system_include_dirs: Sequence[Path] | None = None,
            proc_driver: Path = PROC_DRIVER, python: str = "3.7",
            expected_settings: Mapping[str, Mapping[str, str]] | None = None,
            registry: RegistrySeam | None = None, runner: Runner = run_command,
            ldconfig: Sequence[str] = ("ldconfig", "-p"),
            packs: Registry[ObservedPack]) -> HostFacts:
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
    environment = _environment(prefix, prefix_from, env, target, activated, packs)
    env_prefix = Path(environment.prefix) if environment is not None else None
    frameworks = _frameworks(env, platform, cwd, python, path, env_prefix,
                             expected_settings or {}, packs)

    toolkits = tuple(Toolkit(**t.model_dump()) for t in observe_toolkits(
        env, platform=target, search=cuda_search, runner=runner))
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

    driver = read_driver(env, platform=target, folders=[e.path for e in path],
                         proc_driver=proc_driver, runner=runner)
    gpus, gpu_query = read_gpus(driver.smi, runner) if driver.smi else ((), None)
    gxx = _gxx(path, dirs, target, configs, runner)
    msvc = next((e for e in path if target.os is Os.WINDOWS
                 and _holds(dirs, e.path, "cl.exe", target)), None)
    kept = {n.upper() for n in (*RELEVANT_VARIABLES,
                                *(name for pack in packs for name in pack.doctor_variables))}
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
        ld_cache=_ld_cache(ldconfig, packs) if target.os is Os.LINUX else {},
        packages=doctor_packages(packs),
    )


class ObservedPack(Pack, Protocol):
    """What observing the host asks of a pack: its name in findings, its variables, its
    configuration here, the distributions it counts as its packages, the packages doctor
    shows and the library names its framework dlopens."""

    @property
    def display_name(self) -> str: ...

    @property
    def doctor_variables(self) -> tuple[str, ...]: ...

    @property
    def doctor_packages(self) -> tuple[str, ...]: ...

    def doctor_observe(self, *, environ: Mapping[str, str], platform: Platform, cwd: Path,
                       python: str, path: Sequence[SearchEntry], prefix: Path | None,
                       expected: Mapping[str, str]) -> FrameworkConfig: ...

    def distribution_package(self, name: str) -> str | None: ...

    def dlopen_names(self) -> tuple[str, ...]: ...


def _frameworks(env: Mapping[str, str], platform: Platform, cwd: Path, python: str,
                path: Sequence[SearchEntry], prefix: Path | None,
                expected: Mapping[str, Mapping[str, str]],
                packs: Registry[ObservedPack]) -> dict[str, FrameworkConfig]:
    """Each registered pack's view of its configuration on this host, named (its display
    name where the pack's view gives none: findings name the framework, never "it")."""
    configs = {pack.name: pack.doctor_observe(environ=env, platform=platform, cwd=cwd,
                                              python=python, path=path, prefix=prefix,
                                              expected=expected.get(pack.name, {}))
               for pack in packs}
    return {pack.name: configs[pack.name] if configs[pack.name].name
            else configs[pack.name].model_copy(update={"name": pack.display_name})
            for pack in packs}


def doctor_packages(packs: Registry[ObservedPack]) -> tuple[str, ...]:
    """Python, then the packages each pack has doctor show and check against the lock."""
    names = ("python", *(name for pack in packs for name in pack.doctor_packages))
    return tuple(dict.fromkeys(names))


def _ld_cache(ldconfig: Sequence[str], packs: Registry[ObservedPack]) -> dict[str, str]:
    """The names the packs' frameworks dlopen (``FrameworkPack.dlopen_names``) as
    ``ldconfig -p`` lists them (x86-64 entries), read whole, not through the runner, whose
    output is clipped for the report: the cache lists thousands of libraries (on the H200
    host libnvrtc.so was past the clip). Nothing is run when no pack names one."""
    names = {name for pack in packs for name in pack.dlopen_names()}
    found: dict[str, str] = {}
    if not names:
        return found
    for name, target in cache_entries(ldconfig_output(ldconfig)):
        if name in names:
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


# -- compilers --------------------------------------------------------------------------

def _gxx(path: Sequence[SearchEntry], dirs: Mapping[str, DirListing], target: TargetPlatform,
         configs: Sequence[FrameworkConfig], runner: Runner) -> Compiler | None:
    found = _first_on_path(path, dirs, exe_names("g++", target), target)
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
                 target: TargetPlatform, activated: bool,
                 packs: Registry[ObservedPack]) -> Environment | None:
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
    versions, sources = installed_versions(prefix, packs)
    return Environment(prefix=str(prefix), exists=True, found_by=found_by, activated=activated,
                       versions=versions, sources=sources)


def canonical_package(name: str, packs: Registry[ObservedPack]) -> str:
    """PEP 503 normalised, with a pack's distributions counted as the package they install
    (every distribution of ``theano`` is Theano): the rules are per release."""
    return next((package for pack in packs
                 if (package := pack.distribution_package(name)) is not None),
                canonicalize_name(name))


def installed_versions(prefix: Path,
                       packs: Registry[ObservedPack]) -> tuple[dict[str, str], dict[str, str]]:
    """Package -> version, and the metadata file each came from (the first record wins)."""
    versions: dict[str, str] = {}
    sources: dict[str, str] = {}
    for name, version, source in installed_records(prefix):
        key = canonical_package(name, packs)
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
