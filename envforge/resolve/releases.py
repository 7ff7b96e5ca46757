"""Releases of a project as an index lists its files, and which of them a target can use."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import InvalidVersion, Version


@dataclass(frozen=True)
class Release:
    """One version: the Python range its files declare and the day its first file came."""

    version: Version
    requires_python: str | None
    uploaded: date | None


def releases_from_files(files: Iterable[Mapping[str, Any]]) -> list[Release]:
    """Group PEP 691 file entries by version, yanked files left out; oldest version first."""
    found: dict[Version, Release] = {}
    for entry in files:
        if entry.get("yanked"):
            continue
        version = version_of(str(entry.get("filename", "")))
        if version is None:
            continue
        uploaded = upload_day(entry.get("upload-time"))
        requires = entry.get("requires-python") or None
        previous = found.get(version)
        if previous is not None:
            days = [d for d in (uploaded, previous.uploaded) if d is not None]
            uploaded = min(days) if days else None
            requires = requires if previous.requires_python is None else previous.requires_python
        found[version] = Release(version, requires, uploaded)
    return [found[v] for v in sorted(found)]


def supports(release: Release, python: str) -> bool:
    """Whether the release's files admit ``python``; an unreadable range admits it (as pip)."""
    if release.requires_python is None:
        return True
    try:
        return SpecifierSet(release.requires_python).contains(python, prereleases=True)
    except InvalidSpecifier:
        return True


def usable(releases: Iterable[Release], python: str, as_of: date | None) -> list[Release]:
    """The releases a resolver may pick for ``python`` with files uploaded by ``as_of``."""
    return [r for r in releases if supports(r, python)
            and (as_of is None or r.uploaded is None or r.uploaded <= as_of)]


def version_of(filename: str) -> Version | None:
    """The version a wheel's or an sdist's file name spells; None where it spells none."""
    try:
        if filename.endswith(".whl"):
            return parse_wheel_filename(filename)[1]
        return parse_sdist_filename(filename)[1]
    except (InvalidWheelFilename, InvalidSdistFilename, InvalidVersion):
        return None


def upload_day(value: Any) -> date | None:
    """The day of an index entry's ``upload-time``; None where it gives none."""
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).date()
    except ValueError:
        return None
