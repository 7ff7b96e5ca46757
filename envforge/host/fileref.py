"""A locked file as the cache knows it, and where the cache keeps it: a leaf module, so that
apply's head start (``headstart``) finds a cached file without importing the fetcher that
takes its downloads (``fetch``)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from envforge.confine import inside
from envforge.errors import ArtifactError

_SHA256 = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class FileRef:
    """A file to have: where it comes from and what it must hash to."""

    url: str
    sha256: str
    filename: str
    size: int | None = None


def cache_path(cache: Path, ref: FileRef) -> Path:
    """Where the cache keeps ``ref``: below its sha256, under its (confined) file name."""
    if not _SHA256.fullmatch(ref.sha256):
        raise ArtifactError(f"{ref.filename}: sha256 {ref.sha256!r} is not 64 hex digits")
    return inside(cache / "files" / ref.sha256[:2] / ref.sha256, ref.filename,
                  what="locked file name")
