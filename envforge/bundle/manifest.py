"""The bundle's manifest: what each file is, where it came from and what it hashes to.

``DIR/manifest.json`` is written last, so a folder with a manifest is a finished bundle.
It records the lock's spec hash and platform, and per file its path in the bundle, source,
sha256 and size. A wheel built from a locked sdist names that sdist (``built_from``); the
sdist is then left out and listed under ``omitted``. The lock is the root of trust: apply
checks each locked sha256; a wheel built from a locked sdist is the one thing the lock cannot
hash (compiled builds are not reproducible), so its sha256 is the manifest's, and apply also
checks it against the sdist's name, version, install scheme and tags.
"""

from __future__ import annotations

import functools
import json
from collections import Counter
from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationError, field_validator

from envforge.confine import check_relative, inside
from envforge.errors import InputError
from envforge.inputfile import LOCK_LIMIT, read_input_text
from envforge.spec import Frozen, Platform

MANIFEST = "manifest.json"
README = "README.md"
FORMAT: Literal["envforge-bundle"] = "envforge-bundle"
FORMAT_VERSION = 1

Source = Literal["pypi", "conda", "deb", "artifact", "envforge"]
SOURCES: tuple[Source, ...] = ("pypi", "conda", "deb", "artifact", "envforge")
# Each source's folder inside the bundle; envforge's wheels are what pip's --find-links reads.
FOLDERS: dict[Source, str] = {"pypi": "pypi", "conda": "conda", "deb": "deb",
                              "artifact": "artifacts", "envforge": "envforge-wheels"}

Sha256 = str


class BuiltFrom(Frozen):
    """The locked sdist a wheel was built from, and with what."""

    filename: str
    sha256: Sha256 = Field(pattern=r"^[0-9a-f]{64}$")
    python: str  # the version that built it, e.g. 3.7.16
    pure: bool  # py3-none-any: installable by any Python 3, whatever built it
    # What its build environment held (name==version), as the build reported it.
    build_requires: tuple[str, ...] = ()


class BundleFile(Frozen):
    path: str  # relative to the bundle, "/"-separated
    source: Source
    role: str  # wheel, sdist, built-wheel, deb, conda, cudnn, envforge, dependency, ...
    name: str
    version: str | None = None
    sha256: Sha256 = Field(pattern=r"^[0-9a-f]{64}$")
    size: int = Field(ge=0)
    url: str | None = None
    built_from: BuiltFrom | None = None

    @field_validator("path")
    @classmethod
    def _inside(cls, value: str) -> str:
        """A manifest is read before it is trusted: no path may lead outside the bundle."""
        if "\\" in value:
            raise ValueError(f"{value!r} is not a relative path inside the bundle")
        return check_relative(value)


class Omitted(Frozen):
    """A locked file deliberately not carried, and why (an sdist whose wheel is carried)."""

    filename: str
    sha256: Sha256 = Field(pattern=r"^[0-9a-f]{64}$")
    source: Source
    reason: str


class EnvforgeWheels(Frozen):
    """envforge and its runtime dependencies as wheels, for installing envforge offline."""

    python: str
    platform: str  # uv's platform name, e.g. x86_64-manylinux_2_17
    folder: str
    install: str  # the pip command, relative to the bundle folder


class Manifest(Frozen):
    format: Literal["envforge-bundle"] = FORMAT
    version: int = FORMAT_VERSION
    envforge: str
    spec_name: str
    spec_hash: str
    spec: str  # the copy of the spec inside the bundle
    lock: str  # the copy of the lock inside the bundle
    lock_sha256: Sha256 = Field(pattern=r"^[0-9a-f]{64}$")
    platform: Platform
    python: str
    files: tuple[BundleFile, ...]
    omitted: tuple[Omitted, ...] = ()
    envforge_wheels: EnvforgeWheels | None = None

    def by_sha256(self) -> dict[str, BundleFile]:
        return {f.sha256: f for f in self.files}

    def built_wheel_for(self, sdist_sha256: str) -> BundleFile | None:
        return next((f for f in self.files if f.built_from is not None
                     and f.built_from.sha256 == sdist_sha256), None)

    def sizes(self) -> dict[str, tuple[int, int]]:
        """source -> (files, bytes), in SOURCES order, sources with no file left out."""
        count: Counter[str] = Counter()
        total: Counter[str] = Counter()
        for f in self.files:
            count[f.source] += 1
            total[f.source] += f.size
        return {s: (count[s], total[s]) for s in SOURCES if count[s]}

    @property
    def total_size(self) -> int:
        return sum(f.size for f in self.files)


def dumps_manifest(manifest: Manifest) -> str:
    """Sorted keys, no timestamps: the same inputs give the same bytes."""
    data = manifest.model_dump(mode="json", exclude_none=True)
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


def write_manifest(manifest: Manifest, bundle: Path) -> Path:
    path = bundle / MANIFEST
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(dumps_manifest(manifest), encoding="utf-8")
    tmp.replace(path)
    return path


def read_manifest(bundle: Path) -> Manifest:
    """The bundle's manifest; a missing or malformed one is an InputError naming the key."""
    path = bundle / MANIFEST
    if bundle.exists() and not bundle.is_dir():
        raise InputError(f"{bundle}: not a folder: a bundle is the folder `envforge bundle "
                         "LOCK -o DIR` made")
    if not path.exists():
        raise InputError(f"{bundle}: not an envforge bundle (no {MANIFEST}; make one with "
                         "`envforge bundle LOCK -o DIR`)")
    try:
        raw = json.loads(read_input_text(path, LOCK_LIMIT))
    except RecursionError:
        raise InputError(f"{path}: JSON nested too deeply to read") from None
    except ValueError as exc:
        raise InputError(f"{path}: not valid JSON: {exc}") from None
    if isinstance(raw, dict) and raw.get("version") != FORMAT_VERSION:
        raise InputError(f"{path}: bundle format version {raw.get('version')!r} is not "
                         f"{FORMAT_VERSION}; rebuild it with this envforge")
    try:
        return Manifest.model_validate(raw)
    except ValidationError as exc:
        error = exc.errors()[0]
        key = ".".join(str(p) for p in error["loc"])
        raise InputError(f"{path}: {key}: {error['msg']}") from None


def bundle_index(bundle: Path) -> dict[str, Path]:
    """sha256 -> the file's path in the bundle; empty when the folder has no manifest."""
    path = bundle / MANIFEST
    try:
        stamp = path.stat().st_mtime_ns
    except OSError:
        return {}
    return dict(_index(str(bundle), stamp))


@functools.lru_cache(maxsize=8)
def _index(bundle: str, stamp: int) -> tuple[tuple[str, Path], ...]:
    del stamp  # part of the cache key only: a rewritten manifest is read again
    manifest = read_manifest(Path(bundle))
    return tuple((f.sha256, inside(Path(bundle), f.path, what="bundle path"))
                 for f in manifest.files)
