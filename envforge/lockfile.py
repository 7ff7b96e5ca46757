"""The lockfile: exact artifacts per platform plus what verify must find, as frozen models.

The on-disk shape is TOML written with sorted, stable content (no timestamps), so the
same spec and the same index state give identical bytes. ``version`` guards the format.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, Literal

import tomli_w
from pydantic import Field, ValidationError

from envforge.errors import SpecError
from envforge.spec import Frozen, Platform, toml_syntax_error
from envforge.tomlpos import key_lines, line_of

LOCK_VERSION = 1
Sha256 = str


class LockedPypiFile(Frozen):
    """One file from a Python index: the wheel a platform installs, or the sdist where none fits."""

    name: str
    version: str
    kind: Literal["wheel", "sdist"]
    filename: str
    url: str
    sha256: Sha256 = Field(pattern=r"^[0-9a-f]{64}$")
    size: int | None = None
    # Where a file from outside the index came from (None: the index). Such files are
    # installed by their cached copy, not looked up on the index by name.
    origin: Literal["git", "path", "find-links"] | None = None
    commit: str | None = Field(default=None, pattern=r"^[0-9a-f]{40}$")  # git: the commit


class LockedCondaPackage(Frozen):
    """One conda package record as solved by rattler for a platform."""

    name: str
    version: str
    build: str
    build_number: int = 0
    channel: str
    subdir: str
    filename: str
    url: str
    sha256: Sha256 = Field(pattern=r"^[0-9a-f]{64}$")
    md5: str = Field(pattern=r"^[0-9a-f]{32}$")
    size: int | None = None
    depends: tuple[str, ...] = ()


class LockedDeb(Frozen):
    """One Debian binary package from the archive's Packages index."""

    name: str
    version: str
    architecture: str
    filename: str
    url: str
    sha256: Sha256 = Field(pattern=r"^[0-9a-f]{64}$")
    size: int
    depends: str = ""


class LockedArtifact(Frozen):
    """A file outside any package index: cuDNN, a CUDA installer, a MinGW archive."""

    role: Literal["cudnn", "cuda-installer", "compiler"]
    filename: str
    url: str | None = None
    sha256: Sha256 = Field(pattern=r"^[0-9a-f]{64}$")
    size: int | None = None
    source: str
    user_supplied: bool = False


class ConvParams(Frozen):
    """The conv kernel's layers, kept in the lock so the probe runs what was referenced."""

    channels: tuple[int, ...] = Field(min_length=2)  # input channels, then each layer's output
    filter_size: int = Field(default=3, ge=1)
    border_mode: Literal["half", "valid"] = "half"
    filter_flip: bool = True  # Theano's default: a true convolution


class KernelExpectation(Frozen):
    """A kernel verify runs: its deterministic inputs and reference results from NumPy (float64).

    ``shape`` is the input's: (n,) for elementwise, (n, n) for gemm, (batch, channels,
    size, size) for conv. ``samples`` are the output's values at ``sample_indices`` of
    its flattened (C-order) form; a value passes within ``atol + rtol * |expected|``.
    """

    name: Literal["elementwise", "gemm", "conv"]
    seed: int
    shape: tuple[int, ...]
    checksum: float
    samples: tuple[float, ...]
    sample_indices: tuple[int, ...]
    rtol: float
    atol: float
    output_shape: tuple[int, ...] | None = None
    conv: ConvParams | None = None


class Expectations(Frozen):
    """What verify must find in the provisioned environment."""

    versions: dict[str, str]
    device: str
    float_x: str
    theano_flags: dict[str, str]
    kernels: tuple[KernelExpectation, ...] = ()
    min_gpu_speedup: float | None = None
    cuda: str | None = None
    cudnn: str | None = None
    repeats: int = Field(default=3, ge=1)  # timed runs per kernel; the best one counts


class PlatformLock(Frozen):
    """Everything locked for one target platform."""

    python: str
    environment: Literal["conda", "venv", "debian"]
    pypi: tuple[LockedPypiFile, ...] = ()
    conda: tuple[LockedCondaPackage, ...] = ()
    deb: tuple[LockedDeb, ...] = ()
    artifacts: tuple[LockedArtifact, ...] = ()
    theano_flag_spelling: Literal["dots", "double-underscores"] | None = None
    expect: Expectations
    pypi_python: str | None = None  # the full Python version PyPI was resolved for


class LockMeta(Frozen):
    version: int = LOCK_VERSION
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


def load_lock(path: Path | str) -> Lockfile:
    """Read a lock; a broken one is a SpecError naming file, line and key."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError(path, "no such lock file (run `envforge lock` first)") from None
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise toml_syntax_error(str(path), exc) from None
    version = raw.get("meta", {}).get("version")
    if version != LOCK_VERSION:
        raise SpecError(path, f"lock format version {version!r} is not {LOCK_VERSION}; re-lock",
                        key="meta.version", line=line_of(key_lines(text), ("meta", "version")))
    try:
        return Lockfile.model_validate(raw)
    except ValidationError as exc:
        error = exc.errors()[0]
        loc = [str(p) for p in error["loc"]]
        raise SpecError(path, error["msg"], key=".".join(loc),
                        line=line_of(key_lines(text), loc)) from None


def lock_path_for(spec_path: Path, locks_dir: Path | None = None) -> Path:
    """``specs/X.toml`` locks to ``locks/X.lock`` beside the specs folder."""
    folder = locks_dir if locks_dir is not None else spec_path.resolve().parent.parent / "locks"
    return folder / f"{spec_path.stem}.lock"
