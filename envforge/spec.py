"""The spec: a TOML file that pins a stack, read into frozen models.

Any section but ``[project]`` may carry ``platform.<name>`` tables whose values
replace the general ones for that platform; ``packages`` lists are added to instead.
Each platform's merged view is validated on its own, and an error names the line of
the value that caused it, whether it sat in the general table or the platform one.
"""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from datetime import date
from pathlib import Path
from typing import Annotated, Any, Literal, Protocol

from packaging.requirements import InvalidRequirement, Requirement
from pydantic import (
    AfterValidator,
    Field,
    SerializeAsAny,
    Strict,
    ValidationError,
    ValidationInfo,
    model_validator,
)

from envforge import platforms as _platforms
from envforge.errors import SpecError
from envforge.inputfile import SPEC_LIMIT, read_input_text
from envforge.model import Frozen as Frozen
from envforge.packapi import Pack, Registry
from envforge.platforms import Platform as Platform
from envforge.tomlpos import KeyPath, key_lines, line_of

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


class PypiSection(Frozen):
    index: str = PYPI_SIMPLE
    packages: tuple[PypiRequirement, ...] = ()
    # Dependencies another source (Debian, conda) already provides: resolved, not installed.
    provided_elsewhere: tuple[str, ...] = ()
    # Resolve as of this day (uv's --exclude-newer): only files uploaded before it count, so a
    # legacy project gets the versions of its era (e.g. protobuf 3.x, not 4.x).
    as_of: date | None = None
    # Folders or pages of distribution files looked at besides the index (pip's --find-links);
    # git and local files go into ``packages`` as ``name @ git+URL@REV`` or ``name @ file:///…``.
    find_links: tuple[str, ...] = ()
    # Indexes searched after ``index`` (uv's --extra-index-url; a name is taken from the first
    # index that has it, so a public name cannot shadow a private one).
    extra_indexes: tuple[str, ...] = ()
    # Requirement lines that limit versions without adding packages (uv's --constraint),
    # replace every package's requirement on a name (--override), limit the packages an sdist
    # build installs (--build-constraints, e.g. gensim 3.8.3's Cython==0.29.14).
    constraints: tuple[str, ...] = ()
    overrides: tuple[str, ...] = ()
    build_constraints: tuple[str, ...] = ()
    # Package names (or ":all:") to take only as wheels, or only from their sdist.
    only_binary: tuple[str, ...] = ()
    no_binary: tuple[str, ...] = ()


class DebianSection(Frozen):
    suite: str
    mirror: str = DEBIAN_MIRROR
    components: tuple[str, ...] = ("main",)
    packages: tuple[str, ...] = ()
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


KernelName = Literal["elementwise", "gemm", "conv", "scan", "grad", "random", "softmax_xent",
                     "train"]


class VerifySection(Frozen):
    kernels: tuple[KernelName, ...] = ("elementwise", "gemm", "conv")
    seed: Int = Field(default=22, ge=0, lt=1 << 32)  # NumPy's RandomState takes 32 bits
    elementwise_size: Int = Field(default=10_000, ge=1, le=100_000_000)
    gemm_size: Int = Field(default=256, ge=1, le=16_384)
    conv: ConvShape = ConvShape()
    rtol: FiniteFloat = Field(default=1e-4, gt=0, le=1)
    atol: FiniteFloat = Field(default=1e-6, ge=0)
    min_gpu_speedup: FiniteFloat | None = Field(default=None, gt=0, le=10_000)
    # Theano's resident GEMM against raw cuBLAS SGEMM on the same library (GPU only).
    min_cublas_ratio: FiniteFloat = Field(default=0.9, gt=0, le=1)
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
    """What the spec reads of a pack: the model of its ``[NAME]`` section."""

    @property
    def section(self) -> type[Frozen]: ...


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


_PER_PLATFORM_SECTIONS = ("python", "environment", "conda", "pypi", "debian", "cuda", "cudnn",
                          "compiler", "verify", "path")


def load_spec(path: Path | str, registry: Registry[SpecPack]) -> Spec:
    """Read and validate a spec file; any problem is one SpecError naming file, line and key.
    ``registry``'s packs give the sections beside the core's."""
    path = Path(path)
    text = read_input_text(path, SPEC_LIMIT, missing="no such spec file")
    return parse_spec(text, source=str(path), registry=registry)


def parse_spec(text: str, *, source: str, registry: Registry[SpecPack]) -> Spec:
    """Validate spec text; ``source`` is the name errors use."""
    raw = load_toml(text, source)
    lines = key_lines(text)

    def fail(path: KeyPath, message: str) -> SpecError:
        return SpecError(source, message, line=line_of(lines, path),
                         key=".".join(str(p) for p in path) or None)

    sections = (*_PER_PLATFORM_SECTIONS, *registry.names)
    unknown = sorted(set(raw) - {"project", *sections})
    if unknown:
        known = ", ".join(("project", *sections))
        raise fail((unknown[0],), f"unknown section (known: {known})")
    if "project" not in raw:
        raise fail((), "missing [project] section")
    project = _validate(ProjectSection, raw["project"], ("project",), {}, fail)
    if len(set(project.platforms)) != len(project.platforms):
        raise fail(("project", "platforms"), "a platform is listed twice")

    merged: dict[Platform, PlatformSpec] = {}
    packs = registry.mounted(raw)
    for platform in project.platforms:
        view, origin = _merge_platform(raw, platform, sections, fail)
        core = {name: view[name] for name in _PER_PLATFORM_SECTIONS if name in view}
        pack_sections = {pack.name: _validate(pack.section, view.get(pack.name, {}),
                                              (pack.name,), origin, fail) for pack in packs}
        merged[platform] = _validate(PlatformSpec, {"platform": platform, **core,
                                                    "packs": pack_sections}, (), origin, fail)
        _check_markers(merged[platform], origin, fail)
    # The hash covers what the user wrote (comments and layout aside), not envforge's defaults,
    # so a new optional key in a later envforge does not make every lock stale.
    canonical = json.dumps(raw, sort_keys=True, separators=(",", ":"), default=str)
    digest = hashlib.sha256(canonical.encode()).hexdigest()
    return Spec(source=source, project=project, platforms=merged, content_hash=f"sha256:{digest}",
                key_lines=lines)


_PYTHON_MARKERS = frozenset({"python_version", "python_full_version"})


def excluded_by_python_marker(text: str, version: str) -> bool:
    """Whether ``text``'s marker names only the Python and is false for ``version`` (3.N or
    3.N.N): such a line is never installed in that environment."""
    marker = Requirement(text).marker
    if marker is None or not _variables(marker._markers) <= _PYTHON_MARKERS:
        return False
    full = version if version.count(".") == 2 else ""
    if "python_full_version" in _variables(marker._markers) and not full:
        return False
    minor = ".".join(version.split(".")[:2])
    return not marker.evaluate({"python_version": minor, "python_full_version": full})


def _check_markers(pspec: PlatformSpec, origin: dict[KeyPath, KeyPath], fail: Any) -> None:
    """A ``[pypi] packages`` line whose marker names only the Python and is false for the
    environment's would be left out without a word: refused, with the fix."""
    version = pspec.python.version
    for index, text in enumerate(pspec.pypi.packages):
        if excluded_by_python_marker(text, version):
            raise fail(_origin_of(("pypi", "packages", str(index)), origin),
                       f"{text!r}: its marker excludes it on the environment's Python {version}, "
                       "so it would never be installed; fix: remove the line")


def _variables(markers: Any) -> set[str]:
    """The marker variables named in packaging's parsed marker list."""
    found: set[str] = set()
    for item in markers:
        if isinstance(item, list):
            found |= _variables(item)
        elif isinstance(item, tuple):
            found |= {getattr(part, "value", "") for part in item
                      if type(part).__name__ == "Variable"}
    return found


def load_toml(text: str, source: str) -> dict[str, Any]:
    """tomllib's reading, with a syntax error or a document nested too deep as a SpecError."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise toml_syntax_error(source, exc) from None
    except RecursionError:
        raise SpecError(source, "TOML nested too deeply to read") from None


def toml_syntax_error(source: str, exc: tomllib.TOMLDecodeError) -> SpecError:
    """tomllib puts the position in its message ("... (at line 9, column 8)")."""
    text = str(exc)
    match = re.search(r"\(at line (\d+), column \d+\)$", text)
    line = int(match.group(1)) if match else None
    reason = text[: match.start()].strip() if match else text
    return SpecError(source, f"TOML syntax error: {reason}", line=line)


def _merge_platform(raw: dict[str, Any], platform: str, sections: tuple[str, ...],
                    fail: Any) -> tuple[dict[str, Any], dict[KeyPath, KeyPath]]:
    """The sections as seen by one platform, and where each overridden key came from."""
    view: dict[str, Any] = {}
    origin: dict[KeyPath, KeyPath] = {}
    for section in sections:
        if section not in raw:
            continue
        body = raw[section]
        if not isinstance(body, dict):
            raise fail((section,), "must be a table")
        general = {k: v for k, v in body.items() if k != "platform"}
        overrides = body.get("platform", {})
        if not isinstance(overrides, dict):
            raise fail((section, "platform"), "must be a table of platform names")
        for name in overrides:
            if name not in PLATFORMS:
                raise fail((section, "platform", name),
                           f"unknown platform (known: {', '.join(PLATFORMS)})")
        extra = overrides.get(platform, {})
        if not isinstance(extra, dict):
            raise fail((section, "platform", platform), "must be a table")
        combined = dict(general)
        for key, value in extra.items():
            origin[(section, key)] = (section, "platform", platform, key)
            if key == "packages" and isinstance(value, list) and isinstance(general.get(key), list):
                combined[key] = [*general[key], *value]
                # each merged value's own line: the shared ones', then the platform's
                origin.update({(section, key, str(i)): (section, key, str(i))
                               for i in range(len(general[key]))})
                origin.update({(section, key, str(len(general[key]) + i)):
                               (section, "platform", platform, key, str(i))
                               for i in range(len(value))})
            else:
                combined[key] = value
        view[section] = combined
    return view, origin


def _origin_of(path: KeyPath, origin: dict[KeyPath, KeyPath]) -> KeyPath:
    """Where the merged view's ``path`` is written: its longest overridden prefix's place."""
    for length in range(len(path), 0, -1):
        if path[:length] in origin:
            return (*origin[path[:length]], *path[length:])
    return path


def _validate(model: type[Any], data: Any, prefix: KeyPath, origin: dict[KeyPath, KeyPath],
              fail: Any) -> Any:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        loc = tuple(str(p) for p in error["loc"])
        path = _origin_of((*prefix, *loc), origin)
        message = error["msg"]
        if error["type"] == "extra_forbidden":
            message = "unknown key"
        elif error["type"] == "missing":
            message = "required key is missing"
        elif error["type"] in ("literal_error", "string_pattern_mismatch"):
            message = f"invalid value {error.get('input')!r}: {message}"
        elif error["type"] in ("int_type", "bool_type", "float_type"):  # strict: no coercion
            given = json.dumps(error.get("input"), default=str)
            message = f"invalid value {given}: {message} (a TOML value, not a string)"
        elif error["type"] == "value_error":
            message = str(error.get("ctx", {}).get("error", message))
        raise fail(path, message) from None
