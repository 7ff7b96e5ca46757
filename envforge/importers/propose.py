"""What init proposes from a repository's pins: the day to resolve as of, then the Python.

The era comes first (the newest exactly pinned release's upload day, or the last commit if
later): the Python is then the newest one released by that day that every exact pin has
files for, so a 2019 project gets 3.7, not a Python its pins never saw.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.tags import Tag
from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import Version

from envforge.importers.legacy_names import python_release_day
from envforge.resolve.releases import releases_from_files

CANDIDATES = ("3.7", "3.8", "3.9", "3.10", "3.11")  # the Pythons envforge's probe runs on
DEFAULT_PYTHON = "3.7"


@dataclass(frozen=True)
class Proposal:
    value: str | None
    why: str


def release_files(files: Sequence[Mapping[str, Any]], version: str) -> list[Mapping[str, Any]]:
    """The files of one release, from a project's PEP 691 file list."""
    wanted = Version(version)
    found = []
    for entry in files:
        filename = str(entry.get("filename", ""))
        try:
            got = parse_wheel_filename(filename)[1] if filename.endswith(".whl") \
                else parse_sdist_filename(filename)[1]
        except (InvalidWheelFilename, InvalidSdistFilename):
            continue
        if got == wanted and not entry.get("yanked"):
            found.append(entry)
    return found


def supports_python(files: Sequence[Mapping[str, Any]], minor: str) -> bool:
    """Whether a release can be installed on CPython ``minor``: a wheel for it (or a pure one),
    or, for a release without binary wheels, an sdist whose Requires-Python admits it."""
    digits = minor.replace(".", "")
    binary = False
    for entry in files:
        if not _admits(entry.get("requires-python"), minor):
            continue
        filename = str(entry.get("filename", ""))
        if not filename.endswith(".whl"):
            continue
        tags: frozenset[Tag] = parse_wheel_filename(filename)[3]
        for tag in tags:
            if tag.abi == "none" and tag.platform == "any" and tag.interpreter in (
                    "py3", f"py{digits}", f"cp{digits}"):
                return True
            if tag.interpreter.startswith("cp"):
                binary = True
                if tag.interpreter == f"cp{digits}" or (
                        tag.abi == "abi3" and int(tag.interpreter[3:] or 0) <= int(digits[1:])):
                    return True
    if binary:
        return False
    return any(not str(e.get("filename", "")).endswith(".whl")
               and _admits(e.get("requires-python"), minor) for e in files)


def _admits(requires: Any, minor: str) -> bool:
    if not requires:
        return True
    try:
        return SpecifierSet(str(requires)).contains(f"{minor}.99", prereleases=True)
    except InvalidSpecifier:
        return True


def propose_as_of(pins: Mapping[str, Sequence[Mapping[str, Any]]],
                  commit_day: date | None) -> Proposal:
    """The newest pinned release's upload day, or the last commit's when later."""
    newest: tuple[date, str] | None = None
    for pin, files in pins.items():
        releases = releases_from_files(files)
        day = releases[0].uploaded if releases else None
        if day is not None and (newest is None or day > newest[0]):
            newest = (day, pin)
    if commit_day is not None and (newest is None or commit_day > newest[0]):
        return Proposal(commit_day.isoformat(), "the repository's last commit")
    if newest is not None:
        return Proposal(newest[0].isoformat(), f"the newest pinned release, {newest[1]}")
    return Proposal(None, "no exact pin and no git history to date the project by")


def propose_python(pins: Mapping[str, Sequence[Mapping[str, Any]]], as_of: str | None,
                   stated: Sequence[tuple[str, str]]) -> Proposal:
    """An exact version the repository states wins; else the newest candidate released by
    ``as_of`` that every exact pin supports; else the newest any pins support; else 3.7."""
    for version, origin in stated:
        exact = version.removeprefix("==").rstrip(".*")
        if version.startswith("==") and exact[:4].rstrip(".") in (*CANDIDATES, "3.6"):
            return Proposal(exact, f"stated in {origin}")
    ranges = [SpecifierSet(v) for v, _ in stated if _valid(v)]
    era = date.fromisoformat(as_of) if as_of else None
    ok = [m for m in CANDIDATES
          if all(supports_python(files, m) for files in pins.values())
          and all(spec.contains(f"{m}.99") for spec in ranges)]
    fits = f" that every exact pin has files for ({', '.join(sorted(pins))})" if pins else ""
    if era is not None:
        dated = [m for m in ok if (python_release_day(m) or era) <= era]
        if dated:
            return Proposal(dated[-1], f"the newest Python released by {as_of}{fits}")
        if ok:
            return Proposal(ok[0], f"the oldest Python{fits}; none was released by {as_of}")
    elif pins and ok:
        return Proposal(ok[-1], f"the newest Python{fits}")
    blockers = sorted(p for p, files in pins.items()
                      if not any(supports_python(files, m) for m in CANDIDATES))
    why = "nothing to date the project by" if not pins else \
        f"no Python {CANDIDATES[0]}-{CANDIDATES[-1]} suits every pin " \
        f"({', '.join(blockers) or 'they disagree'})"
    return Proposal(DEFAULT_PYTHON, f"envforge's legacy default; {why}")


def _valid(text: str) -> bool:
    try:
        SpecifierSet(text)
    except InvalidSpecifier:
        return False
    return True
