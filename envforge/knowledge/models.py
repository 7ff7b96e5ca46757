"""The shapes of the knowledge base's rows, one model per kind of fact, and the version
arithmetic their lookups share. Frozen, ``extra="forbid"``: a typo in a TOML row fails loading."""

# No ``from __future__ import annotations``: pydantic reads each model's annotations as the
# class is made, and a string one is compiled and evaluated first: a fifth of the time of
# making these classes, on the start-up of apply.

import re
from datetime import date
from typing import Annotated, Any, Generic, Literal, TypeVar

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version
from pydantic import AfterValidator, Field, model_validator

from envforge.errors import InputError
from envforge.spec import Frozen, Platform

T = TypeVar("T")


def _specifier(value: str) -> str:
    try:
        SpecifierSet(value)
    except InvalidSpecifier as exc:
        raise ValueError(f"not a PEP 440 version range: {value!r}") from exc
    return value


Range = Annotated[str, AfterValidator(_specifier)]


def in_range(version: str, spec: str) -> bool:
    """Whether ``version`` lies in the PEP 440 range ``spec``; unparsable versions never do."""
    try:
        return SpecifierSet(spec).contains(Version(version), prereleases=True)
    except InvalidVersion:
        return False


def major_minor(version: str) -> tuple[int, int]:
    """``(10, 2)`` for ``10.2``, ``10.2.89`` or ``>=10.2``."""
    match = re.match(r"^\D*(\d+)(?:\.(\d+))?", version)
    if match is None:
        raise ValueError(f"not a version: {version!r}")
    return int(match.group(1)), int(match.group(2) or 0)


class UnknownFactError(InputError, LookupError):
    """The knowledge base has no row for what was asked (a release it has never seen)."""


class Fact(Frozen, Generic[T]):
    """A looked-up value with the source of the row it came from."""

    value: T
    source: str


class Row(Frozen):
    source: str = Field(min_length=1)


# cuda.toml

class DriverRow(Row):
    cuda: str
    minimum: dict[Platform, str]


class ComputeCapabilityRow(Row):
    cuda: str
    min_sm: int
    max_sm: int


class FactRow(Row):
    fact: str


class HostCompilerRow(Row):
    cuda: Range
    platform: Platform
    compiler: Literal["gcc"]
    max_major: int


class CudaLibraryRow(Row):
    cuda: Range
    library: Literal["driver", "cudart", "cublas", "nvrtc"]
    files: dict[Platform, str]


class CudaFile(Frozen):
    drivers: tuple[DriverRow, ...]
    compute_capability: tuple[ComputeCapabilityRow, ...]
    ptx_jit: tuple[FactRow, ...]
    host_compiler: tuple[HostCompilerRow, ...]
    libraries: tuple[CudaLibraryRow, ...]


# cudnn.toml

class CudnnSupportRow(Row):
    """The CUDA toolkits a cuDNN release was built for: ``10.2``, or ``11.x`` for a whole major."""

    cudnn: Range
    cuda: tuple[str, ...]
    note: str = ""

    def supports(self, cuda: str) -> bool:
        wanted = major_minor(cuda)
        return any(_cuda_entry_matches(entry, wanted) for entry in self.cuda)

    def supports_some_at_least(self, minimum: str) -> bool:
        """Whether any supported toolkit is ``minimum`` or newer (for ``cuda.version = ">=X"``)."""
        floor = major_minor(minimum)
        for entry in self.cuda:
            major, _, minor = entry.partition(".")
            if minor == "x" and int(major) >= floor[0]:
                return True
            if minor != "x" and major_minor(entry) >= floor:
                return True
        return False


def _cuda_entry_matches(entry: str, wanted: tuple[int, int]) -> bool:
    major, _, minor = entry.partition(".")
    if minor == "x":
        return int(major) == wanted[0]
    return major_minor(entry) == wanted


class VersionCodeRow(Row):
    cudnn: str
    code: int


class CudnnLibraryRow(Row):
    major: int
    files: dict[Platform, str]


class ArchiveLayoutRow(Row):
    cudnn: Range
    platform: Platform
    format: Literal["zip", "tgz"]
    members: tuple[str, ...]


class CudnnFile(Frozen):
    cuda_support: tuple[CudnnSupportRow, ...]
    version_codes: tuple[VersionCodeRow, ...]
    libraries: tuple[CudnnLibraryRow, ...]
    archive_layouts: tuple[ArchiveLayoutRow, ...]


# artifacts.toml

class KnownArtifact(Row):
    """A file outside any package index whose hash we know."""

    role: Literal["cudnn", "cuda-installer", "compiler", "sdist"]
    name: str | None = None
    version: str
    cuda: str | None = None
    variant: str | None = None
    platforms: tuple[Platform, ...] = Field(min_length=1)
    filename: str
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    url: str | None = None
    login_required: bool = False


class ArtifactsFile(Frozen):
    artifacts: tuple[KnownArtifact, ...]


# conda.toml, debian.toml, reference.toml

class CondaPackageRow(Row):
    name: str
    channel: str
    versions: tuple[str, ...] = ()
    builds: str | None = None
    python: tuple[str, ...] = ()
    subdirs: tuple[str, ...] = ()
    depends: tuple[str, ...] = ()
    subdir_depends: dict[str, tuple[str, ...]] = Field(default_factory=dict)
    note: str = ""

    def run_depends(self, subdir: str) -> tuple[str, ...]:
        """The rendered run requirements on one subdir."""
        return (*self.depends, *self.subdir_depends.get(subdir, ()))


class CondaFile(Frozen):
    packages: tuple[CondaPackageRow, ...]


class DebianPackageRow(Row):
    suite: str
    package: str
    provides: str
    version: str
    python: str | None = None


class DebConfigureRow(Row):
    """What a Debian package's maintainer script does that its programs need, done by apply
    after the unpack (envforge runs no maintainer script): ``run`` (its program, as the
    paths in ``variables`` and ``creates``, relative to the unpacked tree) with ``variables``
    set, which must make ``creates``; activation sets ``variables`` for the environment's
    programs too."""

    package: str
    platform: Platform
    run: tuple[str, ...] = Field(min_length=1)
    variables: dict[str, str] = Field(default_factory=dict)
    creates: str


class DebianFile(Frozen):
    packages: tuple[DebianPackageRow, ...]
    configure: tuple[DebConfigureRow, ...] = ()


class CheckBlasRow(Row):
    gpu: str
    seconds: float


class ConvBenchmarkRow(Row):
    device: str
    seconds_per_batch: float


class GemmAccuracyRow(Row):
    dtype: str
    size: int
    max_relative_difference: float
    versus: str


class SmokeTestRow(Row):
    seed: int
    expression: str
    first_values: tuple[float, ...]


class ReferenceFile(Frozen):
    check_blas: tuple[CheckBlasRow, ...]
    conv_benchmark: tuple[ConvBenchmarkRow, ...]
    gemm_accuracy: tuple[GemmAccuracyRow, ...]
    smoke_test: SmokeTestRow


class UndeclaredImport(Row):
    """A module a framework release imports without declaring the distribution that
    provides it: its requirement joins the lock (a pack's rows add the releases). A row that
    names only the module takes the requirement of the core's ``[[kept_module]]`` row for
    it (modules.toml), so a bound two packs need is written once."""

    module: str
    requirement: str
    imported_at: str
    needed_by: str
    note: str = ""

    @model_validator(mode="before")
    @classmethod
    def _kept_by_the_core(cls, data: Any) -> Any:
        if isinstance(data, dict) and "requirement" not in data and "module" in data:
            return {**data, "requirement": kept_requirement(data["module"])}
        return data


def kept_requirement(module: str) -> str:
    """The requirement that keeps ``module`` (modules.toml); ValueError where none is known."""
    from envforge.knowledge import kept_module

    row = kept_module(module)
    if row is None:
        raise ValueError(f"no requirement given for {module}, and modules.toml has no "
                         "[[kept_module]] row for it")
    return row.requirement


class InitDebianRow(Row):
    """Debian binary packages ``envforge init`` adds to a spec that mounts a pack's section
    on ``platform`` (unpacked into the environment, no root), and that section's keys for the
    platform that use them: a library a pack's framework needs and PyPI's wheels do not give
    it (Theano's BLAS: NumPy's wheels keep their OpenBLAS to themselves)."""

    platform: Platform
    suite: str = Field(pattern=r"^[a-z][a-z0-9-]*$")
    packages: tuple[str, ...] = Field(min_length=1)
    keys: dict[str, str] = Field(default_factory=dict)
    reason: str  # why, for the [debian] comment and init's report
    note: str = ""  # what the keys do, for their table's comment
    # "closure": locked with what the packages depend on ([debian] dependencies), for a
    # program whose libraries are many (ffmpeg's 219); "named": exactly ``packages``
    dependencies: Literal["named", "closure"] = "named"


class ImportDebianRow(InitDebianRow):
    """Debian binary packages ``envforge init`` adds where the repository's code uses one of
    ``names`` (however imported: ``importers/pycode.py``), a module whose documented
    behaviour is to run the system program ``runs`` from PATH (gym's video recorder runs
    ffmpeg): no PyPI wheel gives it, and activation puts the unpacked one on PATH."""

    names: tuple[str, ...] = Field(min_length=1)
    runs: str  # the program, for the note a platform with no Debian gets
    keys: dict[str, str] = Field(default_factory=dict, max_length=0)  # no section to set


class LibraryDebianRow(InitDebianRow):
    """Debian binary packages ``envforge init`` adds where the draft resolves to a release of
    ``project`` in ``versions`` whose wheel for ``platform`` loads the shared library
    ``loads`` at import and does not ship it (sounddevice's Linux wheels never carried
    PortAudio): activation puts the unpacked one on the library path. The project's
    Windows wheels ship the library: the row is its platform's alone."""

    project: str
    versions: Range = ""  # PEP 440 range of the releases whose wheel lacks it ("": all)
    loads: str  # the library's soname, as the row's reason and init's report name it
    keys: dict[str, str] = Field(default_factory=dict, max_length=0)  # no section to set


class BuildDebianRow(InitDebianRow):
    """Debian binary packages ``envforge init`` adds where the draft names ``project``, whose
    sdist compiles against a library no PyPI wheel gives (PyAudio's ``portaudio.h``): lock
    and apply hand a lock's packages to its builds where one is a ``-dev`` package
    (``bundle/sysroot.py``), and activation puts the libraries on the library path."""

    project: str
    keys: dict[str, str] = Field(default_factory=dict, max_length=0)  # no section to set


# builds.toml

class BuildModuleRow(Row):
    """A module an sdist's build imports that a later build back-end removed, and the build
    constraint that keeps it."""

    module: str
    build_constraint: str


class BuildRequiresRow(Row):
    """What a project's sdist build needs that its failed build's log does not name."""

    project: str
    requires: tuple[str, ...]


class BuildErrorRow(Row):
    """A failed build's words (``pattern``, a regular expression) that a build back-end of
    the sdist's era cures, for repositories of before ``before``."""

    pattern: str
    build_constraint: str
    before: date


class AbiPackageRow(Row):
    """A package whose C ABI an extension compiles against (its run time must be no older)."""

    name: str


class KeptModuleRow(Row):
    """A module, or what it does, that releases rely on and a later release of its
    distribution removed or changed (setuptools 82 has no pkg_resources; h5py 3 reads
    strings as str): the requirement that keeps it."""

    module: str
    requirement: str
    note: str = ""


class ModulesFile(Frozen):
    kept_module: tuple[KeptModuleRow, ...] = ()


class BuildsFile(Frozen):
    abi_package: tuple[AbiPackageRow, ...] = ()
    build_module: tuple[BuildModuleRow, ...] = ()
    build_requires: tuple[BuildRequiresRow, ...] = ()
    build_error: tuple[BuildErrorRow, ...] = ()
