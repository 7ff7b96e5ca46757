"""What envforge knows about Theano, CUDA, cuDNN and libgpuarray, as data with sources.

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
from collections.abc import Mapping
from importlib import resources
from importlib.resources.abc import Traversable
from typing import Any, Literal, assert_never

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from envforge.errors import InputError
from envforge.knowledge.models import (
    ArchiveLayoutRow,
    ArtifactsFile,
    BlogErratum,
    CondaFile,
    CondaPackageRow,
    CudaFile,
    CudnnFile,
    CudnnSupportRow,
    DebianFile,
    DebianPackageRow,
    DistributionRow,
    Fact,
    FlagSchema,
    KnownArtifact,
    KnownBadTestRow,
    LibgpuarrayFile,
    LoaderNames,
    NameMismatchRow,
    ReferenceFile,
    SuiteDevice,
    SuiteRunnerRow,
    SuiteSubsetRow,
    TheanoFile,
    TheanoRules,
    TheanoSuiteFile,
    UndeclaredRow,
    UnknownFactError,
    in_range,
    major_minor,
)
from envforge.platforms import PLATFORMS, Os, TargetPlatform
from envforge.spec import Frozen, Platform

__all__ = [
    "KNOWLEDGE_FILES",
    "Fact",
    "FlagSchema",
    "Knowledge",
    "KnownArtifact",
    "LoaderNames",
    "TheanoRules",
    "UndeclaredRow",
    "UnknownFactError",
    "blog_errata",
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
    "debian_package",
    "driver_library",
    "erratum_for_flag",
    "error_hints",
    "find_artifact",
    "in_range",
    "knowledge",
    "knowledge_file",
    "known_bad_tests",
    "libgpuarray_names",
    "library_file_patterns",
    "loader_name_mismatch",
    "major_minor",
    "map_legacy_theano",
    "max_host_gcc",
    "min_driver",
    "reference_theano",
    "suite_device",
    "suite_runner",
    "suite_subset",
    "theano_distribution",
    "theano_rules",
    "undeclared_import_in",
]

# The whole base

KNOWLEDGE_FILES = ("cuda", "cudnn", "libgpuarray", "artifacts", "conda", "debian", "reference",
                   "theano", "theano_suite")


class Knowledge(Frozen):
    cuda: CudaFile
    cudnn: CudnnFile
    libgpuarray: LibgpuarrayFile
    artifacts: ArtifactsFile
    conda: CondaFile
    debian: DebianFile
    reference: ReferenceFile
    theano: TheanoFile
    theano_suite: TheanoSuiteFile


def knowledge_file(name: str) -> Traversable:
    """Where a knowledge file lives: a framework pack's own folder when the pack lists it
    (``envforge/packs/theano/theano.toml``), else this package's."""
    from envforge.packs import PACKS

    owner = next((f"envforge.packs.{pack.name}" for pack in PACKS.values()
                  if name in pack.knowledge), __name__)
    return resources.files(owner).joinpath(f"{name}.toml")


def _read(name: str) -> dict[str, Any]:
    return tomllib.loads(knowledge_file(name).read_text(encoding="utf-8"))


@functools.cache
def knowledge() -> Knowledge:
    """Every fact, validated; a malformed row is a bug in the package and raises."""
    return Knowledge.model_validate({name: _read(name) for name in KNOWLEDGE_FILES})


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


def loader_name_mismatch(cuda: str) -> NameMismatchRow | None:
    """The row saying libgpuarray 0.7.6 never asks for a toolkit's shipped DLL names."""
    release = ".".join(map(str, major_minor(cuda)))
    return next((row for row in knowledge().libgpuarray.name_mismatch
                 if in_range(release, row.cuda)), None)


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


def libgpuarray_names(platform: Platform, driver_cuda: str) -> LoaderNames:
    """What libgpuarray 0.7.6 asks the loader for, given the driver's CUDA version.

    On Windows ``nvrtc64_%d%d.dll`` takes the driver's major and minor (10.2 gives
    ``nvrtc64_102.dll``), then the fallback versions below the driver's, in order;
    ``cublas[i]`` is asked for when ``nvrtc[i]`` loaded. Linux names are unversioned.
    """
    data = knowledge().libgpuarray
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


def conda_package(name: str) -> CondaPackageRow | None:
    return next((row for row in knowledge().conda.packages if row.name == name), None)


def debian_package(suite: str, package: str) -> DebianPackageRow | None:
    return next((row for row in knowledge().debian.packages
                 if row.suite == suite and row.package == package), None)


@functools.cache
def theano_rules(theano_version: str) -> TheanoRules:
    """The rules for one Theano-PyMC release; UnknownFactError for a release outside every row."""
    data = knowledge().theano

    def pick(rows: tuple[Any, ...]) -> tuple[Any, ...]:
        return tuple(row for row in rows if in_range(theano_version, row.theano))

    spelling = pick(data.spelling)
    names = pick(data.flag_names)
    if not spelling or not names:
        raise UnknownFactError(f"envforge knows no rules for Theano-PyMC {theano_version} "
                               f"(it knows {', '.join(row.theano for row in data.spelling)}); "
                               f"fix: pin {_pymc().name}=={_pymc().releases[-1]}")
    return TheanoRules(
        version=theano_version,
        spelling=spelling[0].spelling,
        spelling_source=spelling[0].source,
        known_flags=frozenset(names[0].names),
        known_flags_source=names[0].source,
        flags={row.name: row for row in pick(data.flags)},
        removed=pick(data.removed),
        config_reading=pick(data.config_reading),
        pygpu=pick(data.pygpu),
        cudnn=pick(data.cudnn),
        cudnn_names=pick(data.cudnn_names),
        numpy=pick(data.numpy),
        python=pick(data.python),
        classifiers=pick(data.classifiers),
        requires=pick(data.requires),
        preallocate=pick(data.preallocate),
        undeclared=pick(data.undeclared),
    )


def error_hints() -> tuple[tuple[str, str], ...]:
    """(text a failure prints, what fixes it): cuDNN rules' symptoms, libgpuarray's Linux
    library names (longest first, so ``libcuda.so`` does not shadow the others), the rest."""
    data = knowledge()
    hints = [(row.symptom, f"Theano-PyMC {row.theano}: {row.effect}; {row.fix}")
             for row in data.theano.cudnn if row.symptom]
    loader = libgpuarray_names("linux-64", "0")
    fact = next(r for r in data.libgpuarray.facts if r.id == "linux-unversioned")
    for asked, target in ((loader.nvrtc[0], f"the CUDA toolkit's {loader.nvrtc[0]}.N"),
                          (loader.cublas[0], f"the CUDA toolkit's {loader.cublas[0]}.N"),
                          (loader.driver, f"the driver's {driver_library('linux-64')}")):
        hints.append((asked, f"libgpuarray loads the unversioned {asked}: link it to "
                             f"{target} in a folder on LD_LIBRARY_PATH ({fact.source})"))
    hints += [(row.needle, row.hint) for row in data.theano.error_hints]
    return tuple(dict.fromkeys(hints))


def undeclared_import_in(error: str) -> UndeclaredRow | None:
    """The row for a module that an error says is missing, when a Theano release imports it
    without declaring it: the cause and the fix of a ``No module named 'pkg_resources'``."""
    return next((row for row in knowledge().theano.undeclared
                 if f"No module named '{row.module}'" in error), None)


def blog_errata() -> tuple[BlogErratum, ...]:
    """The blog's wrong forms for Theano-PyMC 1.0.5, with the correct ones."""
    return knowledge().theano.blog_errata


def erratum_for_flag(name: str) -> BlogErratum | None:
    return next((row for row in knowledge().theano.blog_errata if row.flag == name), None)


def theano_distribution(name: str) -> DistributionRow | None:
    """The row of a distribution installing the ``theano`` package, by PyPI or conda name."""
    wanted = canonicalize_name(name)
    return next((row for row in knowledge().theano.distributions
                 if canonicalize_name(row.name) == wanted or wanted in row.conda_names), None)


def _pymc() -> DistributionRow:
    return next(row for row in knowledge().theano.distributions if row.maps_to is None)


def reference_theano() -> str:
    """The Theano-PyMC release the project is built around (theano.toml [[distributions]]):
    what doctor assumes, and a legacy ``theano`` requirement maps to, when nothing says."""
    return _pymc().releases[-1]


def library_file_patterns() -> tuple[str, ...]:
    """Regular expressions for every CUDA, cuDNN and loader library file the knowledge base
    names, any version: ``cudart64_\\w+\\.dll``, ``libcudart\\.so(?:\\.\\d+)*``."""
    data = knowledge()
    names = {*(f for row in data.cuda.libraries for f in row.files.values()),
             *(f for row in data.cudnn.libraries for f in row.files.values()),
             *(f for row in data.libgpuarray.loader for f in row.names.values())}
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


def map_legacy_theano(requirement: str) -> str:
    """What a requirement of a ``theano`` distribution becomes for envforge: a legacy
    ``theano>=0.8.2`` (the original Theano) -> ``Theano-PyMC==1.0.5``, markers kept; a
    requirement of any other distribution is returned unchanged. InputError if unparsable."""
    try:
        parsed = Requirement(requirement)
    except InvalidRequirement as exc:
        raise InputError(f"not a requirement: {requirement!r} ({exc})") from None
    row = theano_distribution(parsed.name)
    if row is None or row.maps_to is None:
        return requirement
    marker = f"; {parsed.marker}" if parsed.marker is not None else ""
    return f"{row.maps_to}{marker}"


def suite_runner(theano_version: str) -> SuiteRunnerRow | None:
    """The test runner for a release's own tests; None where no suite is known."""
    return next((row for row in knowledge().theano_suite.runner
                 if in_range(theano_version, row.theano)), None)


def suite_device(device: str) -> SuiteDevice:
    """``cuda0`` and ``cuda`` select the GPU subset; anything else the CPU one."""
    return "cuda" if device.startswith("cuda") else "cpu"


def suite_subset(theano_version: str, device: str) -> SuiteSubsetRow | None:
    """The curated subset of a release's tests for a Theano device flag (``cpu``, ``cuda0``)."""
    wanted = suite_device(device)
    return next((row for row in knowledge().theano_suite.subsets
                 if row.device == wanted and in_range(theano_version, row.theano)), None)


def known_bad_tests(theano_version: str, device: str,
                    versions: Mapping[str, str] | None = None) -> tuple[KnownBadTestRow, ...]:
    """The tests of a release known to fail on a kind of device, each with reason and source;
    a row conditioned on other packages only where ``versions`` (the lock's) meet it."""
    wanted = suite_device(device)
    return tuple(row for row in knowledge().theano_suite.known_bad
                 if wanted in row.devices and in_range(theano_version, row.theano)
                 and row.holds_for(versions or {}))
