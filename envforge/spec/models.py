"""The spec's frozen models: the sections a spec may hold and each platform's merged view.

Reading a file into them (merging ``platform.<name>`` tables, errors with their line) is
``parse``'s; these say what a valid value is.
"""

from __future__ import annotations

import re
from datetime import date
from typing import TYPE_CHECKING, Annotated, Any, Literal, Protocol, TypeVar
from urllib.parse import urlsplit

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from pydantic import (
    AfterValidator,
    Field,
    SerializeAsAny,
    Strict,
    ValidationInfo,
    model_validator,
)

from envforge import platforms as _platforms
from envforge.model import Frozen
from envforge.packapi import Pack, Registry
from envforge.platforms import Platform
from envforge.tomlpos import KeyPath

if TYPE_CHECKING:
    from collections.abc import Mapping

PLATFORMS: tuple[Platform, ...] = tuple(_platforms.PLATFORMS)  # names, in the model's order
PYPI_SIMPLE = "https://pypi.org/simple"
DEBIAN_MIRROR = "https://deb.debian.org/debian"
MAX_REPEATS = 1000
# Device names Windows reserves in every folder, with or without an extension (Microsoft,
# "Naming Files, Paths, and Namespaces"): an environment folder cannot be called so.
_WINDOWS_RESERVED = re.compile(r"^(con|prn|aux|nul|com[0-9]|lpt[0-9])(\..*)?$")

# Spec numbers and booleans are strict: "2", "yes" or "1e-7" as TOML strings are refused, not
# coerced (an int is still a float). Text a framework reads back is a string field already.
FiniteFloat = Annotated[float, Strict(), Field(allow_inf_nan=False)]
Int = Annotated[int, Strict()]
Bool = Annotated[bool, Strict()]


def _project_name(value: str) -> str:
    if _WINDOWS_RESERVED.match(value):
        raise ValueError(f"{value!r} is a device name Windows reserves; pick another name")
    return value


class ProjectSection(Frozen):
    name: Annotated[str, AfterValidator(_project_name)] = Field(
        pattern=r"^[a-z0-9][a-z0-9._-]*$", max_length=64)
    platforms: tuple[Platform, ...] = Field(min_length=1)
    description: str = ""


class PythonSection(Frozen):
    version: str = Field(pattern=r"^3\.(0|[1-9]\d?)(\.(0|[1-9]\d?))?$")

    @property
    def minor(self) -> str:
        """``3.7`` for ``3.7`` and ``3.7.16``."""
        return ".".join(self.version.split(".")[:2])


class EnvironmentSection(Frozen):
    kind: Literal["conda", "venv", "debian"]
    # a folder's name under conda's envs folder: no "/", "..", absolute path or empty name
    name: Annotated[str, AfterValidator(_project_name)] | None = Field(
        default=None, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$", max_length=64)
    channels: tuple[str, ...] = ()
    # Folders on the environment's PYTHONPATH, relative to the spec's folder: the repository
    # a spec was drafted from, whose scripts import its own packages by name as `pip install
    # -e .` lets them (pygcn/train.py: `from pygcn.utils import ...`).
    pythonpath: tuple[str, ...] = ()


class CondaSection(Frozen):
    packages: tuple[str, ...] = ()


def _pypi_requirement(value: str) -> str:
    """PEP 508, compared by version: ``===`` (arbitrary equality) matches a version's text,
    so ``numpy===1.19.5`` is refused with ``==`` as the fix."""
    try:
        requirement = Requirement(value)
    except InvalidRequirement as exc:
        raise ValueError(f"{value!r} is not a requirement (PEP 508): {exc}") from None
    if any(s.operator == "===" for s in requirement.specifier):
        raise ValueError(f"{value!r}: '===' compares the version's text, not the version; "
                         "use '=='")
    return value


PypiRequirement = Annotated[str, AfterValidator(_pypi_requirement)]


def url_problem(value: str) -> str | None:
    """Why ``value``, written as a URL, is none the resolver can use (``http://[::1/simple``,
    a bracket left open, made uv exit with its own words; an http(s) URL with no host);
    None where it parses. The spec's check and init's reading of pip's ``-i``/``-f``."""
    try:
        split = urlsplit(value)
        host, _ = split.hostname, split.port  # reading the port parses it: "x:y" raises
    except ValueError as exc:
        return f"{value!r} is not a URL: {exc}"
    if split.scheme in ("http", "https") and not host:
        return f"{value!r} names no host"
    return None


def _source_url(value: str) -> str:
    """An index or page the resolver is handed: a URL that parses (``url_problem``); a local
    folder (find_links) or ``file://`` URL stays."""
    problem = url_problem(value) if "://" in value else None
    if problem is not None:
        raise ValueError(problem)
    return value


SourceUrl = Annotated[str, AfterValidator(_source_url)]


def _by_project(value: dict[str, _T]) -> dict[str, _T]:
    """Keys are project names, compared as PEP 503 normalizes them (``TensorFlow`` is
    ``tensorflow``); a name given twice that way is refused."""
    found: dict[str, _T] = {}
    for name, item in value.items():
        if not _NAME.match(name):
            raise ValueError(f"{name!r} is not a project name (PEP 508)")
        key = canonicalize_name(name)
        if key in found:
            raise ValueError(f"{name!r} is named twice (as {key!r})")
        found[key] = item
    return found


_T = TypeVar("_T")
_NAME = re.compile(r"^([A-Z0-9]|[A-Z0-9][A-Z0-9._-]*[A-Z0-9])$", re.IGNORECASE)


class PypiSection(Frozen):
    index: SourceUrl = PYPI_SIMPLE
    packages: tuple[PypiRequirement, ...] = ()
    # Dependencies another source (Debian, conda) already provides: resolved, not installed.
    provided_elsewhere: tuple[str, ...] = ()
    # Resolve as of this day (uv's --exclude-newer): only files uploaded before it count, so a
    # legacy project gets the versions of its era (e.g. protobuf 3.x, not 4.x).
    as_of: date | None = None
    # A later day for some packages (uv's --exclude-newer-package): init widens only what the
    # repository's day has no installable release of (TensorFlow's first wheel for Python
    # 3.7, and what that release needs), keeping every other package at ``as_of``.
    as_of_packages: Annotated[dict[str, date], AfterValidator(_by_project)] = {}  # noqa: RUF012
    # Folders or pages of distribution files looked at besides the index (pip's --find-links);
    # git and local files go into ``packages`` as ``name @ git+URL@REV`` or ``name @ file:///…``.
    find_links: tuple[SourceUrl, ...] = ()
    # Indexes searched after ``index`` (uv's --extra-index-url; a name is taken from the first
    # index that has it, so a public name cannot shadow a private one).
    extra_indexes: tuple[SourceUrl, ...] = ()
    # Requirement lines that limit versions without adding packages (uv's --constraint),
    # replace every package's requirement on a name (--override), limit the packages an sdist
    # build installs (--build-constraints, e.g. gensim 3.8.3's Cython==0.29.14).
    constraints: tuple[str, ...] = ()
    overrides: tuple[str, ...] = ()
    build_constraints: tuple[str, ...] = ()
    # What an sdist's setup.py imports without declaring it (pycocotools 2.0.0: Cython and
    # NumPy; uv's extra-build-dependencies): installed into its build, where the environment
    # has it at the environment's version (the ABI the built extension is compiled against).
    extra_build_dependencies: Annotated[dict[str, tuple[PypiRequirement, ...]],
                                        AfterValidator(_by_project)] = {}  # noqa: RUF012
    # Package names (or ":all:") to take only as wheels, or only from their sdist.
    only_binary: tuple[str, ...] = ()
    no_binary: tuple[str, ...] = ()


class DebianSection(Frozen):
    suite: str
    mirror: str = DEBIAN_MIRROR
    components: tuple[str, ...] = ("main",)
    packages: tuple[str, ...] = ()
    # "named": exactly the packages named; "closure": with what their Pre-Depends and Depends
    # pull in, as apt chooses it (the base system left to the host). Named by default, so a
    # spec that picked its packages by hand keeps the lock it has.
    dependencies: Literal["named", "closure"] = "named"
    # The OpenPGP keyring InRelease is checked against; default: Debian's archive keyring.
    keyring: str | None = None


class CudaSection(Frozen):
    version: str = Field(pattern=r"^(>=|==)?[1-9]\d?\.\d{1,2}(\.\d{1,3})?$")
    # "system": found and checked, never installed; a missing or wrong toolkit fails with the
    # locked installer (file, URL, sha256) as the remedy. Running NVIDIA's installer is the
    # user's call: it needs root and replaces drivers.
    source: Literal["system"] = "system"

    @property
    def exact(self) -> bool:
        """Whether one release is pinned, rather than a minimum."""
        return not self.version.startswith(">=")

    @property
    def number(self) -> str:
        return self.version.removeprefix(">=").removeprefix("==")


class CudnnSection(Frozen):
    version: str = Field(pattern=r"^[1-9]\d?\.\d{1,2}\.\d{1,3}(\.\d{1,4})?$")
    archive: str | None = None
    url: str | None = None
    sha256: str | None = Field(default=None, pattern=r"^[0-9a-f]{64}$")


class CompilerSection(Frozen):
    kind: Literal["gcc", "mingw-w64"]
    version: str | None = Field(default=None, pattern=r"^[1-9]\d{0,2}(\.\d{1,3}){0,2}$")
    threads: Literal["posix", "win32"] | None = None
    exceptions: Literal["seh", "sjlj", "dwarf"] | None = None


class ConvShape(Frozen):
    batch: Int = Field(default=2, ge=1, le=1024)
    size: Int = Field(default=32, ge=8, le=4096)
    # input channels, then each layer's output
    channels: tuple[Annotated[Int, Field(ge=1, le=4096)], ...] = Field(
        default=(3, 32, 64, 64, 64), min_length=2, max_length=16)


# A verify kernel: the core's (envforge.expectations.CORE_KERNELS, by these names) or a
# mounted pack's, checked by name when the spec is read (``parse._check_kernels``).
CORE_KERNEL_NAMES = ("elementwise", "gemm", "conv", "grad", "train")
KernelName = Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]{0,63}$")]


class VerifySection(Frozen):
    kernels: tuple[KernelName, ...] = ("elementwise", "gemm", "conv")
    seed: Int = Field(default=22, ge=0, lt=1 << 32)  # NumPy's RandomState takes 32 bits
    elementwise_size: Int = Field(default=10_000, ge=1, le=100_000_000)
    gemm_size: Int = Field(default=256, ge=1, le=16_384)
    conv: ConvShape = ConvShape()
    rtol: FiniteFloat = Field(default=1e-4, gt=0, le=1)
    atol: FiniteFloat = Field(default=1e-6, ge=0)
    min_gpu_speedup: FiniteFloat | None = Field(default=None, gt=0, le=10_000)
    repeats: Int = Field(default=3, ge=1, le=MAX_REPEATS)


class PathSection(Frozen):
    scope: Literal["env", "user"] = "env"


class PlatformSpec(Frozen):
    """Everything the spec says for one platform, overrides applied."""

    platform: Platform
    python: PythonSection
    environment: EnvironmentSection
    conda: CondaSection = CondaSection()
    pypi: PypiSection = PypiSection()
    debian: DebianSection | None = None
    cuda: CudaSection | None = None
    cudnn: CudnnSection | None = None
    compiler: CompilerSection | None = None
    verify: VerifySection = VerifySection()
    path: PathSection = PathSection()
    # Each mounted framework pack's section (``[theano]``), validated by the pack's model.
    packs: dict[str, SerializeAsAny[Frozen]] = {}  # noqa: RUF012 (pydantic copies it)

    @model_validator(mode="before")
    @classmethod
    def _implicit_packs(cls, data: Any, info: ValidationInfo) -> Any:
        """A view built in code without ``packs``, validated with a ``registry`` in its
        context, mounts the implicit packs' defaults, as a spec that names no pack's section
        does."""
        if not isinstance(data, dict):
            return data
        if "packs" in data:
            return {**data, "packs": pack_models(data["packs"])}
        registry = (info.context or {}).get("registry")
        if registry is None:
            return data
        return {**data, "packs": implicit_sections(registry)}


class SpecPack(Pack, Protocol):
    """What the spec reads of a pack: the model of its ``[NAME]`` section, and the kernels
    ``[verify] kernels`` may name where it is mounted."""

    @property
    def section(self) -> type[Frozen]: ...

    @property
    def kernels(self) -> Mapping[str, object]: ...


def implicit_sections(registry: Registry[SpecPack]) -> dict[str, Frozen]:
    """The implicit packs' sections with their defaults: a spec that names no pack's."""
    return {pack.name: pack.section() for pack in registry.mounted({})}


def pack_models(packs: Any) -> dict[str, Frozen]:
    """``packs`` as given in code: each value already its pack's model. Text never reaches
    this field (a pack's table is validated by its model under its own name), so a table
    here is refused rather than taken as an empty model."""
    if not isinstance(packs, dict) or not all(isinstance(v, Frozen) for v in packs.values()):
        raise ValueError("packs holds each pack's model; a pack's table goes under its name")
    return packs


class Spec(Frozen):
    """A whole spec: the project and one merged view per target platform."""

    source: str
    project: ProjectSection
    platforms: dict[Platform, PlatformSpec]
    content_hash: str
    # where each key is written, for errors found after parsing (a compat rule's pin)
    key_lines: dict[KeyPath, int] = Field(default_factory=dict, exclude=True, repr=False)

    @property
    def name(self) -> str:
        return self.project.name

    def for_platform(self, platform: Platform) -> PlatformSpec:
        return self.platforms[platform]
