"""What envforge knows about CUDA, cuDNN and the artifacts and packages of a stack, as data
with sources (a framework's own, e.g. Theano's rules, are its pack's).

The facts live in the TOML files beside this module (a framework pack's in its folder,
``envforge/packs/NAME/``), one row per fact, each with a
``source`` so a message can say where a rule comes from; rows read from code rather
than run say *inferred*, rows observed on our own machines say "seen here". This module
only types them (frozen models) and looks them up; it reads the package's own files and
nothing else, once per process.
"""

from __future__ import annotations

import functools
import re
import tomllib
from collections.abc import Collection
from importlib import resources
from importlib.resources.abc import Traversable
from typing import Any, Literal, Protocol, assert_never

from envforge.knowledge.models import (
    ArchiveLayoutRow,
    ArtifactsFile,
    BuildErrorRow,
    BuildModuleRow,
    BuildsFile,
    CondaFile,
    CondaPackageRow,
    CudaFile,
    CudnnFile,
    CudnnSupportRow,
    DebConfigureRow,
    DebianFile,
    DebianPackageRow,
    Fact,
    KeptModuleRow,
    KnownArtifact,
    ModulesFile,
    ReferenceFile,
    UnknownFactError,
    in_range,
    major_minor,
)
from envforge.packapi import Pack, Registry
from envforge.platforms import PLATFORMS, Os, TargetPlatform
from envforge.spec import Frozen, Platform

__all__ = [
    "KNOWLEDGE_FILES",
    "Fact",
    "Knowledge",
    "KnownArtifact",
    "UnknownFactError",
    "abi_packages",
    "compute_capability_range",
    "conda_package",
    "cuda_library_name",
    "cuda_runtime_release",
    "cudnn_archive_layout",
    "cudnn_library_name",
    "cudnn_major",
    "cudnn_support",
    "cudnn_supports",
    "cudnn_version_code",
    "deb_configure",
    "debian_package",
    "driver_library",
    "era_build_error",
    "error_hints",
    "find_artifact",
    "in_range",
    "kept_module",
    "knowledge",
    "knowledge_file",
    "known_build_requires",
    "library_file_patterns",
    "major_minor",
    "max_host_gcc",
    "min_driver",
    "read_knowledge",
    "removed_build_module",
]

# The whole base

# The core's files; a pack's own (``FrameworkPack.knowledge``) are typed and looked up by
# the pack.
KNOWLEDGE_FILES = ("cuda", "cudnn", "artifacts", "conda", "debian", "reference", "builds",
                   "modules")


class Knowledge(Frozen):
    cuda: CudaFile
    cudnn: CudnnFile
    artifacts: ArtifactsFile
    conda: CondaFile
    debian: DebianFile
    reference: ReferenceFile
    builds: BuildsFile
    modules: ModulesFile


def knowledge_file(name: str, package: str = __name__) -> Traversable:
    """Where a knowledge file lives: the folder of ``package``, a pack's own for its files
    (``envforge/packs/theano/theano.toml``), else this one's."""
    return resources.files(package).joinpath(f"{name}.toml")


def read_knowledge(name: str, package: str = __name__) -> dict[str, Any]:
    """One knowledge file of ``package`` (the core's, or a pack's own) as TOML data, not yet
    typed."""
    return tomllib.loads(knowledge_file(name, package).read_text(encoding="utf-8"))


@functools.cache
def knowledge() -> Knowledge:
    """Every fact, validated; a malformed row is a bug in the package and raises."""
    return Knowledge(**{name: _file(name) for name in KNOWLEDGE_FILES})


@functools.cache
def _file(name: str) -> Any:
    """One core file, typed by its field of ``Knowledge``, read once a process: a lookup
    that needs one file reads that one (apply's plan and lock check ask debian.toml and
    modules.toml on every run; the whole base is 15 ms)."""
    model = Knowledge.model_fields[name].annotation
    assert isinstance(model, type) and issubclass(model, Frozen), name
    return model.model_validate(read_knowledge(name))


# Lookups

def min_driver(cuda: str, platform: Platform) -> Fact[str] | None:
    """The oldest driver a toolkit release runs on; None where NVIDIA lists none.

    Keyed by the release named: ``11.0.2`` gets 11.0.2's row, a release NVIDIA does not list
    (``10.1.243``) the newest listed one of its major.minor below it ("and updates"), a bare
    ``11.0`` the oldest listed release of 11.0.
    """
    rows = [row for row in knowledge().cuda.drivers
            if major_minor(row.cuda) == major_minor(cuda) and platform in row.minimum]
    if not rows:
        return None
    if len(_numbers(cuda)) > 2:
        below = [row for row in rows if _numbers(row.cuda) <= _numbers(cuda)]
        row = max(below, key=lambda r: _numbers(r.cuda)) if below else rows[0]
    else:
        row = min(rows, key=lambda r: _numbers(r.cuda))
    return Fact[str](value=row.minimum[platform], source=row.source)


def _numbers(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", version))


def compute_capability_range(cuda: str) -> Fact[tuple[int, int]] | None:
    """(oldest, newest) real architecture a toolkit compiles for, as ``sm`` numbers (30, 75)."""
    wanted = major_minor(cuda)
    for row in knowledge().cuda.compute_capability:
        if major_minor(row.cuda) == wanted:
            return Fact[tuple[int, int]](value=(row.min_sm, row.max_sm), source=row.source)
    return None


def max_host_gcc(cuda: str, platform: Platform) -> Fact[int] | None:
    """The newest gcc major nvcc of a toolkit accepts as host compiler, where limited."""
    for row in knowledge().cuda.host_compiler:
        if row.platform == platform and in_range(_full(cuda), row.cuda):
            return Fact[int](value=row.max_major, source=row.source)
    return None


def _full(cuda: str) -> str:
    """A toolkit version with the release's patch where known, so ranges like <=10.2.89 work."""
    wanted = major_minor(cuda)
    for row in knowledge().cuda.drivers:
        if major_minor(row.cuda) == wanted and len(cuda.split(".")) < len(row.cuda.split(".")):
            return row.cuda
    return cuda


def cuda_library_name(cuda: str, library: Literal["driver", "cudart", "cublas", "nvrtc"],
                      platform: Platform) -> Fact[str] | None:
    """The file a toolkit ships for a library: ``nvrtc64_102_0.dll`` for 10.2 on Windows."""
    release = ".".join(map(str, major_minor(cuda)))
    for row in knowledge().cuda.libraries:
        if row.library == library and in_range(release, row.cuda) and platform in row.files:
            return Fact[str](value=row.files[platform], source=row.source)
    return None


def cuda_runtime_release(filename: str, platform: Platform) -> str | None:
    """The CUDA release a runtime file belongs to, by cuda.toml's cudart rows: ``10.2`` for
    ``cudart64_102.dll``, ``11`` where one runtime serves a major (``libcudart.so.11.0``);
    None for anything else. Windows names compare case-insensitively; on Linux a longer
    name of the same library (``libcudart.so.10.2.89``) belongs to its row too."""
    for row in knowledge().cuda.libraries:
        shipped = row.files.get(platform)
        if row.library != "cudart" or shipped is None:
            continue
        if _names_runtime(filename, shipped, PLATFORMS[platform]):
            return row.cuda.removeprefix("==").removesuffix(".*")
    return None


def driver_library(platform: Platform) -> str:
    """The NVIDIA driver's library: ``nvcuda.dll`` / ``libcuda.so.1``."""
    fact = cuda_library_name("99", "driver", platform)
    assert fact is not None, "cuda.toml has a driver row for every platform"
    return fact.value


def cudnn_support(cudnn: str) -> CudnnSupportRow | None:
    """The row saying which CUDA toolkits a cuDNN release exists for."""
    return next((row for row in knowledge().cudnn.cuda_support if in_range(cudnn, row.cudnn)),
                None)


def cudnn_supports(cudnn: str, cuda: str) -> bool | None:
    """Whether a cuDNN release exists for a CUDA toolkit; None when the release is unknown."""
    row = cudnn_support(cudnn)
    return None if row is None else row.supports(cuda)


def cudnn_version_code(cudnn: str) -> int:
    """The number Theano compares cuDNN by (``dnn.version()``): 7605 for 7.6.5, 91400 for
    9.14.0 (cuDNN 9 scaled its major by 10000; rows in cudnn.toml)."""
    parts = [int(p) for p in re.findall(r"\d+", cudnn)[:3]]
    parts += [0] * (3 - len(parts))
    return parts[0] * (10000 if parts[0] >= 9 else 1000) + parts[1] * 100 + parts[2]


def cudnn_major(code: int) -> int:
    """The cuDNN major of a version code Theano reports: 7 for 7605, 9 for 91400."""
    return code // 10000 if code >= cudnn_version_code("9") else code // 1000


def cudnn_library_name(cudnn: str, platform: Platform) -> Fact[str] | None:
    """``cudnn64_7.dll`` / ``libcudnn.so.7`` for a cuDNN 7 release."""
    major = int(cudnn.split(".")[0])
    for row in knowledge().cudnn.libraries:
        if row.major == major and platform in row.files:
            return Fact[str](value=row.files[platform], source=row.source)
    return None


def cudnn_archive_layout(cudnn: str, platform: Platform) -> ArchiveLayoutRow | None:
    """The members NVIDIA's archive of a cuDNN release holds for a platform."""
    return next((row for row in knowledge().cudnn.archive_layouts
                 if row.platform == platform and in_range(cudnn, row.cudnn)), None)


def find_artifact(role: str, platform: Platform, version: str, *, cuda: str | None = None,
                  filename: str | None = None) -> KnownArtifact | None:
    """A known file for a role on a platform. ``version`` may be a prefix (``10.2`` finds
    10.2.89); ``cuda`` and ``filename``, when given, must match too."""
    for row in knowledge().artifacts.artifacts:
        if row.role != role or platform not in row.platforms:
            continue
        if not _version_prefix(version, row.version):
            continue
        if cuda is not None and (row.cuda is None or major_minor(row.cuda) != major_minor(cuda)):
            continue
        if filename is not None and row.filename != filename:
            continue
        return row
    return None


def _version_prefix(prefix: str, version: str) -> bool:
    wanted, have = prefix.split("."), version.split(".")
    return have[:len(wanted)] == wanted


def _names_runtime(filename: str, shipped: str, target: TargetPlatform) -> bool:
    match target.os:
        case Os.WINDOWS:
            return target.same_file_name(filename, shipped)
        case Os.LINUX:  # the soname's longer real names: libcudart.so.10.2 -> .10.2.89
            return filename == shipped or filename.startswith(shipped + ".")
        case _:
            assert_never(target.os)


def conda_package(name: str) -> CondaPackageRow | None:
    return next((row for row in knowledge().conda.packages if row.name == name), None)


def removed_build_module(module: str) -> BuildModuleRow | None:
    """The row for a module a later build back-end removed (``distutils.msvccompiler``)."""
    return next((r for r in knowledge().builds.build_module if r.module == module), None)


def kept_module(module: str) -> KeptModuleRow | None:
    """The row for a module (or what it does) a later release of its distribution removed
    or changed: ``pkg_resources``, ``h5py``."""
    modules: ModulesFile = _file("modules")
    return next((r for r in modules.kept_module if r.module == module), None)


def era_build_error(reason: str) -> BuildErrorRow | None:
    """The row whose pattern a failed build's reason matches (a Cython compile error)."""
    return next((r for r in knowledge().builds.build_error if re.search(r.pattern, reason)),
                None)


def abi_packages() -> frozenset[str]:
    """The normalized names of the packages whose ABI extensions compile against."""
    from packaging.utils import canonicalize_name

    return frozenset(canonicalize_name(r.name) for r in knowledge().builds.abi_package)


def known_build_requires(project: str) -> tuple[str, ...]:
    """What the knowledge says ``project``'s sdist build needs besides what it declares."""
    from packaging.utils import canonicalize_name

    key = canonicalize_name(project)
    return tuple(need for r in knowledge().builds.build_requires
                 if canonicalize_name(r.project) == key for need in r.requires)


def deb_configure(platform: Platform, packages: Collection[str]) -> tuple[DebConfigureRow, ...]:
    """The maintainer scripts' work apply does for these unpacked packages (libgvc6's plugin
    configuration), in the file's order."""
    if not packages:
        return ()
    debian: DebianFile = _file("debian")
    return tuple(row for row in debian.configure
                 if row.platform == platform and row.package in packages)


def debian_package(suite: str, package: str) -> DebianPackageRow | None:
    return next((row for row in knowledge().debian.packages
                 if row.suite == suite and row.package == package), None)


class HintPack(Pack, Protocol):
    """What the error hints read of a pack."""

    def error_hints(self) -> tuple[tuple[str, str], ...]: ...


def error_hints(registry: Registry[HintPack]) -> tuple[tuple[str, str], ...]:
    """(text a failure prints, what fixes it): each pack's (``FrameworkPack.error_hints``)."""
    return tuple(dict.fromkeys(hint for pack in registry for hint in pack.error_hints()))


def library_file_patterns() -> tuple[str, ...]:
    """Regular expressions for every CUDA and cuDNN library file the knowledge base names, any
    version: ``cudart64_\\w+\\.dll``, ``libcudart\\.so(?:\\.\\d+)*`` (a framework's loader asks
    for these libraries under names the same patterns match: ``nvrtc64_102.dll``)."""
    data = knowledge()
    names = {*(f for row in data.cuda.libraries for f in row.files.values()),
             *(f for row in data.cudnn.libraries for f in row.files.values())}
    patterns = set()
    for name in names:
        stem, so, _ = name.partition(".so")
        if so:
            patterns.add(re.escape(stem) + r"\.so(?:\.\d+)*")
            continue
        head, underscore, _ = name.partition("_")
        patterns.add(re.escape(head + underscore) + r"\w+\.dll" if underscore
                     else re.escape(name))
    return tuple(sorted(patterns))


