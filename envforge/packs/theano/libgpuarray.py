"""What the Theano pack knows about libgpuarray 0.7.6, pygpu's C library (libgpuarray.toml):
the names its loader dlopens, the toolkits whose DLLs it never finds by their shipped names,
and how it compiles kernels. Typed and looked up here, read once per process."""

from __future__ import annotations

import functools
from typing import Literal, assert_never

from envforge.knowledge import driver_library, in_range, major_minor, read_knowledge
from envforge.knowledge.models import Range, Row
from envforge.platforms import PLATFORMS, Os
from envforge.spec import Frozen, Platform

_PACKAGE = "envforge.packs.theano"  # where libgpuarray.toml lives


class LoaderRow(Row):
    library: Literal["driver", "nvrtc", "cublas"]
    names: dict[Platform, str]


class FallbackRow(Row):
    versions: tuple[str, ...]


class NameMismatchRow(Row):
    cuda: Range
    fact: str
    fix: str


class IdFactRow(Row):
    id: str
    fact: str


class LibgpuarrayFile(Frozen):
    loader: tuple[LoaderRow, ...]
    fallback: FallbackRow
    name_mismatch: tuple[NameMismatchRow, ...]
    facts: tuple[IdFactRow, ...]


class LoaderNames(Frozen):
    """The names libgpuarray 0.7.6 dlopens, in the order it tries them."""

    driver: str
    nvrtc: tuple[str, ...]
    cublas: tuple[str, ...]
    source: str


@functools.cache
def libgpuarray_knowledge() -> LibgpuarrayFile:
    """libgpuarray.toml, validated; a malformed row is a bug in the package and raises."""
    return LibgpuarrayFile.model_validate(read_knowledge("libgpuarray", _PACKAGE))


def libgpuarray_fact(fact_id: str) -> IdFactRow:
    """One of the ``[[facts]]`` rows, by id (``kernels``, ``linux-unversioned``)."""
    return next(row for row in libgpuarray_knowledge().facts if row.id == fact_id)


def libgpuarray_names(platform: Platform, driver_cuda: str) -> LoaderNames:
    """What libgpuarray 0.7.6 asks the loader for, given the driver's CUDA version.

    On Windows ``nvrtc64_%d%d.dll`` takes the driver's major and minor (10.2 gives
    ``nvrtc64_102.dll``), then the fallback versions below the driver's, in order;
    ``cublas[i]`` is asked for when ``nvrtc[i]`` loaded. Linux names are unversioned.
    """
    data = libgpuarray_knowledge()
    names = {row.library: row.names[platform] for row in data.loader}
    sources = sorted({row.source for row in data.loader})
    target = PLATFORMS[platform]
    match target.os:
        case Os.LINUX:
            return LoaderNames(driver=names["driver"], nvrtc=(names["nvrtc"],),
                               cublas=(names["cublas"],), source="; ".join(sources))
        case Os.WINDOWS:
            pass  # versioned names, the driver's CUDA first, then the fallbacks
        case _:
            assert_never(target.os)
    versions = [major_minor(driver_cuda)]
    versions += [v for v in map(major_minor, data.fallback.versions) if v < versions[0]]

    def candidates(pattern: str) -> tuple[str, ...]:
        return tuple(pattern.replace("%d%d", f"{major}{minor}") for major, minor in versions)

    return LoaderNames(driver=names["driver"], nvrtc=candidates(names["nvrtc"]),
                       cublas=candidates(names["cublas"]),
                       source="; ".join([*sources, f"fallback: {data.fallback.source}"]))


def linux_loader_names() -> tuple[str, ...]:
    """The unversioned Linux names it dlopens: the driver's, NVRTC's, cuBLAS's."""
    loader = libgpuarray_names("linux-64", "0")
    return (loader.driver, *loader.nvrtc, *loader.cublas)


def loader_name_mismatch(cuda: str) -> NameMismatchRow | None:
    """The row saying libgpuarray 0.7.6 never asks for a toolkit's shipped DLL names."""
    release = ".".join(map(str, major_minor(cuda)))
    return next((row for row in libgpuarray_knowledge().name_mismatch
                 if in_range(release, row.cuda)), None)


def loader_hints() -> tuple[tuple[str, str], ...]:
    """(text a failure prints, what fixes it) for its Linux library names, longest first so
    ``libcuda.so`` does not shadow the others."""
    loader = libgpuarray_names("linux-64", "0")
    source = libgpuarray_fact("linux-unversioned").source
    return tuple(
        (asked, f"libgpuarray loads the unversioned {asked}: link it to {target} in a folder "
                f"on LD_LIBRARY_PATH ({source})")
        for asked, target in ((loader.nvrtc[0], f"the CUDA toolkit's {loader.nvrtc[0]}.N"),
                              (loader.cublas[0], f"the CUDA toolkit's {loader.cublas[0]}.N"),
                              (loader.driver, f"the driver's {driver_library('linux-64')}")))
