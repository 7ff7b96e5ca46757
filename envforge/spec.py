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
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from envforge.errors import SpecError
from envforge.tomlpos import KeyPath, key_lines, line_of

Platform = Literal["win-64", "linux-64"]
PLATFORMS: tuple[Platform, ...] = ("win-64", "linux-64")
PYPI_SIMPLE = "https://pypi.org/simple"
DEBIAN_MIRROR = "https://deb.debian.org/debian"


class Frozen(BaseModel):
    """Immutable, strict base for every model envforge reads or writes."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class ProjectSection(Frozen):
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9._-]*$")
    platforms: tuple[Platform, ...] = Field(min_length=1)
    description: str = ""


class PythonSection(Frozen):
    version: str = Field(pattern=r"^3\.\d+(\.\d+)?$")

    @property
    def minor(self) -> str:
        """``3.7`` for ``3.7`` and ``3.7.16``."""
        return ".".join(self.version.split(".")[:2])


class EnvironmentSection(Frozen):
    kind: Literal["conda", "venv", "debian"]
    name: str | None = None
    channels: tuple[str, ...] = ()


class CondaSection(Frozen):
    packages: tuple[str, ...] = ()


class PypiSection(Frozen):
    index: str = PYPI_SIMPLE
    packages: tuple[str, ...] = ()
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
    version: str = Field(pattern=r"^(>=|==)?\d+\.\d+(\.\d+)?$")
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
    version: str = Field(pattern=r"^\d+\.\d+\.\d+(\.\d+)?$")
    archive: str | None = None
    url: str | None = None
    sha256: str | None = Field(default=None, pattern=r"^[0-9a-f]{64}$")


class CompilerSection(Frozen):
    kind: Literal["gcc", "mingw-w64"]
    version: str | None = None
    threads: Literal["posix", "win32"] | None = None
    exceptions: Literal["seh", "sjlj", "dwarf"] | None = None


class TheanoSection(Frozen):
    """Theano's settings as the user means them; rendering picks the version's spelling."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    device: str = Field(default="cpu", pattern=r"^(cpu|cuda\d*|opencl\d+:\d+)$")
    float_x: Literal["float16", "float32", "float64"] = Field(default="float64", alias="floatX")
    mode: Literal["Mode", "FAST_RUN", "FAST_COMPILE", "DebugMode", "DEBUG_MODE",
                  "NanGuardMode"] = "FAST_RUN"
    allow_gc: bool = True
    preallocate: float | None = None
    dnn: Literal["auto", "enabled", "disabled", "no_check"] = "auto"
    blas_ldflags: str | None = None
    cxxflags: str | None = None
    cxx: str | None = None
    compiledir: str | None = None
    theanorc: Literal["home", "env"] = "env"
    flags: dict[str, str] = {}


class ConvShape(Frozen):
    batch: int = Field(default=2, ge=1)
    size: int = Field(default=32, ge=8)
    channels: tuple[int, ...] = (3, 32, 64, 64, 64)


class VerifySection(Frozen):
    kernels: tuple[Literal["elementwise", "gemm", "conv"], ...] = ("elementwise", "gemm", "conv")
    seed: int = 22
    elementwise_size: int = Field(default=10_000, ge=1)
    gemm_size: int = Field(default=256, ge=1)
    conv: ConvShape = ConvShape()
    rtol: float = Field(default=1e-4, gt=0)
    atol: float = Field(default=1e-6, ge=0)
    min_gpu_speedup: float | None = Field(default=None, gt=0)
    repeats: int = Field(default=3, ge=1)


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
    theano: TheanoSection = TheanoSection()
    verify: VerifySection = VerifySection()
    path: PathSection = PathSection()


class Spec(Frozen):
    """A whole spec: the project and one merged view per target platform."""

    source: str
    project: ProjectSection
    platforms: dict[Platform, PlatformSpec]
    content_hash: str

    @property
    def name(self) -> str:
        return self.project.name

    def for_platform(self, platform: Platform) -> PlatformSpec:
        return self.platforms[platform]


_PER_PLATFORM_SECTIONS = ("python", "environment", "conda", "pypi", "debian", "cuda", "cudnn",
                          "compiler", "theano", "verify", "path")


def load_spec(path: Path | str) -> Spec:
    """Read and validate a spec file; any problem is one SpecError naming file, line and key."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError(path, "no such spec file") from None
    except UnicodeDecodeError as exc:
        raise SpecError(path, f"not UTF-8 text ({exc.reason})") from None
    return parse_spec(text, source=str(path))


def parse_spec(text: str, *, source: str) -> Spec:
    """Validate spec text; ``source`` is the name errors use."""
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise toml_syntax_error(source, exc) from None
    lines = key_lines(text)

    def fail(path: KeyPath, message: str) -> SpecError:
        return SpecError(source, message, line=line_of(lines, path),
                         key=".".join(str(p) for p in path) or None)

    unknown = sorted(set(raw) - {"project", *_PER_PLATFORM_SECTIONS})
    if unknown:
        known = ", ".join(("project", *_PER_PLATFORM_SECTIONS))
        raise fail((unknown[0],), f"unknown section (known: {known})")
    if "project" not in raw:
        raise fail((), "missing [project] section")
    project = _validate(ProjectSection, raw["project"], ("project",), {}, fail)
    if len(set(project.platforms)) != len(project.platforms):
        raise fail(("project", "platforms"), "a platform is listed twice")

    merged: dict[Platform, PlatformSpec] = {}
    for platform in project.platforms:
        view, origin = _merge_platform(raw, platform, fail)
        merged[platform] = _validate(PlatformSpec, {"platform": platform, **view}, (), origin, fail)
    # The hash covers what the user wrote (comments and layout aside), not envforge's defaults,
    # so a new optional key in a later envforge does not make every lock stale.
    canonical = json.dumps(raw, sort_keys=True, separators=(",", ":"), default=str)
    digest = hashlib.sha256(canonical.encode()).hexdigest()
    return Spec(source=source, project=project, platforms=merged, content_hash=f"sha256:{digest}")


def toml_syntax_error(source: str, exc: tomllib.TOMLDecodeError) -> SpecError:
    """tomllib puts the position in its message ("... (at line 9, column 8)")."""
    text = str(exc)
    match = re.search(r"\(at line (\d+), column \d+\)$", text)
    line = int(match.group(1)) if match else None
    reason = text[: match.start()].strip() if match else text
    return SpecError(source, f"TOML syntax error: {reason}", line=line)


def _merge_platform(raw: dict[str, Any], platform: str,
                    fail: Any) -> tuple[dict[str, Any], dict[KeyPath, KeyPath]]:
    """The sections as seen by one platform, and where each overridden key came from."""
    view: dict[str, Any] = {}
    origin: dict[KeyPath, KeyPath] = {}
    for section in _PER_PLATFORM_SECTIONS:
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
            else:
                combined[key] = value
        view[section] = combined
    return view, origin


def _validate(model: type[Any], data: Any, prefix: KeyPath, origin: dict[KeyPath, KeyPath],
              fail: Any) -> Any:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        loc = tuple(str(p) for p in error["loc"])
        path = (*prefix, *loc)
        for length in range(len(path), 0, -1):
            if path[:length] in origin:
                path = (*origin[path[:length]], *path[length:])
                break
        message = error["msg"]
        if error["type"] == "extra_forbidden":
            message = "unknown key"
        elif error["type"] == "missing":
            message = "required key is missing"
        elif error["type"] in ("literal_error", "string_pattern_mismatch"):
            message = f"invalid value {error.get('input')!r}: {message}"
        raise fail(path, message) from None
