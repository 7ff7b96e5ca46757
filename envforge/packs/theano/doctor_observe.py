"""What doctor observes of Theano on a host: the .theanorc files it reads (and one in the
current folder it never reads), THEANO_FLAGS, the cuda.root it defaults to, the folders and
libraries its settings name, and the distributions installing its package."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from envforge.doctor.facts import ConfigFile, SearchEntry
from envforge.doctor.rules.gpu import NVRTC_ARCH
from envforge.errors import EnvforgeError
from envforge.host.installed import installed_records
from envforge.host.windows import normalize_entry
from envforge.packs.theano.doctor_common import TheanoConfig
from envforge.packs.theano.doctor_flags import ldflags_parts, parse_theano_flags
from envforge.packs.theano.flags import parse_theanorc
from envforge.packs.theano.knowledge import theano_distribution, theano_knowledge
from envforge.packs.theano.libgpuarray import libgpuarray_fact
from envforge.packs.theano.rcfile import key_lines
from envforge.packs.theano.rcpaths import theanorc_paths
from envforge.platforms import PLATFORMS, Os, Platform, TargetPlatform

THEANO_FLAGS = "THEANO_FLAGS"
# Flags that name folders doctor must look into, in either spelling.
FOLDER_FLAGS = ("cuda.root", "dnn.base_path", "dnn.include_path", "dnn.library_path",
                "dnn.bin_path")


def observe_theano(*, environ: Mapping[str, str], platform: Platform, cwd: Path, python: str,
                   path: Sequence[SearchEntry], prefix: Path | None,
                   expected: Mapping[str, str]) -> TheanoConfig:
    """Theano's configuration as the installed release reads it; ``expected`` (the lock's
    flags) adds the folders the lock means Theano to use."""
    target = PLATFORMS[platform]
    files, write_to, ignored = _theanorc(platform, environ, cwd, python)
    theano_flags = target.getenv(environ, THEANO_FLAGS)
    values = _flag_values(files, theano_flags, expected)
    root, root_from = _cuda_root(environ, path, target)
    ldflags = values.get("blas.ldflags", [])
    mingw = prefix / "Library" / "mingw-w64" / "bin" / "g++.exe" if prefix is not None else None
    fallback = mingw if target.os is Os.WINDOWS and mingw is not None and mingw.is_file() \
        else None
    knowledge = theano_knowledge()
    rewrite = next(r.source for r in knowledge.config_reading
                   if r.id == "win32-dnn-rewrites-path")
    return TheanoConfig(
        name="Theano", files=files, files_label=".theanorc", write_to=write_to, ignored=ignored,
        variable=THEANO_FLAGS, variable_value=theano_flags,
        cuda_root=root, cuda_root_from=root_from, cuda_root_label="Theano's cuda.root",
        cuda_root_setting="cuda.root", cuda_root_variables=("CUDA_ROOT", "CUDA_PATH"),
        path_rewrite=rewrite if target.os is Os.WINDOWS else None,
        path_rewrite_how="sorted, lower-cased" if target.os is Os.WINDOWS else "",
        path_order=_rewritten_path(path) if target.os is Os.WINDOWS else (),
        compiler_fallback=str(fallback) if fallback is not None else None,
        compiler_fallback_from="Theano's win32 fallback <python dir>\\Library\\mingw-w64\\bin",
        without_gpu='it will log "Could not initialize pygpu" and run on the CPU',
        cpu_setting="[global] device = cpu",
        sources={"cuda-root": next(r.source for r in knowledge.flags if r.name == "cuda.root"),
                 "gpu-activated": next(r.source for r in knowledge.gpu_probe
                                       if r.id == "activated"),
                 NVRTC_ARCH: libgpuarray_fact("kernels").source},
        roots=(*([root] if root else []), *values.get("cuda.root", []),
               *values.get("dnn.base_path", [])),
        folders=(*values.get("dnn.bin_path", []), *values.get("dnn.library_path", []),
                 *(d for value in ldflags for d in ldflags_parts(value)[0])),
        include_dirs=tuple(values.get("dnn.include_path", [])),
        libraries=tuple(lib for value in ldflags for lib in ldflags_parts(value)[1]),
        distributions=installed_theanos(prefix) if prefix is not None and prefix.is_dir()
        else {})


def _rewritten_path(path: Sequence[SearchEntry]) -> tuple[int, ...]:
    """PATH's entries (by index) as Theano leaves them on win32 before it loads cuDNN:
    lower-cased and sorted (knowledge: win32-dnn-rewrites-path)."""
    return tuple(entry.index for entry in sorted(path, key=lambda e: normalize_entry(e.path)))


def _theanorc(platform: Platform, env: Mapping[str, str], cwd: Path,
              python: str) -> tuple[tuple[ConfigFile, ...], str, ConfigFile | None]:
    places = theanorc_paths(platform, env, python=python)
    files = tuple(_read_rc(Path(p.as_posix()), read=True) for p in places.files)
    here = cwd / ".theanorc"
    cwd_rc = None
    if here.is_file() and not any(_same_file(here, Path(f.path)) for f in files):
        cwd_rc = _read_rc(here, read=False)
    return files, Path(places.write_to.as_posix()).as_posix(), cwd_rc


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.samefile(b)
    except OSError:
        return False


def _read_rc(path: Path, *, read: bool) -> ConfigFile:
    if not path.is_file():
        return ConfigFile(path=str(path), exists=False, read=read)
    text = path.read_bytes().decode("utf-8", errors="replace")
    try:
        flags = parse_theanorc(text)
    except EnvforgeError as exc:
        return ConfigFile(path=str(path), exists=True, read=read, text=text, error=str(exc))
    by_lower = key_lines(text)
    lines = {name: by_lower[name.lower()] for name in flags if name.lower() in by_lower}
    return ConfigFile(path=str(path), exists=True, read=read, text=text, flags=flags,
                      lines=lines)


def _flag_values(files: Iterable[ConfigFile], theano_flags: str | None,
                 expected: Mapping[str, str]) -> dict[str, list[str]]:
    """Every value any source gives a folder flag or blas.ldflags, in either spelling."""
    values: dict[str, list[str]] = {}
    pairs: list[tuple[str, str]] = [(k, v) for f in files for k, v in f.flags.items()]
    pairs += parse_theano_flags(theano_flags or "")
    pairs += list(expected.items())
    for key, value in pairs:
        name = key.replace("__", ".")
        if name in (*FOLDER_FLAGS, "blas.ldflags") and value:
            values.setdefault(name, []).append(value)
    return values


def _cuda_root(env: Mapping[str, str], path: Sequence[SearchEntry],
               target: TargetPlatform) -> tuple[str | None, str]:
    """Theano's default ``cuda.root``: CUDA_ROOT, CUDA_PATH, else the parent of the first
    PATH folder holding a file named exactly ``nvcc`` (so never ``nvcc.exe``)."""
    for name in ("CUDA_ROOT", "CUDA_PATH"):
        value = target.getenv(env, name)
        if value:
            return value, name
    for entry in path:
        if (Path(entry.path) / "nvcc").exists():
            return (str(Path(os.path.normpath(Path(entry.path).absolute())).parent),
                    f"the parent of {entry.path}, the first PATH folder holding `nvcc`")
    return None, "no CUDA_ROOT, CUDA_PATH or `nvcc` on PATH"


def installed_theanos(prefix: Path) -> dict[str, str]:
    """Distribution (as knowledge names it: ``Theano``, ``Theano-PyMC``) -> version, for
    every distribution installing the ``theano`` package: two of them overwrite each other."""
    found: dict[str, str] = {}
    for name, version, _ in installed_records(prefix):
        row = theano_distribution(name)
        if row is not None:
            found.setdefault(row.name, version)
    return found
