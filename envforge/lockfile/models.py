"""The lock's frozen models: exact artifacts per platform plus what verify must find.

What a lock names is data from whoever wrote the file, so every field has its shape here;
reading and writing the file is ``io``'s, bringing an old format up to date ``migrations``'.
"""

# No ``from __future__ import annotations``: pydantic reads each model's annotations as the
# class is made, and a string one is compiled and evaluated first: a fifth of the time of
# making these classes, on the start-up of apply.

from typing import Annotated, Any, Literal, Protocol

from pydantic import (
    AfterValidator,
    Field,
    SerializeAsAny,
    SerializerFunctionWrapHandler,
    ValidationInfo,
    field_validator,
    model_serializer,
    model_validator,
)

from envforge.confine import check_relative
from envforge.lockfile.migrations import LOCK_VERSION, PACK_TABLE_VERSION, LockPack
from envforge.packapi import Pack, Registry
from envforge.spec import (
    MAX_REPEATS,
    Bool,
    CompilerSection,
    FiniteFloat,
    Frozen,
    Int,
    KernelName,
    Platform,
    pack_models,
)

Sha256 = str
# What a lock names is data from whoever wrote the file: each kind of name has its shape,
# and every file name passes the one confinement rule (envforge/confine.py).
FileName = Annotated[str, AfterValidator(lambda v: check_relative(v, single=True))]
RelativePath = Annotated[str, AfterValidator(check_relative)]
Url = Annotated[str, Field(pattern=r"^(git\+)?(https?|file)://[^\s]+$")]  # git+: a git dependency
PypiName = Annotated[str, Field(pattern=r"^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$")]
PypiVersion = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9.+!_-]*$", max_length=64)]
CondaWord = Annotated[str, Field(pattern=r"^[A-Za-z0-9_][A-Za-z0-9._+!*-]*$", max_length=128)]
DebName = Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9+.-]+$", max_length=128)]
DebVersion = Annotated[str, Field(pattern=r"^([0-9]+:)?[A-Za-z0-9.+~-]+$", max_length=128)]
Size = Annotated[Int, Field(ge=0, le=1 << 40)]


class PypiBuild(Frozen):
    """How a platform's locked sdists are built into wheels wherever envforge builds one
    (apply online, bundle): the spec's ``build_constraints`` and where build requirements
    come from, recorded at lock time so that a build from the lock alone is the one the spec
    asked for. Locks written before it have none: PyPI, no constraints."""

    constraints: tuple[str, ...] = ()
    index: str  # as the spec gives them (LockMeta's index and find-links have the same shape)
    find_links: tuple[str, ...] = ()
    extra_indexes: tuple[str, ...] = ()
    # An sdist's undeclared build requirements (``[pypi] extra_build_dependencies``), by
    # project name, each pinned ``name==version``: the environment's version where it has
    # the package, else the one resolved beside it. None where the spec names none.
    extra_dependencies: dict[str, tuple[str, ...]] | None = None
    # What an extension compiles against (NumPy) held no newer than the environment's own
    # release (``numpy<=1.16.4``), a constraint on every build beside ``constraints``: one
    # built against a later NumPy does not import on it. None: no such package (or an older
    # lock).
    runtime: tuple[str, ...] | None = None

    @property
    def pins(self) -> tuple[str, ...]:
        """Every build's constraints: the spec's, then the environment's releases."""
        return (*self.constraints, *(self.runtime or ()))

    def extra_for(self, name: str) -> tuple[str, ...]:
        """The pins an sdist of project ``name`` is built with besides its own requirements."""
        from packaging.utils import canonicalize_name

        return (self.extra_dependencies or {}).get(canonicalize_name(name), ())


class LockedPypiFile(Frozen):
    """One file from a Python index: the wheel a platform installs, or the sdist where none fits."""

    name: PypiName
    version: PypiVersion
    kind: Literal["wheel", "sdist"]
    filename: FileName
    url: Url
    sha256: Sha256 = Field(pattern=r"^[0-9a-f]{64}$")
    size: Size | None = None
    # Where a file from outside the index came from (None: the index). Such files are
    # installed by their cached copy, not looked up on the index by name.
    origin: Literal["git", "path", "find-links"] | None = None
    commit: str | None = Field(default=None, pattern=r"^[0-9a-f]{40}$")  # git: the commit

    @model_validator(mode="before")
    @classmethod
    def _drop_built(cls, data: Any) -> Any:
        """Tolerate and ignore an old lock's ``built`` table (the sha256 of the wheel one host
        built from the sdist, once written by ``bundle``): a compiled build is not
        reproducible, so the sdist's sha256 is the only anchor; built wheels live in the
        host's cache and a bundle's manifest. No format bump: nothing else changed."""
        if isinstance(data, dict) and "built" in data:
            return {k: v for k, v in data.items() if k != "built"}
        return data


class LockedCondaPackage(Frozen):
    """One conda package record as solved by rattler for a platform."""

    name: CondaWord
    version: CondaWord
    build: CondaWord
    build_number: Int = Field(default=0, ge=0)
    channel: str
    subdir: str = Field(pattern=r"^[a-z0-9-]+$")
    filename: FileName
    url: Url
    sha256: Sha256 = Field(pattern=r"^[0-9a-f]{64}$")
    md5: str = Field(pattern=r"^[0-9a-f]{32}$")
    size: Size | None = None
    depends: tuple[str, ...] = ()


class LockedDeb(Frozen):
    """One Debian binary package from the archive's Packages index."""

    name: DebName
    version: DebVersion
    architecture: str = Field(pattern=r"^[a-z0-9-]+$")
    filename: RelativePath
    url: Url
    sha256: Sha256 = Field(pattern=r"^[0-9a-f]{64}$")
    size: Size
    depends: str = ""
    # The locked package whose Depends or Pre-Depends pulled this one in ([debian]
    # dependencies = "closure"); absent for a package the spec names.
    required_by: DebName | None = None


# The core's artifact roles; a pack adds its own (``FrameworkPack.artifact_roles``).
CORE_ARTIFACT_ROLES = ("cudnn", "cuda-installer", "compiler")


class RolePack(Pack, Protocol):
    """What a lock's artifacts read of a pack: the roles it declares."""

    @property
    def artifact_roles(self) -> tuple[str, ...]: ...


def artifact_roles(registry: Registry[RolePack]) -> tuple[str, ...]:
    """Every role a lock may hold: the core's, then each registered pack's."""
    return (*CORE_ARTIFACT_ROLES, *(role for pack in registry for role in pack.artifact_roles))


def table_version(table: Frozen | type[Frozen]) -> int:
    """A pack table's format: its model's ``lock_version`` class variable, else 1. The model
    carries it, not the pack, so a lock is written with no registry at hand."""
    version = getattr(table, "lock_version", 1)
    return version if isinstance(version, int) else 1


class LockedArtifact(Frozen):
    """A file outside any package index: cuDNN, a CUDA installer, a MinGW archive, or a file
    a pack locks under a role of its own."""

    role: str = Field(pattern=r"^[a-z][a-z0-9-]{0,63}$")
    filename: FileName
    url: Url | None = None
    sha256: Sha256 = Field(pattern=r"^[0-9a-f]{64}$")
    size: Size | None = None
    source: str
    user_supplied: Bool = False

    @field_validator("role")
    @classmethod
    def _known_role(cls, role: str, info: ValidationInfo) -> str:
        """A role read from a file is one of the core's or the ``registry``'s packs' (the
        validation context); one a pack's code makes is its own."""
        registry: Registry[RolePack] | None = (info.context or {}).get("registry")
        if registry is None:
            return role
        known = artifact_roles(registry)
        if role not in known:
            raise ValueError(f"unknown artifact role {role!r} (known: {', '.join(known)})")
        return role


class ConvParams(Frozen):
    """The conv kernel's layers, kept in the lock so the probe runs what was referenced."""

    # input channels, then each layer's output
    channels: tuple[Annotated[Int, Field(ge=1, le=4096)], ...] = Field(min_length=2,
                                                                       max_length=64)
    filter_size: Int = Field(default=3, ge=1, le=64)
    border_mode: Literal["half", "valid"] = "half"
    filter_flip: Bool = True  # Theano's default: a true convolution


class KernelExpectation(Frozen):
    """A kernel verify runs: its deterministic inputs and reference results from NumPy (float64).

    ``shape`` is the input's: (n,) for elementwise, (n, n) for gemm, (batch, channels,
    size, size) for conv, and for the others the sizes ``envforge.expectations`` names.
    ``params`` holds a kernel's other numbers (train's learning rate). ``samples`` are
    the output's values at ``sample_indices`` of its flattened (C-order) form; a value
    passes within ``atol + rtol * |expected|``.
    """

    name: KernelName
    seed: Int = Field(ge=0, lt=1 << 32)
    shape: tuple[Annotated[Int, Field(ge=1, le=1 << 24)], ...] = Field(min_length=1,
                                                                       max_length=4)
    checksum: FiniteFloat
    samples: tuple[FiniteFloat, ...]
    sample_indices: tuple[Annotated[Int, Field(ge=0)], ...]
    rtol: FiniteFloat = Field(gt=0)
    atol: FiniteFloat = Field(ge=0)
    output_shape: tuple[Annotated[Int, Field(ge=1)], ...] | None = None
    conv: ConvParams | None = None
    params: dict[str, FiniteFloat] | None = None


class Expectations(Frozen):
    """What verify must find in the provisioned environment."""

    versions: dict[Annotated[str, Field(pattern=r"^[a-z0-9-]+$")], PypiVersion]
    device: str = Field(pattern=r"^(cpu|cuda\d*|opencl\d+:\d+)$")
    float_x: Literal["float16", "float32", "float64"]
    kernels: tuple[KernelExpectation, ...] = ()
    min_gpu_speedup: FiniteFloat | None = Field(default=None, gt=0)
    cuda: str | None = Field(default=None, pattern=r"^(>=|==)?\d+\.\d+(\.\d+)?$")
    cudnn: str | None = Field(default=None, pattern=r"^\d+\.\d+\.\d+(\.\d+)?$")
    # timed runs per kernel; the best one counts
    repeats: Int = Field(default=3, ge=1, le=MAX_REPEATS)
    # Each framework pack's own table, [platforms.X.expect.NAME] on disk (its model's).
    packs: dict[str, SerializeAsAny[Frozen]] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _mount_packs(cls, data: Any, info: ValidationInfo) -> Any:
        """Take each registered pack's table out of the core keys, typed by its model; the
        packs are the ``registry`` of the validation context (none: no pack tables)."""
        if not isinstance(data, dict):
            return data
        if "packs" in data:
            return {**data, "packs": pack_models(data["packs"])}
        registry: Registry[LockPack] = (info.context or {}).get("registry") or Registry(())
        data = dict(data)
        packs = {}
        for pack in registry:
            name = pack.name
            if name in data:
                table = data.pop(name)
                packs[name] = table if isinstance(table, pack.expect) else \
                    pack.expect.model_validate(table)
        return {**data, "packs": packs}

    @model_serializer(mode="wrap")
    def _flatten_packs(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """Each pack's table under its name, with its format (its model's ``lock_version``)
        where that is past 1."""
        data: dict[str, Any] = handler(self)
        packs = {name: table if table_version(self.packs[name]) == 1 else
                 {PACK_TABLE_VERSION: table_version(self.packs[name]), **table}
                 for name, table in data.get("packs", {}).items()}
        return {**{k: v for k, v in data.items() if k != "packs"}, **packs}


class SuiteLock(Frozen):
    """``verify --suite``'s test runner (pytest and what it needs), locked apart from the
    environment: installed into a folder of its own, only when the suite is asked for.
    The tests come from ``distribution``'s locked sdist, among the platform's ``pypi``."""

    distribution: str
    # empty where the environment holds every distribution the runner needs (a project that
    # pins pytest and pytest-xdist itself): the suite runs with the environment's own
    runner: tuple[LockedPypiFile, ...] = ()
    # The full Python version the runner was resolved for (None in locks written before it
    # was recorded: lockcheck then judges by the wheels' tags alone).
    python: str | None = Field(default=None, pattern=r"^3\.\d+(\.\d+)?$")


class ApplyInputs(Frozen):
    """What apply needs that the spec decides and no resolver finds: the compiler to
    provide and where the environment's paths go. With the CUDA release and cuDNN
    (``expect.cuda``, ``expect.cudnn``, the artifacts) and the packs' own tables (which
    packs are mounted, their settings), plan and apply read everything from the lock and
    take the spec only to check, by its hash, that it is the one locked."""

    compiler: CompilerSection | None = None
    path_scope: Literal["env", "user"] = "env"  # Windows: "user" edits the user's PATH
    # the spec's PYTHONPATH folders, relative to its folder; None where it names none
    pythonpath: tuple[str, ...] | None = None


class PlatformLock(Frozen):
    """Everything locked for one target platform."""

    python: str = Field(pattern=r"^3\.\d+(\.\d+)?$")
    environment: Literal["conda", "venv", "debian"]
    pypi: tuple[LockedPypiFile, ...] = ()
    conda: tuple[LockedCondaPackage, ...] = ()
    deb: tuple[LockedDeb, ...] = ()
    artifacts: tuple[LockedArtifact, ...] = ()
    expect: Expectations
    suite: SuiteLock | None = None
    pypi_python: str | None = None  # the full Python version PyPI was resolved for
    build: PypiBuild | None = None  # where an sdist is locked: how it is built
    # None only in a lock of format 2 (read through ``migrate``): it recorded none, so
    # plan and apply call it stale until `envforge lock` completes it (offline).
    apply: ApplyInputs | None = None


class LockMeta(Frozen):
    version: Int = LOCK_VERSION
    envforge: str
    spec: str
    spec_name: str
    spec_hash: str
    pypi_index: str | None = None
    pypi_as_of: str | None = None  # files uploaded after this day were not considered
    pypi_as_of_packages: dict[str, str] | None = None  # a later day for these (None: none)
    pypi_find_links: tuple[str, ...] | None = None  # None: none given
    pypi_extra_indexes: tuple[str, ...] | None = None
    conda_channels: tuple[str, ...] = ()
    debian_suite: str | None = None


class Lockfile(Frozen):
    meta: LockMeta
    platforms: dict[Platform, PlatformLock]


class VersionChange(Frozen):
    """A package whose locked version differs between two locks of a platform: what a
    re-lock moved (``before`` None: added, ``after`` None: removed)."""

    platform: Platform
    source: Literal["pypi", "conda", "deb"]
    name: str
    before: str | None
    after: str | None


def version_changes(before: Lockfile | None, after: Lockfile) -> tuple[VersionChange, ...]:
    """What moved from ``before`` to ``after``, per platform both lock; none for a first lock
    (everything in it is new), by platform, then PyPI, conda and Debian, then name."""
    if before is None:
        return ()
    changes: list[VersionChange] = []
    for platform, now in sorted(after.platforms.items()):
        was = before.platforms.get(platform)
        if was is None:
            continue
        for source in ("pypi", "conda", "deb"):
            old = {p.name: p.version for p in getattr(was, source)}
            new = {p.name: p.version for p in getattr(now, source)}
            changes.extend(VersionChange(platform=platform, source=source, name=name,
                                         before=old.get(name), after=new.get(name))
                           for name in sorted(old.keys() | new.keys())
                           if old.get(name) != new.get(name))
    return tuple(changes)
