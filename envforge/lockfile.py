"""The lockfile: exact artifacts per platform plus what verify must find, as frozen models.

The on-disk shape is TOML written with sorted, stable content (no timestamps), so the
same spec and the same index state give identical bytes. ``version`` guards the format.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, Protocol

import tomli_w
from pydantic import (
    AfterValidator,
    Field,
    SerializeAsAny,
    SerializerFunctionWrapHandler,
    ValidationError,
    ValidationInfo,
    model_serializer,
    model_validator,
)

from envforge.confine import check_relative
from envforge.errors import SpecError
from envforge.inputfile import LOCK_LIMIT, read_input_text
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
    load_toml,
    pack_models,
)
from envforge.tomlpos import key_lines, line_of

# 2: a framework pack's expectations in [platforms.X.expect.NAME] (1: Theano's in the core).
# 3: what apply reads of the spec in [platforms.X.apply] (2: apply read the spec itself).
LOCK_VERSION = 3
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


class LockedArtifact(Frozen):
    """A file outside any package index: cuDNN, a CUDA installer, a MinGW archive."""

    role: Literal["cudnn", "cuda-installer", "compiler"]
    filename: FileName
    url: Url | None = None
    sha256: Sha256 = Field(pattern=r"^[0-9a-f]{64}$")
    size: Size | None = None
    source: str
    user_supplied: Bool = False


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
    # GPU only: Theano's resident GEMM / raw cuBLAS
    min_cublas_ratio: FiniteFloat | None = Field(default=None, gt=0, le=1)
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
        data: dict[str, Any] = handler(self)
        return {**{k: v for k, v in data.items() if k != "packs"}, **data.get("packs", {})}


class SuiteLock(Frozen):
    """``verify --suite``'s test runner (pytest and what it needs), locked apart from the
    environment: installed into a folder of its own, only when the suite is asked for.
    The tests come from ``distribution``'s locked sdist, among the platform's ``pypi``."""

    distribution: str
    runner: tuple[LockedPypiFile, ...] = Field(min_length=1)
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


def dumps_lock(lock: Lockfile) -> str:
    """Serialise to TOML deterministically, with a header saying what wrote it."""
    data = lock.model_dump(mode="json", exclude_none=True)
    header = ("# Written by `envforge lock`. Do not edit by hand: re-run `envforge lock`.\n"
              f"# Spec: {lock.meta.spec} ({lock.meta.spec_hash})\n\n")
    return header + tomli_w.dumps(_sorted(data), multiline_strings=False)


def _sorted(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _sorted(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_sorted(v) for v in value]
    return value


def write_lock(lock: Lockfile, path: Path) -> bool:
    """Write the lock atomically; return whether the bytes changed."""
    text = dumps_lock(lock)
    if path.exists() and path.read_text(encoding="utf-8") == text:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
    return True


class LockPack(Pack, Protocol):
    """What the lock reads of a pack: its table's model and its table's migrations."""

    @property
    def expect(self) -> type[Frozen]: ...

    @property
    def lock_migrations(self) -> Mapping[int, Callable[[dict[str, Any]], None]]: ...


def load_lock(path: Path | str, registry: Registry[LockPack]) -> Lockfile:
    """Read a lock; a broken one is a SpecError naming file, line and key. ``registry``'s
    packs type and migrate their own tables."""
    path = Path(path)
    text = read_input_text(path, LOCK_LIMIT,
                           missing="no such lock file (run `envforge lock` first)")
    raw = load_toml(text, str(path))
    version = raw.get("meta", {}).get("version")
    if not isinstance(version, int) or isinstance(version, bool) or \
            version not in range(1, LOCK_VERSION + 1):
        raise SpecError(path, f"lock format version {version!r} is not {LOCK_VERSION}; re-lock",
                        key="meta.version", line=line_of(key_lines(text), ("meta", "version")))
    if version != LOCK_VERSION:
        raw = migrate(raw, registry)
    else:
        _require_apply(raw, path, text)
    loc: list[str] = []
    try:
        _type_pack_tables(raw, loc, registry)
        return Lockfile.model_validate(raw, context={"registry": registry})
    except ValidationError as exc:
        error = exc.errors()[0]
        loc += [str(p) for p in error["loc"]]
        raise SpecError(path, error["msg"], key=".".join(loc),
                        line=line_of(key_lines(text), loc)) from None


def _require_apply(raw: dict[str, Any], path: Path, text: str) -> None:
    """A lock of this format has an ``apply`` table per platform (only a migrated one may
    lack it): one edited out is damage, not an old format."""
    platforms = raw.get("platforms")
    for platform, table in (platforms.items() if isinstance(platforms, dict) else ()):
        if isinstance(table, dict) and "apply" not in table:
            raise SpecError(path, "no apply table (what apply reads of the spec); re-lock",
                            key=f"platforms.{platform}.apply",
                            line=line_of(key_lines(text), ("platforms", str(platform))))


def migrate(raw: dict[str, Any], registry: Registry[LockPack]) -> dict[str, Any]:
    """A lock of an older format in the current one's shape, as pipx reads old metadata:
    each step rewrites every platform table from version N to N + 1 (the core's steps,
    then each pack's). Format 2 -> 3 adds the ``apply`` table, which only the spec can
    fill: the table stays absent and ``lockcheck.stale_reasons`` asks for a re-lock."""
    meta = raw.get("meta")
    platforms = raw.get("platforms")
    if not isinstance(meta, dict) or not isinstance(platforms, dict):
        return raw
    for version in range(int(meta["version"]), LOCK_VERSION):
        for table in platforms.values():
            if not isinstance(table, dict):
                continue
            for pack in registry:
                step = pack.lock_migrations.get(version)
                if step is not None:
                    step(table)
        meta["version"] = version + 1
    return raw


def _type_pack_tables(raw: dict[str, Any], loc: list[str], registry: Registry[LockPack]) -> None:
    """Validate each pack's expect table with its model first, so an error names its key
    and line (``platforms.linux-64.expect.NAME.KEY``); ``loc`` gets the table's path."""
    platforms = raw.get("platforms")
    for platform, table in (platforms.items() if isinstance(platforms, dict) else ()):
        expect = table.get("expect") if isinstance(table, dict) else None
        if not isinstance(expect, dict):
            continue
        for pack in registry:
            name = pack.name
            if isinstance(expect.get(name), dict):
                loc[:] = ["platforms", platform, "expect", name]
                expect[name] = pack.expect.model_validate(expect[name])
    loc.clear()


def lock_path_for(spec_path: Path, locks_dir: Path | None = None) -> Path:
    """``specs/X.toml`` locks to ``locks/X.lock`` beside the specs folder."""
    folder = locks_dir if locks_dir is not None else spec_path.resolve().parent.parent / "locks"
    return folder / f"{spec_path.stem}.lock"
