"""A widened day narrowed to the packages that needed it.

When the repository's day does not resolve and a later one does (Keras 2.2.4's day has no
TensorFlow wheel for Python 3.7: TensorFlow's first came months later), the later day
moves every package with it: PyYAML 5.1, whose ``yaml.load`` refuses what Keras 2.2.4
writes, came with TensorFlow. uv's ``--exclude-newer-package`` gives a later day to some
packages only (``[pypi] as_of_packages``). Which: the resolver names them. Each failure at
the repository's day names the packages it could not fit; those of them the later day's
resolution took at a release made after the repository's day, and what they need that the
day has no release of, each get the day after their first release that installs from a
wheel came (TensorFlow 1.13.1's), and the draft is resolved again, until it resolves or
names nothing new (the widened day then stays for every package).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import date, timedelta
from typing import TYPE_CHECKING, Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from envforge.importers.legacy_names import without_refused_metadata
from envforge.importers.propose import Proposal, installs
from envforge.resolve.pypi import BUILD_BACKENDS, exact_names
from envforge.resolve.releases import (
    Release,
    releases_from_files,
    upload_day,
    usable,
    version_of,
)

if TYPE_CHECKING:
    from envforge.importers.render import Draft
    from envforge.lockfile import LockedPypiFile, PlatformLock
    from envforge.platforms import Platform

NARROW_STEPS = 8  # resolutions tried before the widened day is kept for every package (keras-gcn
# of 2018-02 needs 7: TensorFlow, Keras, grpcio, PyYAML, then astor, held back to a release
# Python 3.7 does not parse)


@dataclass(frozen=True)
class IndexView:
    """What narrowing reads of the index: when a version came (``released``), whether a
    release made by a day satisfies a requirement on the target (``fits``), a locked
    file's Requires-Dist (``requires``, None where unreadable)."""

    released: Callable[[str, str], date | None]
    fits: Callable[[Requirement, date], bool]
    requires: Callable[[LockedPypiFile], Sequence[str] | None]
    markers: Mapping[str, str]  # PEP 508's variables on the target
    # the first day after a day on which a release satisfying a requirement installs from a
    # wheel on the target, and that release's Requires-Dist (None where unreadable)
    first: Callable[[Requirement, date], tuple[date, Sequence[str] | None] | None] = \
        lambda _requirement, _day: None
    # whether a release made by a day satisfying a requirement installs from a wheel on the
    # target (where none does, the resolver builds an sdist for its metadata)
    wheel_by: Callable[[Requirement, date], bool] = lambda _requirement, _day: True


def mentioned(text: str, names: Iterable[str]) -> list[str]:
    """The normalized ``names`` the resolver's ``text`` says, in the order it first says
    them (``tensorflow-estimator>=1.13.0`` says ``tensorflow-estimator``)."""
    wanted = {canonicalize_name(n) for n in names}
    said = (canonicalize_name(word) for word in
            re.findall(r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?", text))
    return [n for n in dict.fromkeys(said) if n in wanted]


def narrow(draft: Draft, locked: PlatformLock, *, start: date, widened: date, failure: str,
           attempt: Callable[[Draft], PlatformLock | str], view: IndexView,
           unbuilt: Callable[[PlatformLock], str | None] = lambda _lock: None,
           slow: bool = False) -> tuple[Draft, PlatformLock] | None:
    """``draft`` at ``start`` with only some packages given a later day, and its lock; None
    when that does not resolve. Given it: each package ``failure`` (then each next failure)
    names that the widened resolution (``locked``) took at a release made after ``start``;
    each dependency of one that no release made by ``start`` satisfies (TensorFlow 1.13's
    ``tensorboard>=1.13.0,<1.14.0``; its ``numpy>=1.13.3`` keeps ``start``); and each
    package ``start`` gives only as an sdist where the widened day has a wheel (Python 3.7's
    release day has grpcio's and scikit-learn's sdists, built for minutes, if at all), or
    whose sdist there does not build (``unbuilt`` names one: PyYAML 3.12's C predates
    Python 3.7). Each takes the day after the first release that installs from a wheel
    there came (a 2019-01 repository's ``tensorflow<2`` gets 1.13.1, the first with a
    Python 3.7 wheel, not ``widened``'s 1.15), ``widened`` where that is later or unknown.
    ``attempt`` resolves a draft: its lock, or why not. Where ``start`` ran out of time
    (``slow``: the failure names nothing), the first packages are those it gives only as
    sdists, which the resolver builds for their metadata, where the widened lock has a wheel
    (lisa-lab/DeepLearningTutorials: Python 3.7's release day has no SciPy wheel for it)."""
    files: dict[str, LockedPypiFile] = {canonicalize_name(f.name): f for f in locked.pypi}
    exempt = {*BUILD_BACKENDS,  # already taken whatever the day, as exact pins are
              *exact_names(f.requirement for f in draft.repository.imported.requirements)}
    wanted: dict[str, Requirement] = {canonicalize_name(r.name): r for r in _requirements(draft)}
    later = widened.isoformat()
    days: dict[str, str] = {}
    new = _named(failure, files, days, exempt, view, start)
    if not new and slow:
        new = sorted(n for n, f in files.items() if f.kind == "wheel" and n not in exempt
                     and not view.wheel_by(wanted.get(n, Requirement(n)), start))
    if not new:
        return None
    for _ in range(NARROW_STEPS):
        _give([wanted.get(n, Requirement(n)) for n in new], days, files, exempt, view,
              start, widened)
        trial = replace(draft, as_of=Proposal(start.isoformat(), draft.as_of.why),
                        as_of_packages=dict(sorted(days.items())))
        result = attempt(trial)
        if isinstance(result, str):
            new = _named(result, files, days, exempt, view, start)
            if not new:  # a first release's day too early for the rest: the widened day
                early = [n for n in mentioned(result, days) if days[n] != later]
                if not early:
                    return None
                days.update(dict.fromkeys(early, later))
            continue
        new = sorted(_sdists(result) - _sdists(locked) - days.keys() - exempt)
        if new:
            continue
        failed = unbuilt(result)
        if failed is None:
            return trial, result
        name = canonicalize_name(failed)
        if name in exempt or days.get(name) == later:
            return None
        if name in days:
            days[name] = later
        else:
            new = [name]
    return None


def _requirements(draft: Draft) -> list[Requirement]:
    found = []
    for f in draft.repository.imported.requirements:
        try:
            found.append(Requirement(f.requirement))
        except InvalidRequirement:
            continue
    return found


def _named(failure: str, files: Mapping[str, LockedPypiFile], days: Mapping[str, str],
           exempt: set[str], view: IndexView, start: date) -> list[str]:
    """The packages ``failure`` names that the widened lock took at a later release."""
    return [n for n in mentioned(failure, files) if n not in days and n not in exempt
            and _after(view.released(n, files[n].version), start)]


def _sdists(locked: PlatformLock) -> set[str]:
    return {canonicalize_name(f.name) for f in locked.pypi if f.kind == "sdist"}


def _give(named: Sequence[Requirement], days: dict[str, str],
          files: Mapping[str, LockedPypiFile], exempt: set[str], view: IndexView,
          start: date, widened: date) -> None:
    """A day for each of ``named`` and for each dependency of theirs (and of those, on) that
    nothing made by ``start`` satisfies: the day after the first release that installs came
    (whose dependencies are then read), else ``widened`` (the widened lock's release's). A
    dependency already given an earlier day that does not satisfy it moves on
    (tensorflow-wavenet's tensorflow-estimator, named alone first and given 1.10's day, where
    TensorFlow 1.13.1 needs ``>=1.13.0``)."""
    queue: list[tuple[str, Sequence[str] | None]] = []
    for requirement in named:
        name = canonicalize_name(requirement.name)
        if name in days or name in exempt:
            continue
        days[name], needs = _day(requirement, name, files, view, start, widened)
        queue.append((name, needs))
    while queue:
        _name, needs = queue.pop()
        for line in needs or ():
            try:
                requirement = Requirement(line)
            except InvalidRequirement:
                continue
            if requirement.marker is not None and \
                    not requirement.marker.evaluate({**view.markers, "extra": ""}):
                continue
            name = canonicalize_name(requirement.name)
            if name in exempt or view.fits(requirement, start):
                continue
            given = days.get(name)  # a day given for another requirement of it may be early
            if given is not None and view.fits(requirement, date.fromisoformat(given)):
                continue
            day, more = _day(requirement, name, files, view, start, widened)
            if given is None or day > given:
                days[name] = day
                queue.append((name, more))


def _day(requirement: Requirement, name: str, files: Mapping[str, LockedPypiFile],
         view: IndexView, start: date, widened: date) -> tuple[str, Sequence[str] | None]:
    """A package's day and the Requires-Dist of the release it is for (``_give``): the day
    after its first release since ``start`` that installs, where that came before
    ``widened`` or before the release the widened lock took (which had a later day of its
    own: every pandas before 0.25.0, of 2019-07, has metadata the resolver refuses)."""
    first = view.first(requirement, start)
    taken = view.released(name, files[name].version) if name in files else None
    bound = max(widened, taken + timedelta(days=1)) if taken is not None else widened
    if first is not None and start < first[0] < bound:
        return (first[0] + timedelta(days=1)).isoformat(), first[1]
    return widened.isoformat(), view.requires(files[name]) if name in files else None


def _after(day: date | None, start: date) -> bool:
    """Whether a release came after ``start`` (an unknown day: it may have)."""
    return day is None or day > start


def index_view(lookup: Callable[[str, str], Sequence[Mapping[str, Any]] | None], index: str,
               python: str, platform: Platform) -> IndexView:
    """``IndexView`` from an index's file lists (``lookup(index, name)``, each read once)
    and its wheels' PEP 658 metadata."""
    from envforge.platforms import PLATFORMS
    from envforge.resolve.pypi_index import wheel_requirements

    minor = ".".join(python.split(".")[:2])

    @functools.cache
    def listed(name: str) -> Sequence[Mapping[str, Any]] | None:
        # a release whose metadata the resolver refuses is none it can take
        files = lookup(index, name)
        return None if files is None else without_refused_metadata(name, files)

    @functools.cache
    def releases(name: str) -> list[Release] | None:
        files = listed(name)
        return None if files is None else releases_from_files(files)

    def released(name: str, version: str) -> date | None:
        try:
            wanted = Version(version)
        except InvalidVersion:
            return None
        return next((r.uploaded for r in releases(name) or () if r.version == wanted), None)

    def fits(requirement: Requirement, day: date) -> bool:
        return any(requirement.specifier.contains(r.version, prereleases=True)
                   for r in usable(releases(requirement.name) or (), python, day))

    def requires(file: LockedPypiFile) -> Sequence[str] | None:
        return wheel_requirements(file.url, file.size) if file.kind == "wheel" else None

    def first(requirement: Requirement, after: date) -> tuple[date, Sequence[str] | None] | None:
        found: tuple[date, Mapping[str, Any]] | None = None
        for entry in listed(requirement.name) or ():
            version = version_of(str(entry.get("filename", "")))
            day = upload_day(entry.get("upload-time"))
            if version is None or day is None or day <= after or entry.get("yanked") or \
                    version.is_prerelease or not requirement.specifier.contains(version) or \
                    (found is not None and found[0] <= day) or \
                    not installs([entry], minor, platform):
                continue
            found = (day, entry)
        if found is None:
            return None
        size = found[1].get("size")
        return found[0], wheel_requirements(str(found[1].get("url", "")),
                                            size if isinstance(size, int) else None)

    def wheel_by(requirement: Requirement, day: date) -> bool:
        return any(_wheel(entry, requirement) and (upload_day(entry.get("upload-time"))
                                                   or day) <= day
                   for entry in listed(requirement.name) or ())

    def _wheel(entry: Mapping[str, Any], requirement: Requirement) -> bool:
        name = str(entry.get("filename", ""))
        version = version_of(name)
        return name.endswith(".whl") and version is not None and not entry.get("yanked") \
            and requirement.specifier.contains(version, prereleases=True) \
            and installs([entry], minor, platform)

    return IndexView(released, fits, requires, PLATFORMS[platform].markers(python), first,
                     wheel_by)

