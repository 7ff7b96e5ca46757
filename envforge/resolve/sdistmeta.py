"""Metadata uv built from sdists, kept by envforge and handed back to uv as static metadata.

uv keeps an sdist's built metadata per HTTP revision of its download. Where the index's
responses cannot be cached (a proxy that strips caching headers, as this project's does) and
across envforge's per-platform uv caches, each lock downloaded and built the same sdist again
(Theano-PyMC 1.0.5: 3 MB and a setup.py run, about a second of CPU per uv run). envforge
keeps what uv built, per index, name, version and Python minor, beside the sha256 of the sdist
it was built from, and gives it to uv as ``dependency-metadata`` (uv's own setting for
metadata known beforehand). A result whose sdist for that version has another sha256 (the
index changed its file) is resolved again without it, and the entry is taken again.

Only PyPI's own index is kept: uv's cache folder for it (``sdists-v11/pypi``) names the package
and version; another index's folder is a digest of its URL.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from packaging.utils import canonicalize_name
from pydantic import ValidationError

from envforge.host.atomicfile import write_atomic
from envforge.model import Frozen
from envforge.spec import PYPI_SIMPLE

# uv's cache folder for sdists (its CacheBucket::SourceDistributions), PyPI's part named
# "pypi": as uv 0.13.9 writes it here (tests/resolve/test_sdistmeta.py runs the real uv on
# it); a uv that moves it leaves this store empty, and uv builds as before
UV_BUCKET = "sdists-v11"
# A file's mtime may lag time.time() by the kernel's coarse clock; where it lags more (a file
# system of 1 s or 2 s steps) nothing is kept, and uv builds as it did before.
_CLOCK_SLACK_S = 0.1


class BuiltMetadata(Frozen):
    """What uv built from one sdist: the core metadata its resolver reads."""

    name: str
    version: str
    sha256: str  # the sdist it was built from
    requires_dist: tuple[str, ...]
    requires_python: str | None
    provides_extras: tuple[str, ...]

    def as_uv_entry(self) -> dict[str, Any]:
        entry: dict[str, Any] = {"name": self.name, "version": self.version,
                                 "requires-dist": list(self.requires_dist),
                                 "provides-extras": list(self.provides_extras)}
        if self.requires_python is not None:
            entry["requires-python"] = self.requires_python
        return entry


def store_folder(cache: Path, index: str) -> Path | None:
    """Where entries for ``index`` live; None for an index other than PyPI's."""
    return cache / "sdist-metadata" / "pypi" if index.rstrip("/") == PYPI_SIMPLE else None


def _minor(python: str) -> str:
    return ".".join(python.split(".")[:2])


def known(cache: Path, index: str, python: str) -> dict[str, BuiltMetadata]:
    """The kept entries for ``index`` and ``python``'s minor, by ``name==version``; an
    unreadable entry is left out (uv builds it again)."""
    folder = store_folder(cache, index)
    if folder is None or not folder.is_dir():
        return {}
    found: dict[str, BuiltMetadata] = {}
    for path in folder.glob(f"*/*/py{_minor(python)}.json"):
        try:
            meta = BuiltMetadata.model_validate_json(path.read_bytes())
        except (OSError, ValidationError):
            continue
        found[_key(meta.name, meta.version)] = meta
    return found


def _key(name: str, version: str) -> str:
    return f"{canonicalize_name(name)}=={version}"


def uv_config(entries: Iterable[BuiltMetadata], folder: Path,
              extra_build: Mapping[str, Sequence[str]] | None = None) -> Path | None:
    """A uv.toml in ``folder`` giving uv the entries, and the requirements each named sdist's
    build needs beyond those it declares (uv's ``extra-build-dependencies``); None without
    either."""
    import tomli_w

    settings: dict[str, Any] = {}
    listed = [meta.as_uv_entry() for meta in entries]
    if listed:
        settings["dependency-metadata"] = listed
    if extra_build:
        settings["extra-build-dependencies"] = {name: list(reqs)
                                                for name, reqs in sorted(extra_build.items())}
    if not settings:
        return None
    path = folder / "uv.toml"
    path.write_text(tomli_w.dumps(settings), encoding="utf-8")
    return path


def stale(pylock: Mapping[str, Any], supplied: Mapping[str, BuiltMetadata]) -> bool:
    """Whether uv's result names, for a version it was given metadata for, an sdist other
    than the one that metadata was built from."""
    for package in pylock.get("packages", []):
        meta = supplied.get(_key(package["name"], package["version"]))
        if meta is None:
            continue
        sdist = package.get("sdist") or {}
        if sdist.get("hashes", {}).get("sha256") != meta.sha256:
            return True
    return False


def keep_built(pylock: Mapping[str, Any], uv_cache: Path, cache: Path, index: str,
               python: str, supplied: Mapping[str, BuiltMetadata], *, since: float) -> None:
    """Take, into envforge's store, the metadata uv built for the result's sdists this run
    (those it was not given; ``since``: the run's start, as ``time.time()``): read from the
    revisions of uv's cache folder for the version written since then, which must agree
    (an older revision may be another Python's build: its extras come in another order),
    else the version is left to uv."""
    folder = store_folder(cache, index)
    if folder is None:
        return
    for package in pylock.get("packages", []):
        name, version = canonicalize_name(package["name"]), str(package["version"])
        sha = (package.get("sdist") or {}).get("hashes", {}).get("sha256")
        if not sha or _key(name, version) in supplied:
            continue
        built = _read_uv_built(uv_cache / UV_BUCKET / "pypi" / name / version, since)
        if built is None or canonicalize_name(built[0]) != name or built[1] != version:
            continue
        meta = BuiltMetadata(name=name, version=version, sha256=sha, requires_dist=built[2],
                             requires_python=built[3], provides_extras=built[4])
        write_atomic(folder / name / version / f"py{_minor(python)}.json",
                     meta.model_dump_json().encode("utf-8"))


def _read_uv_built(folder: Path, since: float,
                   ) -> tuple[str, str, list[str], str | None, list[str]] | None:
    """uv's metadata for one version (``ResolutionMetadata``, a MessagePack array: name,
    version, requires_dist, requires_python, provides_extras, dynamic), the same in every
    revision folder written since ``since``; None where there is none, one does not read,
    or they differ."""
    try:
        revisions = [decode_msgpack(p.read_bytes()) for p in folder.glob("*/metadata.msgpack")
                     if p.stat().st_mtime >= since - _CLOCK_SLACK_S]
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    if not revisions or any(r != revisions[0] for r in revisions):
        return None
    found = revisions[0]
    if not (isinstance(found, list) and len(found) == 6 and isinstance(found[0], str)
            and isinstance(found[1], str) and isinstance(found[2], list)
            and all(isinstance(r, str) for r in found[2])
            and (found[3] is None or isinstance(found[3], str))
            and isinstance(found[4], list) and all(isinstance(e, str) for e in found[4])):
        return None
    return found[0], found[1], found[2], found[3], found[4]


def decode_msgpack(data: bytes) -> Any:
    """The MessagePack subset uv writes for metadata: nil, booleans, small integers,
    strings and arrays; anything else is a ValueError."""
    pos = 0

    def take(n: int) -> bytes:
        nonlocal pos
        if pos + n > len(data):
            raise ValueError("MessagePack: truncated")
        chunk = data[pos:pos + n]
        pos += n
        return chunk

    def length(width: int) -> int:
        return int.from_bytes(take(width), "big")

    def value() -> Any:
        first = take(1)[0]
        if first <= 0x7F:
            return first
        if first == 0xC0:
            return None
        if first in (0xC2, 0xC3):
            return first == 0xC3
        if 0xA0 <= first <= 0xBF:
            return take(first & 0x1F).decode("utf-8")
        if first in _STR_WIDTH:
            return take(length(_STR_WIDTH[first])).decode("utf-8")
        if 0x90 <= first <= 0x9F:
            return [value() for _ in range(first & 0x0F)]
        if first in _ARRAY_WIDTH:
            return [value() for _ in range(length(_ARRAY_WIDTH[first]))]
        raise ValueError(f"MessagePack: type 0x{first:02x} is not read here")

    found = value()
    if pos != len(data):
        raise ValueError("MessagePack: bytes after the value")
    return found


_STR_WIDTH = {0xD9: 1, 0xDA: 2, 0xDB: 4}
_ARRAY_WIDTH = {0xDC: 2, 0xDD: 4}
