"""What init proposes from a repository's pins: the day to resolve as of, then the Python.

The era comes first (the newest exactly pinned release's upload day, or the last commit if
later): the Python is then the newest one released by that day that every exact pin has
files for, so a 2019 project gets 3.7, not a Python its pins never saw.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
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

from envforge.importers.legacy_names import python_end_day, python_release_day
from envforge.platforms import PLATFORMS, Platform
from envforge.resolve.releases import releases_from_files

CANDIDATES = ("3.7", "3.8", "3.9", "3.10", "3.11")  # the Pythons envforge's probe runs on
DEFAULT_PYTHON = "3.7"
# run by the probe too (allenai/bilm-tf's TensorFlow 1.2.1, specs/tf12-py36-cpu.toml), but
# proposed only where no candidate fits, on a host that has one: uv installs none
# (host/interpreters.UV_OLDEST), so such a spec is for hosts that have it
OLDER = ("3.6",)


@dataclass(frozen=True)
class Proposal:
    value: str | None
    why: str

    @property
    def minor(self) -> str:
        """A proposed Python's ``3.7`` (DEFAULT_PYTHON's where none is proposed)."""
        return ".".join((self.value or DEFAULT_PYTHON).split(".")[:2])


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


def line_files(files: Sequence[Mapping[str, Any]], line: str) -> list[Mapping[str, Any]]:
    """The files of every release of a line (``1.0.*``): one with files for a Python is
    enough for a pin of the line to install there."""
    wanted = SpecifierSet(f"=={line}")
    versions = {str(r.version) for r in releases_from_files(files) if r.version in wanted}
    return [entry for version in sorted(versions) for entry in release_files(files, version)]


def supports_python(files: Sequence[Mapping[str, Any]], minor: str) -> bool:
    """Whether a release can be installed on CPython ``minor``: a wheel for it (or a pure one),
    or, for a release without binary wheels, an sdist whose Requires-Python admits it."""
    wheel, binary = _wheel_for(files, minor)
    if wheel or binary:
        return wheel
    return any(not str(e.get("filename", "")).endswith(".whl")
               and _admits(e.get("requires-python"), minor) for e in files)


def _wheel_for(files: Sequence[Mapping[str, Any]], minor: str,
               platform: Platform | None = None) -> tuple[bool, bool]:
    """(a wheel installs on CPython ``minor``, the release has CPython-specific wheels), on
    ``platform`` where given: regex 2017.12.5's cp37 wheels are Windows' only, and on Linux
    the release is its sdist."""
    digits = minor.replace(".", "")
    binary = False
    native = None if platform is None else frozenset(PLATFORMS[platform].wheel_tags)
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
                return True, binary
            if native is not None and tag.platform not in native:
                continue
            if tag.interpreter.startswith("cp"):
                binary = True
                if tag.interpreter == f"cp{digits}" or (
                        tag.abi == "abi3" and int(tag.interpreter[3:] or 0) <= int(digits[1:])):
                    return True, binary
    return False, binary


def installs(files: Sequence[Mapping[str, Any]], minor: str, platform: Platform) -> bool:
    """Whether a wheel among ``files`` installs on CPython ``minor`` on ``platform``."""
    return _wheel_for(files, minor, platform)[0]


def _needs_repair(files: Sequence[Mapping[str, Any]], minor: str,
                  platform: Platform | None = None) -> str | None:
    """Why a release will not install on CPython ``minor`` from a wheel, when that is known:
    its compiled wheels are for other Pythons, its files refuse it, or its only wheels are
    Python 2's. An sdist-only release is taken as buildable (None)."""
    if not files:
        return "the index has no such release"
    wheel, binary = _wheel_for(files, minor, platform)
    if wheel:
        return None
    wheels = [str(e.get("filename", "")) for e in files
              if str(e.get("filename", "")).endswith(".whl")]
    if binary:
        tags = sorted({t.interpreter for w in wheels for t in parse_wheel_filename(w)[3]
                       if t.interpreter.startswith("cp")})
        where = "" if platform is None else f" on {platform}"
        return (f"its compiled wheels are for {', '.join(tags)}, none for "
                f"cp{minor.replace('.', '')}{where}")
    if files and not any(_admits(e.get("requires-python"), minor) for e in files):
        return f"its files require Python {files[0].get('requires-python')}"
    interpreters = {t.interpreter for w in wheels for t in parse_wheel_filename(w)[3]}
    if interpreters and all(i.startswith("py2") or i.startswith("cp2") for i in interpreters):
        return "its only wheels are Python 2's"
    return None


def repair_pin(listed: Sequence[Mapping[str, Any]], version: str, minor: str, *,
               failed: str | None = None,
               accept: Callable[[Sequence[Mapping[str, Any]]], bool] | None = None,
               platform: Platform | None = None) -> Proposal | None:
    """For ``name==version`` that has no wheel for CPython ``minor`` (and no sdist that is
    known to build there, or whose sdist ``failed`` to build, the reason given), the nearest
    later release that has one: of the same major first (the same minor, then the next
    minors); where no release of that major has one (it ended before the Python came: scipy
    0.x, matplotlib 1.x, pyzmq 14.x and Python 3.7), the earliest later release that has,
    said to be of another major; ``accept`` (a release's files) passing too, where given.
    None when the pin installs as it is; a Proposal with value None when no later release
    will do."""
    why = failed or _needs_repair(release_files(listed, version), minor, platform)
    if why is None:
        return None
    pinned = Version(version)
    later = sorted({r.version for r in releases_from_files(listed)
                    if r.version > pinned and not r.version.is_prerelease},
                   key=lambda v: (v.major != pinned.major, v))
    for candidate in later:
        files = release_files(listed, str(candidate))
        if not _wheel_for(files, minor, platform)[0] or (
                accept is not None and not accept(files)):
            continue
        if candidate.major == pinned.major:
            return Proposal(str(candidate), f"{why}; {candidate} is the nearest release with a "
                            f"wheel for Python {minor}")
        return Proposal(str(candidate), f"{why}; no later {pinned.major}.x release has a "
                        f"wheel for Python {minor} either: {candidate}, the earliest later "
                        "release with one (another major may change the API: check the code "
                        "against its release notes)")
    return Proposal(None, f"{why}, and no later release has a wheel for Python {minor}")


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
        return Proposal(commit_day.isoformat(), f"the repository's last commit, {commit_day}")
    if newest is not None:
        return Proposal(newest[0].isoformat(),
                        f"the newest pinned release, {newest[1]} ({newest[0]})")
    return Proposal(None, "no exact pin and no git history to date the project by")


def propose_python(pins: Mapping[str, Sequence[Mapping[str, Any]]], as_of: str | None,
                   stated: Sequence[tuple[str, str]], *,
                   older: Sequence[str] = ()) -> Proposal:
    """An exact version the repository states wins; else the newest candidate released by
    ``as_of`` that every exact pin supports; where none was released by then, the newest of
    the ``older`` Pythons this host has (``OLDER``) that was, keeping the day; else the
    newest any pins support; else, where no candidate has files for every pin, the newest
    ``older`` one that does, keeping the pins (davidsandberg/facenet's ``tensorflow==1.7``
    has cp36 wheels and none for cp37); else the one most pins have files for
    (``_most_pins``); else 3.7. A stated Python older than any envforge provides (3.5, 2.7)
    counts as at least its minor, said so."""
    for version, origin in stated:
        exact = version.removeprefix("==").rstrip(".*")
        if version.startswith("==") and exact[:4].rstrip(".") in (*CANDIDATES, *OLDER):
            return Proposal(exact, f"stated in {origin}")
    below = next(((v, o) for v, o in stated if _older_minor(v)), None)
    ranges = [SpecifierSet(v) for v, _ in stated if _valid(v) and not _older_minor(v)]
    if below is None:
        return _propose(pins, as_of, ranges, older)
    version, origin = below  # allenai/citeomatic's env.sh: conda create python==3.5.2
    proposal = _propose(pins, as_of, [*ranges, SpecifierSet(f">={_older_minor(version)}")],
                        older)
    return Proposal(proposal.value, f"{proposal.why}; {origin} states Python "
                    f"{version.removeprefix('==')}, older than any envforge provides: a newer "
                    "one is taken")


def _older_minor(version: str) -> str | None:
    """The minor of an exact Python (``==3.5.2``, conda's ``3.5``, ``2.7``) older than every
    one envforge provides (``OLDER``'s first): no environment of it; Python 3's code runs on
    the next as a rule, Python 2's once ported (the code scan names what does not parse)."""
    match = re.fullmatch(r"==([23])\.(\d+)(?:\.\d+)?(?:\.\*)?", version)
    if match is None:
        return None
    oldest = tuple(int(part) for part in OLDER[0].split("."))
    return f"{match[1]}.{match[2]}" if (int(match[1]), int(match[2])) < oldest else None


def _propose(pins: Mapping[str, Sequence[Mapping[str, Any]]], as_of: str | None,
             ranges: list[SpecifierSet], older: Sequence[str]) -> Proposal:
    """``propose_python``'s rules after a stated exact version, the ranges read."""
    era = date.fromisoformat(as_of) if as_of else None
    ok = [m for m in CANDIDATES
          if all(supports_python(files, m) for files in pins.values())
          and all(spec.contains(f"{m}.99") for spec in ranges)]
    fits = f" that every exact pin has files for ({', '.join(sorted(pins))})" if pins else ""
    if era is not None:
        dated = [m for m in ok if (python_release_day(m) or era) <= era]
        if dated:
            return Proposal(dated[-1], f"the newest Python released by {as_of}{fits}")
        before = _before_candidates(older, pins, ranges, era)
        if ok and before is not None:
            return Proposal(before[0], f"{before[1]}{fits}: none of {CANDIDATES[0]}-"
                            f"{CANDIDATES[-1]} was released by {as_of}, and this host has "
                            f"Python {before[0]}, so the repository's day is kept")
        if ok:
            return Proposal(ok[0], f"the oldest Python envforge proposes{fits}: none of "
                            f"{CANDIDATES[0]}-{CANDIDATES[-1]} was released by {as_of} (an "
                            "older Python is taken where the repository states it)")
    elif pins and ok:
        return Proposal(ok[-1], f"the newest Python{fits}")
    blockers = sorted(p for p, files in pins.items()
                      if not any(supports_python(files, m) for m in CANDIDATES))
    kept = _older_fitting(older, pins, ranges)
    if blockers and kept:
        return Proposal(kept[-1], f"the newest Python that every exact pin has files for: "
                        f"none of {CANDIDATES[0]}-{CANDIDATES[-1]} suits {', '.join(blockers)}, "
                        f"and this host has Python {kept[-1]}, so the pins are kept")
    most = _most_pins(pins, ranges, older, era)
    if most is not None:
        return most
    why = "nothing to date the project by" if not pins else \
        f"no Python {CANDIDATES[0]}-{CANDIDATES[-1]} suits every pin " \
        f"({', '.join(blockers) or 'they disagree'})"
    return Proposal(DEFAULT_PYTHON, f"envforge's legacy default; {why}")


def _most_pins(pins: Mapping[str, Sequence[Mapping[str, Any]]],
               ranges: Sequence[SpecifierSet], older: Sequence[str],
               era: date | None) -> Proposal | None:
    """Where no Python has files for every exact pin: the one (a candidate, or an ``OLDER``
    one this host has, released by the day and still served) that the most pins have files
    for (on a tie, the newest released by the day, else 3.7), keeping those pins (the others
    move to the nearest release with a wheel for it); None where none has files for any.
    oarriaga/face_classification pins TensorFlow 1.1.0, NumPy 1.12.1, h5py 2.7.0, OpenCV
    3.2.0.8 and pandas 0.19.1: four have cp36 wheels and none cp37, where 3.7 had moved every
    pin (TensorFlow to 1.13.1)."""
    if not pins:
        return None
    pythons = [m for m in (*OLDER, *CANDIDATES)
               if (m in CANDIDATES or older_of_the_day(m, older, era))
               and all(spec.contains(f"{m}.99") for spec in ranges)]
    counts = {m: sum(supports_python(files, m) for files in pins.values()) for m in pythons}
    best = max(counts.values(), default=0)
    if best == 0:
        return None
    tied = [m for m in pythons if counts[m] == best]  # the newest released by the day
    dated = [m for m in tied if era is None or (python_release_day(m) or era) <= era]
    minor = dated[-1] if dated else DEFAULT_PYTHON if DEFAULT_PYTHON in tied else tied[0]
    left = sorted(p for p, files in pins.items() if not supports_python(files, minor))
    return Proposal(minor, f"the Python most exact pins have files for ({best} of "
                    f"{len(pins)}): none suits every pin, and {', '.join(left)} "
                    f"{'moves' if len(left) == 1 else 'move'} to the nearest release with a "
                    f"wheel for {minor}")


def older_for_code(python: Proposal, pins: Mapping[str, Sequence[Mapping[str, Any]]],
                   stated: Sequence[tuple[str, str]], older: Sequence[str],
                   why: str, as_of: str | None) -> Proposal | None:
    """The newest of the ``older`` Pythons this host has, for code that a candidate breaks
    (``why``: a generator's ``raise StopIteration``, a RuntimeError from 3.7 by PEP 479),
    where every exact pin has files for it, the repository's stated ranges admit it and the
    day (``as_of``) is not past its end of life (after it, the day's releases stop having its
    wheels); None where the repository states its Python exactly (its word wins) or none
    fits."""
    if python.why.startswith("stated in") or python.value not in CANDIDATES:
        return None
    day = date.fromisoformat(as_of) if as_of else None
    kept = [m for m in _older_fitting(older, pins,
                                      [SpecifierSet(v) for v, _ in stated if _valid(v)])
            if older_of_the_day(m, older, day)]
    if not kept:
        return None
    return Proposal(kept[-1], f"{why}: Python {kept[-1]}, which this host has, runs it as "
                    f"written (proposed before: {python.value}, {python.why})")


def _still_served(minor: str, day: date | None) -> bool:
    """Whether Python ``minor`` had not reached its end of life by ``day`` (none known: it
    had not): after it, the day's releases stop shipping its wheels."""
    end = python_end_day(minor)
    return day is None or end is None or end >= day


def _before_candidates(older: Sequence[str], pins: Mapping[str, Sequence[Mapping[str, Any]]],
                       ranges: Sequence[SpecifierSet], era: date) -> tuple[str, str] | None:
    """For a day before every candidate's release: the newest ``OLDER`` Python this host has
    that was released by then, with why; None where it has none that fits. The day's own
    releases then stay (a 2017 Keras repository keeps Keras 2.0 and TensorFlow 1.4, where
    Python 3.7 moved its day to 2018-06-27 and its packages past it). A day before 3.6 too
    keeps 3.7 as before: 3.6 would move the day to its own release, when few wheels for it
    had come, and the widened days stop short of releases a dependency needs (Newmu's
    dcgan_code of 2016-05: every pandas of 2017-2018 has metadata today's resolvers refuse,
    and the four widened days ended in 2018-12)."""
    kept = [m for m in _older_fitting(older, pins, ranges) if older_of_the_day(m, older, era)]
    return (kept[-1], f"the newest Python released by {era.isoformat()}") if kept else None


def older_of_the_day(minor: str, older: Sequence[str], era: date | None) -> bool:
    """An ``OLDER`` Python this host has (``older``), released by the day and still served
    on it (on 3.6's own release day few wheels for it had come; after its end of life the
    day's releases stop shipping its wheels)."""
    return minor in older and _still_served(minor, era) and (
        era is None or (python_release_day(minor) or era) <= era)


def _older_fitting(older: Sequence[str], pins: Mapping[str, Sequence[Mapping[str, Any]]],
                   ranges: Sequence[SpecifierSet]) -> list[str]:
    """The ``OLDER`` Pythons this host has (``older``) that every exact pin has files for
    and every stated range admits, oldest first."""
    return [m for m in OLDER if m in older
            and all(supports_python(files, m) for files in pins.values())
            and all(spec.contains(f"{m}.99") for spec in ranges)]


def _valid(text: str) -> bool:
    try:
        SpecifierSet(text)
    except InvalidSpecifier:
        return False
    return True


def era_for_python(as_of: Proposal, minor: str) -> Proposal:
    """A day before Python ``minor`` was released moved to its release day: no release
    uploaded earlier has a wheel for it, and the resolver would build old sdists (minutes)
    to find nothing that installs."""
    released = python_release_day(minor)
    if as_of.value is None or released is None or date.fromisoformat(as_of.value) >= released:
        return as_of
    return Proposal(released.isoformat(), f"{as_of.why}, moved to Python {minor}'s release "
                    f"day ({released}): nothing uploaded before it has a wheel for it")


def nearest_allowed(listed: Sequence[Mapping[str, Any]], version: str, minor: str,
                    allowed: SpecifierSet, platform: Platform | None = None) -> str | None:
    """The lowest release ``allowed`` admits that has a wheel for CPython ``minor`` (final
    releases, nearest to ``version`` first): where another pin's dependency rules the
    project's own pin out."""
    pinned = Version(version)
    admitted = {r.version for r in releases_from_files(listed)
                if not r.version.is_prerelease and allowed.contains(r.version)}
    order = sorted(v for v in admitted if v >= pinned) + \
        sorted((v for v in admitted if v < pinned), reverse=True)
    return next((str(v) for v in order
                 if _wheel_for(release_files(listed, str(v)), minor, platform)[0]), None)
