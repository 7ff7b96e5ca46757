"""Settling init's draft on a variant that locks, within a time bound.

The proposed day is kept: when the draft does not resolve, git dependencies the resolver
cannot fetch are left out and the day is widened ``WIDEN_MONTHS`` at a time (``WIDEN_STEPS``
at most), each trial given a share of the time; a failure is shown as the resolver's words,
never its command line. Past the deadline the resolver (and the builds it started) are ended
by their ids.
"""

from __future__ import annotations

import calendar
import functools
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import date, timedelta
from typing import TYPE_CHECKING, Any, TypeVar

from packaging.requirements import Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from envforge.app.packagedays import index_view, narrow
from envforge.app.packs import installed_packs
from envforge.app.trialbuild import BuildFailure, Trial, sdists, trial_builds
from envforge.errors import CompatibilityError, EnvforgeError
from envforge.host import proc
from envforge.importers import Found, exact_version
from envforge.importers.debian import library_rows
from envforge.importers.legacy_names import kept_yanked, legacy_names
from envforge.importers.localbuilds import local_label, public_pins, public_version, sources
from envforge.importers.propose import DEFAULT_PYTHON, Proposal, nearest_allowed, repair_pin
from envforge.importers.pyfiles import archive_release
from envforge.importers.render import Draft, render_spec
from envforge.knowledge.models import in_range
from envforge.resolve.pypi import UndeclaredBuildError, undeclared_import
from envforge.resolve.pypi_explain import UnknownProjectError
from envforge.spec import PYPI_SIMPLE, Platform, parse_spec

if TYPE_CHECKING:
    from envforge.lockfile import PlatformLock

Say = Callable[[str], None]
Lookup = Callable[[str, str], "Sequence[Mapping[str, Any]] | None"]

WIDEN_MONTHS = 6  # how far each step moves a day that does not resolve
WIDEN_STEPS = 4  # at most two years past the repository's own day
TRY_S = 20.0  # the least time one trial resolution gets before the next day is tried
MAX_REPAIRS = 3  # pins moved for a failed sdist build, per settling
MAX_BUILD_NEEDS = 8  # undeclared build imports given to sdists' builds, per settling
REASON_CHARS = 600  # a resolver's reason is cut there: a spec comment, one output line


class DraftTimeoutError(EnvforgeError):
    """init's time bound ran out before the draft was settled."""

def _left(deadline: float | None) -> float | None:
    return None if deadline is None else max(0.0, deadline - time.monotonic())

def try_lock(text: str, source: str, platform: Platform) -> PlatformLock | str:
    """Resolve the draft for ``platform`` once, as lock does: the platform's lock, else the
    reason it does not lock (the resolver's own words, never its command line). What no
    other day changes is raised: the spec's own compatibility rules (CompatibilityError, as
    lock checks them before resolving: DeepMoji's Keras with no TensorFlow named) and a
    requirement whose project the index lacks (UnknownProjectError)."""
    from envforge.app.lockplatform import lock_platform
    from envforge.compat import ensure_compatible
    from envforge.resolve.pypi import UnsatisfiableError
    from envforge.resolve.pypi_explain import explain_unsatisfiable

    spec = parse_spec(text, source=source, registry=installed_packs())
    ensure_compatible(spec, installed_packs())
    try:
        return lock_platform(spec.for_platform(platform), installed_packs())
    except UndeclaredBuildError:
        raise  # settle gives the build what it imports, the same day again
    except UnsatisfiableError as exc:
        explained = explain_unsatisfiable(spec, exc)
        if isinstance(explained, UnknownProjectError):
            raise explained from None  # settle stops: no other day helps
        return trim(str(explained))
    except EnvforgeError as exc:
        return failure_reason(str(exc))


def failure_reason(message: str) -> str:
    """A resolver failure without its command line and temporary paths: what failed, then
    what the tool said (uv's ``error:``/``Caused by:`` lines), on one line, trimmed."""
    match = re.search(r"^(.*?) exited -?\d+:\n(.*)$", message, re.DOTALL)
    if match is None:
        return trim(message)
    head, said = match.groups()
    what = head.split(" failed: ", 1)[0] + " failed" if " failed: " in head else "it failed"
    lines = [ln.strip() for ln in said.splitlines()
             if ln.strip() and not ln.strip().startswith("hint:")]
    first = next((i for i, ln in enumerate(lines) if ln.startswith("error:")), None)
    # without uv's error: line (a long build log's tail), the log's last lines say most
    kept = lines[first:] if first is not None else lines[-_TAIL_LINES:]
    return trim(f"{what}: {' '.join(kept)}")


_TAIL_LINES = 4


def trim(text: str) -> str:
    """One line of at most REASON_CHARS, temporary folders named as what they hold."""
    text = re.sub(r"(file://)?/\S*?envforge-[a-z]+-[^/\s]+/", "", text)
    text = re.sub(r"\s+", " ", text).strip()
    return text if len(text) <= REASON_CHARS else text[:REASON_CHARS - 1].rstrip() + "…"


def widen(day: date, months: int = WIDEN_MONTHS) -> date:
    """``day`` moved ``months`` later (the last day of a shorter month where needed)."""
    month = day.month - 1 + months
    year, month = day.year + month // 12, month % 12 + 1
    return date(year, month, min(day.day, calendar.monthrange(year, month)[1]))


@dataclass(frozen=True)
class Settled:
    """The draft as written, its text, why it does not resolve (None: it does), and what its
    sdists' trial builds found (None: not tried, as it does not resolve)."""

    draft: Draft
    text: str
    failure: str | None
    trial: Trial | None = None


def settle(draft: Draft, source: str, platform: Platform, *, say: Say = lambda _: None,
           deadline: float | None = None, today: date | None = None,
           lookup: Lookup | None = None) -> Settled:
    """The draft resolved as proposed; when it does not, git and URL dependencies the resolver
    cannot fetch are left out, an exact pin whose sdist does not build moves to a release
    with a wheel (``lookup`` lists the index's files; MAX_REPAIRS at most), and the day is
    widened by WIDEN_MONTHS up to WIDEN_STEPS times (never past ``today``) until it
    resolves. What resolves only as an sdist is then built as apply will build it
    (``trialbuild``): a pin whose build fails moves the same way, a requirement that cannot
    move is left out, with the build's reason, and the draft resolved again. The day is never
    dropped: when no step resolves, the proposed one stays, with the days tried and the
    reason. Past ``deadline`` the draft is returned as it stands, with the time bound as its
    failure."""
    start = date.fromisoformat(draft.as_of.value) if draft.as_of.value else None
    days: list[date | None] = [start]
    while start is not None and len(days) <= WIDEN_STEPS and \
            widen(start, WIDEN_MONTHS * len(days)) <= (today or date.today()):
        days.append(widen(start, WIDEN_MONTHS * len(days)))
    gits = sorted(f.requirement for f in draft.repository.imported.requirements
                  if " @ " in f.requirement and not f.requirement.split(" @ ", 1)[1].strip()
                  .startswith("file:"))
    tries = len(days) + (1 if gits else 0)
    repairs = 0
    tried: list[str] = []
    failure: str | None = None
    candidate = draft
    attempt, position = 0, 0
    newest: Proposal | None = None  # the Python proposed, while its fallback is tried
    start_failure: str | None = None  # why the proposed day did not resolve
    start_slow = False  # it ran out of its share: building that day's sdists, not a conflict
    while position < len(days):
        day = days[position]
        attempt += 1
        if day is not None:  # a repair's retry of the same day keeps its packages' days
            again = candidate.as_of.value == day.isoformat()
            candidate = replace(candidate, as_of=Proposal(day.isoformat(), draft.as_of.why),
                                as_of_tried=tuple(tried),
                                as_of_packages=candidate.as_of_packages if again else {},
                                package_days_why=candidate.package_days_why if again else {},
                                as_of_widened=None)
        what = f"as of {day.isoformat()}" if day else "the draft"
        say(f"resolving {what} (try {attempt} of {tries})…")
        text = render_spec(candidate, installed_packs())
        share = _share(deadline, tries - attempt + 1)
        locked: PlatformLock | str | None = None
        timed_out = False
        try:
            locked = _bounded(functools.partial(try_lock, text, source, platform),
                              None if share is None else time.monotonic() + share)
            failure = locked if isinstance(locked, str) else None
        except CompatibilityError as exc:
            failure = trim(str(exc))  # no other day or left-out URL changes it; a pack's
            repaired = None if repairs >= MAX_REPAIRS else \
                _repair_compat(candidate, exc, lookup)  # repair (a release it pairs) may
            if repaired is None:
                break
            say(repaired[1])
            candidate, repairs, tries = repaired[0], repairs + 1, tries + 1
            continue  # the same day again, with the pin moved
        except UnknownProjectError as exc:
            failure = trim(str(exc))  # no other day, repair or left-out URL changes it
            break
        except UndeclaredBuildError as exc:
            given = _build_needs(candidate, exc.project, exc.version, exc.needs)
            if given is not None:
                say(given[1])
                candidate, tries = given[0], tries + 1
                continue  # the same day again, the build given what it imports
            # named already, or too many: the pin moves as for any sdist that does not build
            failure = f"Failed to build `{exc.project}=={exc.version}`: {exc}"
        except DraftTimeoutError:
            if deadline is not None and time.monotonic() >= deadline - 0.5:
                failure = f"init's time bound ran out while resolving {what} (try {attempt} " \
                          f"of {tries}); give more with --timeout, or lock the spec as written"
                break
            timed_out = True
            failure = f"no answer {what} within {share:.0f} s, its share of --timeout (where " \
                      "that day's releases have no wheel for the Python, the resolver builds " \
                      "their sdists)"
        if locked is not None and not isinstance(locked, str):
            if start is not None and day is not None and day != start and start_failure:
                narrowed = _narrowed(candidate, locked, start, day, start_failure, source,
                                     platform, deadline, lookup, say, slow=start_slow)
                if narrowed is not None:  # its comment says why the proposed day failed
                    candidate = replace(narrowed[0], as_of_failure=start_failure,
                                        as_of_widened=day.isoformat())
                    locked = narrowed[1]
                    text = render_spec(candidate, installed_packs())
            trial = _trial(locked, platform, deadline, say)
            unparsed = _unparsed(candidate, locked, platform, deadline, lookup, say) \
                if trial.failed is None and repairs < MAX_REPAIRS else None
            if unparsed is not None:
                say(unparsed[1])
                candidate, repairs, tries = unparsed[0], repairs + 1, tries + 1
                continue  # the same day again, the pin moved to a release that parses
            resolved: dict[str, str] = {canonicalize_name(f.name): f.version
                                        for f in locked.pypi}
            capped = _capped_for_dependencies(candidate, resolved) \
                if trial.failed is None and repairs < MAX_REPAIRS else None
            if capped is not None:
                say(capped[1])
                candidate, repairs, tries = capped[0], repairs + 1, tries + 1
                continue  # the same day again, the removing release kept out
            if trial.failed is None:
                done = candidate if tried else replace(candidate, as_of_failure=None)
                if library_rows(resolved):  # [debian] gains what their wheels load
                    done = replace(done, resolved=resolved)
                    text = render_spec(done, installed_packs())
                return Settled(done, text, None, trial)
            given = _era_backend(candidate, trial.failed)
            for needs in _failed_build_needs(trial.failed):
                given = given or _build_needs(candidate, trial.failed.name,
                                              trial.failed.version, needs)
            if given is not None:  # its metadata needed it not; its build does
                say(given[1])
                candidate, tries = given[0], tries + 1
                continue
            changed = None if repairs >= MAX_REPAIRS else _unbuilt(candidate, trial.failed,
                                                                   lookup)
            if changed is not None:
                say(changed[1])
                candidate, repairs, tries = changed[0], repairs + 1, tries + 1
                continue  # the same day again, the pin moved or the requirement left out
            failed = trial.failed
            failure = trim(f"{failed.name}=={failed.version} resolves to an sdist that does "
                           f"not build: {failed.reason}")
        assert failure is not None
        candidate = replace(candidate, as_of_failure=failure)
        held = {f.requirement for f in candidate.repository.imported.requirements}
        if gits and not any(g in candidate.left_out or g not in held for g in gits) and \
                _blames_url(failure, gits):
            candidate = _without_urls(candidate, gits, failure)
            continue  # the same day again, without them
        unreachable = _unreachable_sources(candidate, failure)
        if unreachable:
            say(f"left out {', '.join(unreachable)}: the resolver cannot reach it")
            candidate, tries = _without_sources(candidate, unreachable, failure), tries + 1
            continue  # the same day again, from the index alone where none is left
        refused = _refused_metadata_day(candidate, failure, day)
        if refused is not None:  # the resolver backtracked past releases it refuses
            say(refused[1])
            candidate, tries = refused[0], tries + 1
            continue
        era = _era_backend_of(candidate, failure)
        if era is not None:  # the resolver's build of an sdist's metadata failed so
            say(era[1])
            candidate, tries = era[0], tries + 1
            continue
        repaired = None if repairs >= MAX_REPAIRS else (
            (_repair_too_new(candidate, failure) if position == 0 else None)
            or _repair_build(candidate, failure, lookup)
            or _repair_conflict(candidate, failure, lookup)
            or _repair_deleted(candidate, failure))
        if repaired is not None:
            say(f"{repaired[1]}")
            candidate, repairs, tries = repaired[0], repairs + 1, tries + 1
            continue  # the same day again, with the pin moved
        if position == 0 and candidate.python_fallback is not None:
            say(f"Python {candidate.python.value} did not resolve as of the proposed day; "
                f"trying {candidate.python_fallback.value}")
            newest, tries = candidate.python, tries + 1
            start_failure = failure  # the Python proposed: the one a widened day keeps
            start_slow = timed_out
            candidate = replace(candidate, python=candidate.python_fallback,
                                python_fallback=None)
            continue  # the same day again, with the older Python
        if newest is not None:  # the older Python did not resolve either: the newest, widened
            candidate, newest = replace(candidate, python=newest), None
        if day is not None:
            tried.append(day.isoformat())
        if position == 0 and start_failure is None:
            start_failure, start_slow = failure, timed_out
        position += 1
    if start is not None:
        candidate = replace(candidate, as_of=draft.as_of, as_of_tried=tuple(tried),
                            as_of_failure=failure)
    return Settled(candidate, render_spec(candidate, installed_packs()), failure)


def _narrowed(candidate: Draft, locked: PlatformLock, start: date, widened: date,
              failure: str, source: str, platform: Platform, deadline: float | None,
              lookup: Lookup | None, say: Say, *, slow: bool = False
              ) -> tuple[Draft, PlatformLock] | None:
    """``packagedays.narrow`` of a draft that resolved only on a widened day: only the
    packages the proposed day's failures name (and what they need) take a later day, each
    try bounded like any other; None (the widened day kept) when that does not resolve,
    offline (no index to read), or under TRY_S left."""
    left = _left(deadline)
    if left is not None and left < TRY_S:
        return None
    if lookup is None:
        return None
    view = index_view(lookup, candidate.index or PYPI_SIMPLE, locked.pypi_python
                      or candidate.python.value or DEFAULT_PYTHON, platform)

    def attempt(trial: Draft) -> PlatformLock | str:
        days = ", ".join(f"{n} {d}" for n, d in trial.as_of_packages.items())
        say(f"resolving as of {start.isoformat()} with {days}…")
        text = render_spec(trial, installed_packs())
        share = _share(deadline, 2)
        try:
            return _bounded(functools.partial(try_lock, text, source, platform),
                            None if share is None else time.monotonic() + share)
        except EnvforgeError as exc:  # a time bound, a rule: this narrowing does not hold
            return trim(str(exc))

    def unbuilt(lock: PlatformLock) -> str | None:
        """A package whose sdist does not build, else one held back to a release whose code
        the target Python does not parse (keras-gcn's day kept astor 0.6.2, whose
        ``async=False`` parameter is a SyntaxError on 3.7, where the widened day had 0.8.0)."""
        from envforge.app.trialcompile import trial_compile

        failed = _trial(lock, platform, deadline, say).failed
        if failed is not None:
            return failed.name
        kept = held_back(lock, locked)
        left = _left(deadline)
        if kept and left is not None and left < TRY_S:
            raise _UncheckedError(sorted(kept))
        broken = trial_compile(lock, platform, kept)
        return broken[0].name if broken else None

    try:
        return narrow(candidate, locked, start=start, widened=widened, failure=failure,
                      attempt=attempt, view=view, unbuilt=unbuilt, slow=slow)
    except _UncheckedError as unchecked:
        say(f"the widened day kept: the releases narrowing held back ({', '.join(unchecked.names)})"
            " were not compiled by the target Python in the time left")
        return None


class _UncheckedError(Exception):
    """Narrowing held releases back and no time was left to compile them (deep-learning-
    models' init kept astor 0.6.2 so, a SyntaxError on Python 3.7, and said it resolved):
    the widened day, whose releases are the later ones, is kept instead."""

    def __init__(self, names: list[str]) -> None:
        super().__init__(", ".join(names))
        self.names = names


def held_back(narrowed: PlatformLock, widened: PlatformLock) -> dict[str, str]:
    """The releases a narrowed lock keeps at another version than the widened lock took
    (normalized name -> version): what narrowing held back to the repository's day."""
    later = {canonicalize_name(f.name): f.version for f in widened.pypi}
    return {name: f.version for f in narrowed.pypi
            if later.get(name := canonicalize_name(f.name), f.version) != f.version}


def _unparsed(draft: Draft, locked: PlatformLock, platform: Platform, deadline: float | None,
              lookup: Lookup | None, say: Say) -> tuple[Draft, str] | None:
    """The draft with an exact pin whose pure wheel the target Python does not parse
    (``trialcompile``: pexpect 4.2.1's ``async`` parameter on Python 3.7+) moved to the
    nearest later release with a wheel; None when every one parses, none such is pinned (it
    is said), or under TRY_S left."""
    from envforge.app.trialcompile import pure_wheels, trial_compile

    found = draft.repository.imported.requirements
    pinned: dict[str, str] = {
        canonicalize_name(r.name): v for r in (Requirement(f.requirement) for f in found
                                               if f.requirement not in draft.left_out)
        if (v := exact_version(r)) is not None}
    left = _left(deadline)
    if not pure_wheels(locked, pinned) or (left is not None and left < TRY_S):
        return None
    say("compiling the pinned pure wheels with the Python the lock records…")
    minor = draft.python.minor
    for failed in trial_compile(locked, platform, pinned):
        why = f"its code does not parse on Python {minor} ({failed.where}: {failed.message})"
        at = next((i for i, f in enumerate(found)
                   if _pins(f.requirement, failed.name, failed.version)), None)
        moved = None if at is None else _move_pin(
            draft, at, failed.version, why, f"its code does not parse on Python {minor}",
            lookup, metadata=False)
        if moved is not None:
            return moved
        say(f"warning: {failed.name} {failed.version}: {why}; no pin of the repository's "
            "names it to move")
    return None


def _capped_for_dependencies(draft: Draft, resolved: Mapping[str, str]
                             ) -> tuple[Draft, str] | None:
    """The draft with a requirement capped where two resolved releases do not work together:
    below the release that removed what another's own code uses (``[[dependency_removed_api]]``:
    librosa 0.6.0 imports ``numba.decorators``, gone in numba 0.50), or away from the releases
    whose compiled extension was built against another release of what they need
    (``[[built_against]]``: torchtext 0.8.0 and torch 1.7.0). The requirement naming it is
    capped, else one added; None when no row applies or the draft already keeps clear."""
    for row in legacy_names().dependency_removed_api:
        used, held = resolved.get(canonicalize_name(row.project)), \
            resolved.get(canonicalize_name(row.requirement))
        if used is None or held is None or not in_range(used, row.versions) \
                or in_range(held, f"<{row.below}"):
            continue
        capped = _cap(draft, row.requirement, f"<{row.below}", held, row.project, used,
                      f"{row.project} {used} (as resolved) uses {row.uses}, which "
                      f"{row.requirement} {row.below} removed")
        if capped is not None:
            return capped
    rows = legacy_names().built_against
    for project, requirement in dict.fromkeys((r.project, r.requirement) for r in rows):
        held, other = resolved.get(canonicalize_name(project)), \
            resolved.get(canonicalize_name(requirement))
        other_built = [r.release for r in rows if (r.project, r.requirement) ==
                       (project, requirement) and other is not None
                       and not in_range(other, r.needs)]
        if held is None or held not in other_built:
            continue
        capped = _cap(draft, project, ",".join(f"!={v}" for v in other_built), held,
                      requirement, str(other),
                      f"{project} {held} (as resolved) carries an extension built against "
                      f"another {requirement} than {other}, and its metadata does not say so")
        if capped is not None:
            return capped
    return None


def _cap(draft: Draft, name: str, allowed: str, held: str, cause: str, cause_version: str,
         why: str) -> tuple[Draft, str] | None:
    """``name`` held to ``allowed`` (``<0.50``; ``held`` resolved), for ``why``: the
    requirement that names it, unless the user pinned it or it already excludes ``held``, else
    one added from the line that brought ``cause``."""
    found = draft.repository.imported.requirements
    names = [canonicalize_name(Requirement(f.requirement).name) for f in found]
    key = canonicalize_name(name)
    if key in names:
        at = names.index(key)
        requirement = Requirement(found[at].requirement)
        if requirement.url is not None or not requirement.specifier.contains(held, True) \
                or any(s.operator in ("==", "===") for s in requirement.specifier):
            return None  # the user's own pin of it stays, as it is
        requirement.specifier &= SpecifierSet(allowed)
        item = Found(str(requirement), found[at].origin,
                     "; ".join(n for n in (found[at].note, f"capped {allowed}: {why}") if n), True)
        return _with(draft, at, item), f"{found[at].requirement}: capped {allowed}: {why}"
    cause_key = canonicalize_name(cause)
    origin = found[names.index(cause_key)].origin if cause_key in names else \
        f"{cause} {cause_version} (as resolved)"
    item = Found(f"{name}{allowed}", origin,
                 f"added: {why} ({held} resolved; no requirement names it)", True)
    return _with(draft, len(found), item), f"added {item.requirement}: {why}"


def _era_backend(draft: Draft, failed: BuildFailure) -> tuple[Draft, str] | None:
    """The draft with the build constraint a ``[[build_error]]`` row gives a failed build's
    words (a Cython compile error: ``Cython<3``), where the draft's day is before the row's
    and the constraint is not there yet."""
    from envforge.knowledge import era_build_error

    row = era_build_error(failed.reason)
    day = date.fromisoformat(draft.as_of.value) if draft.as_of.value else None
    if row is None or row.build_constraint in draft.build_constraints or \
            (day is not None and day >= row.before):
        return None
    why = (f"{_era_for(failed)} ({trim(failed.reason)}) with today's build back-end; its "
           f"day's builds used one before {row.before}")
    return (replace(draft, build_constraints={**draft.build_constraints,
                                              row.build_constraint: why}),
            f"{failed.name}=={failed.version}: its build fails with today's build back-end; "
            f"builds constrained to {row.build_constraint}")


# uv's words for a build of an sdist (its metadata's or its wheel's) that failed
_FAILED_BUILD = re.compile(r"Failed to build `([A-Za-z0-9_.-]+)==([^`\s]+)`")


def _era_backend_of(draft: Draft, failure: str) -> tuple[Draft, str] | None:
    """``_era_backend`` for the resolver's own build of an sdist's metadata (uv's "Failed
    to build `markupsafe==1.0`", a dependency no pin names: its build failing with today's
    setuptools, the day fails)."""
    built = _FAILED_BUILD.search(failure)
    return _era_backend(draft, BuildFailure(built[1], built[2], failure)) if built else None


def _refused_metadata_day(draft: Draft, failure: str, day: date | None
                          ) -> tuple[Draft, str] | None:
    """The draft with a project's own day (``as_of_packages``) where the resolver's failed
    build of an old sdist of it followed from releases whose metadata it refuses
    (``[[metadata_refused]]``: every pandas before 0.25.0), on a day before the first
    release since whose metadata parses; None otherwise, or where it has its day already."""
    built = _FAILED_BUILD.search(failure)
    if built is None or day is None:
        return None
    name = canonicalize_name(built[1])
    row = next((r for r in legacy_names().metadata_refused
                if canonicalize_name(r.project) == name and in_range(built[2], r.versions)),
               None)
    if row is None or day >= row.day or name in draft.as_of_packages:
        return None
    return (replace(draft, as_of_packages={**draft.as_of_packages, name: row.day.isoformat()},
                    package_days_why={**draft.package_days_why, name: row.reason}),
            f"{name}: its releases before {row.day} have metadata today's resolvers refuse; "
            f"{name} resolved as of {row.day}")


def _era_for(failed: BuildFailure) -> str:
    """How the reason of a build constraint ``_era_backend`` gave one sdist begins: so the
    constraint leaves with that sdist."""
    return f"{failed.name} {failed.version}'s build failed"


def _failed_build_needs(failed: BuildFailure) -> list[str]:
    """What a trial build that failed could not import, as its log says, then what the
    knowledge says the project's build needs besides (``[[build_requires]]``: fasttext's
    setup.py fails in its own words without pybind11)."""
    from envforge.knowledge import known_build_requires

    said = undeclared_import(failed.reason, failed.name)
    return [*([said] if said else []), *known_build_requires(failed.name)]


def _build_needs(draft: Draft, project: str, version: str, module: str
                 ) -> tuple[Draft, str] | None:
    """The draft with what an sdist's build imports undeclared (a module, or the name uv
    gave: ``[[import_name]]`` rows name a module's distribution, ``yaml`` is PyYAML's) added
    to its ``extra_build_dependencies``, or, for a module a later build back-end removed
    (``[[build_module]]``), the build constraint that keeps it; None where it is there
    already (adding it did not help: the pin then moves as for any sdist that does not
    build), for a standard-library module, or past MAX_BUILD_NEEDS."""
    from envforge.importers.codeimports import standard_library
    from envforge.importers.legacy_names import legacy_names
    from envforge.knowledge import removed_build_module

    removed = removed_build_module(module)
    if removed is not None:
        if removed.build_constraint in draft.build_constraints:
            return None
        why = f"{project} {version}'s build imports {module}, which later releases removed"
        return (replace(draft, build_constraints={**draft.build_constraints,
                                                  removed.build_constraint: why}),
                f"{project}=={version}: its build imports {module}, which later releases "
                f"removed; builds constrained to {removed.build_constraint}")
    top = module.split(".")[0]
    if top in standard_library(draft.python.minor):
        return None
    needs = next((row.requirement for row in legacy_names().import_name
                  if row.module == top), top)
    key = canonicalize_name(project)
    listed = draft.extra_build.get(key, ())
    if canonicalize_name(needs) in {canonicalize_name(n) for n in listed} or \
            sum(map(len, draft.extra_build.values())) >= MAX_BUILD_NEEDS:
        return None
    return (replace(draft, extra_build={**draft.extra_build, key: (*listed, needs)}),
            f"{project}=={version}: its sdist's build imports {needs} without declaring it; "
            "given to its build (extra_build_dependencies)")


def _share(deadline: float | None, tries_left: int) -> float | None:
    """The seconds one try may take: an even share of what is left (TRY_S at least), so a day
    whose resolution builds old sdists gives way to the next day instead of eating it all."""
    left = _left(deadline)
    if left is None:
        return None
    return min(left, max(TRY_S, left / max(tries_left, 1)))


def _blames_url(failure: str, gits: Sequence[str]) -> bool:
    """Whether a failure is a git or URL dependency's fetch (an unreachable host, a gone
    commit, a wheel for another Python)."""
    urls = [g.split("@ ", 1)[1].removeprefix("git+").split("@")[0].split(";")[0].strip()
            for g in gits]
    return any(u in failure for u in urls) or bool(re.search(r"\bgit\b.*(fail|fetch|clone)",
                                                            failure, re.IGNORECASE))


def _without_urls(draft: Draft, urls: Sequence[str], failure: str) -> Draft:
    """The draft without the URL requirements the resolver cannot fetch: a wheel's or an
    sdist's takes, from the index, the release its file name gives (the public one of a
    local build: PyTorch's ``torch-1.4.0%2Bcpu-...whl``); a git URL's is left out."""
    why = f"the resolver cannot fetch it: {failure}"
    left = dict(draft.left_out)
    requirements = []
    for found in draft.repository.imported.requirements:
        written = Requirement(found.requirement) if found.requirement in urls else None
        release = archive_release(written.url) if written is not None and written.url else None
        if written is not None and release is not None:
            version, marker = release[1], written.marker
            pinned = f"{written.name}=={public_version(version)}" + \
                (f"; {marker}" if marker else "")
            local = f" (a local build, +{local_label(version)}: PyPI holds none)" \
                if local_label(version) else ""
            found = Found(pinned, found.origin, trim(
                f"was {found.requirement}: {why}; {public_version(version)} is the release "
                f"its file name gives{local}, from the index"), found.mapped)
        elif found.requirement in urls:
            left[found.requirement] = why
        requirements.append(found)
    imported = replace(draft.repository.imported, requirements=requirements)
    return replace(draft, left_out=left, repository=replace(draft.repository, imported=imported))


def _unreachable_sources(draft: Draft, failure: str) -> tuple[str, ...]:
    """The index, find-links pages and extra indexes, not left out yet, that a failure names:
    uv names the page it could not read, or an index's page of one project (``URL/six/``)."""
    named = (*((draft.index,) if draft.index else ()), *sources(draft.repository.imported))
    return tuple(url for url in named
                 if url not in draft.left_out and url.rstrip("/") in failure)


def _without_sources(draft: Draft, urls: Sequence[str], failure: str) -> Draft:
    """The draft with these sources left out (the spec's index among them: PyPI's then), and,
    once none is left, each pin of a local build moved to its public release
    (``localbuilds``)."""
    left = {**draft.left_out, **{url: f"the resolver cannot reach it: {failure}"
                                 for url in urls}}
    index = None if draft.index in urls else draft.index
    imported = draft.repository.imported
    if index is None and all(url in left for url in sources(imported)):
        imported = replace(imported, requirements=public_pins(
            imported.requirements, "and the page or index that serves it cannot be reached"))
    return replace(draft, left_out=left, index=index,
                   repository=replace(draft.repository, imported=imported))


def _repair_build(draft: Draft, failure: str, lookup: Lookup | None
                  ) -> tuple[Draft, str] | None:
    """The draft with the exact pin whose sdist failed to build (uv names it as
    ``name==version`` or by its cache folder ``pypi/name/version``), or whose metadata
    today's resolvers refuse (pandas 0.23.2's wheels require ``pytz (>=2011k)``, no PEP 440
    version: uv says "has invalid metadata"), moved to the nearest later release with a
    wheel for the Python; None when no pin is to blame or none has one."""
    minor = draft.python.minor
    blamed = [(name, version, f"its sdist does not build for Python {minor}", "its sdist "
               "does not build", False) for name, version in
              _FAILED_BUILD.findall(failure)
              + re.findall(r"/pypi/([A-Za-z0-9_.-]+)/([0-9][^/\s]*)/", failure)]
    blamed += [(name, version, "its metadata is not valid for today's resolvers (uv: \"has "
                "invalid metadata\")", "its metadata is invalid", True) for name, version in
               re.findall(r"Because ([A-Za-z0-9_.-]+)==(\S+) has invalid metadata", failure)]
    found = draft.repository.imported.requirements
    for name, version, why, short, metadata in blamed:
        at = next((i for i, f in enumerate(found) if _pins(f.requirement, name, version)), None)
        if at is None:
            continue
        return _move_pin(draft, at, version, why, short, lookup, metadata=metadata)
    return None


def _move_pin(draft: Draft, at: int, version: str, why: str, short: str,
              lookup: Lookup | None, *, metadata: bool) -> tuple[Draft, str] | None:
    """The draft with requirement ``at`` (an exact pin of ``version``) moved to the nearest
    later release with a wheel for the Python, ``why`` in its note; None when there is none."""
    minor = draft.python.minor
    old = draft.repository.imported.requirements[at]
    requirement = Requirement(old.requirement)
    moved = _moved(draft, requirement.name, version, minor, why, lookup, metadata=metadata)
    if moved is None:
        return None
    requirement.specifier = SpecifierSet(f"=={moved.value}")
    note = f"was {old.requirement}: {moved.why} (the index's file list)"
    return (_with(draft, at, Found(str(requirement), old.origin,
                                   "; ".join(n for n in (old.note, note) if n), True)),
            f"{old.requirement}: {short}; moved to {requirement}")


def _trial(locked: PlatformLock, platform: Platform, deadline: float | None,
           say: Say) -> Trial:
    """``trial_builds`` of the resolved draft, ended at the deadline (a build cut is said as
    not checked)."""
    if not sdists(locked):
        return Trial()
    try:
        return _bounded(functools.partial(trial_builds, locked, platform, deadline=deadline,
                                          say=say), deadline)
    except DraftTimeoutError:
        names = ", ".join(f"{f.name}=={f.version}" for f in sdists(locked))
        return Trial(unchecked=f"init's time bound ran out while building {names} from "
                               "source; give more with --timeout")


def _unbuilt(draft: Draft, failed: BuildFailure, lookup: Lookup | None
             ) -> tuple[Draft, str] | None:
    """The draft changed for a resolved sdist whose trial build failed: its exact pin moved
    to the nearest later release with a wheel (as ``_repair_build`` moves one uv could not
    build), else the requirement that names it left out (pydensecrf, one release, an sdist),
    with the build's reason and the code that imports it; None when no requirement names it
    (a dependency of one)."""
    minor = draft.python.minor
    found = draft.repository.imported.requirements
    why = f"its sdist does not build for Python {minor}: {failed.reason}"
    pinned = next((i for i, f in enumerate(found)
                   if _pins(f.requirement, failed.name, failed.version)), None)
    if pinned is not None:
        moved = _move_pin(draft, pinned, failed.version, trim(why), "its sdist does not build",
                          lookup, metadata=False) or _next_sdist(draft, pinned, failed, why,
                                                                 lookup)
        if moved is not None:
            return moved
    named = next((f.requirement for f in found if f.requirement not in draft.left_out
                  and " @ " not in f.requirement
                  and canonicalize_name(Requirement(f.requirement).name)
                  == canonicalize_name(failed.name)), None)
    if named is None:
        return None
    reason = trim(f"{failed.name} {failed.version}'s sdist does not build for Python {minor} "
                  f"(tried as apply builds it): {failed.reason}{_importers(draft, failed.name)}")
    constraints = {c: why for c, why in draft.build_constraints.items()  # _era_backend's for
                   if not why.startswith(_era_for(failed))}  # it alone: it did not help
    return (replace(draft, left_out={**draft.left_out, named: reason},
                    build_constraints=constraints),
            f"left out {named}: {failed.name} {failed.version}'s sdist does not build: "
            f"{trim(failed.reason)}")


NEXT_SDIST_NOTE = "the next release, an sdist too (built as apply will)"


def _next_sdist(draft: Draft, at: int, failed: BuildFailure, why: str,
                lookup: Lookup | None) -> tuple[Draft, str] | None:
    """Where no later release has a wheel, the pin moved to the next release of its major
    that ships an sdist, which init then builds: hdbscan 0.8.22's sdist lacks the
    ``dist_metrics.pxd`` its Cython needs, 0.8.23's has it. Once per requirement: a pin
    moved so already is left out if that build fails too."""
    from envforge.resolve.releases import releases_from_files

    old = draft.repository.imported.requirements[at]
    if NEXT_SDIST_NOTE in old.note:
        return None
    name = Requirement(old.requirement).name
    listed = _pin_listing(draft, name, lookup)
    pinned = Version(failed.version)
    later = sorted(r.version for r in releases_from_files(listed)
                   if r.version > pinned and r.version.major == pinned.major
                   and not r.version.is_prerelease)
    has_sdist = {r.version for r in releases_from_files(
        f for f in listed if str(f.get("filename", "")).endswith((".tar.gz", ".zip")))}
    candidate = next((v for v in later if v in has_sdist), None)
    if candidate is None:
        return None
    requirement = Requirement(old.requirement)
    requirement.specifier = SpecifierSet(f"=={candidate}")
    note = (f"was {old.requirement}: {trim(why)}; no later release has a wheel for Python "
            f"{draft.python.minor}: {candidate} is {NEXT_SDIST_NOTE}")
    return (_with(draft, at, Found(str(requirement), old.origin,
                                   "; ".join(n for n in (old.note, note) if n), True)),
            f"{old.requirement}: its sdist does not build; moved to {requirement}, the next "
            "release (an sdist: built next)")


def _importers(draft: Draft, name: str) -> str:
    """``; test.py:13 imports pydensecrf, which will not run without it``: where the code
    imports the distribution's module (its known module name, else its own), if it does."""
    from envforge.importers.legacy_names import module_names

    code = draft.code
    module = None if code is None else code.first_imported(module_names(name))
    if code is None or module is None:
        return ""
    return f"; {code.imports[module]} imports {module}, which will not run without it"


def _repair_compat(draft: Draft, exc: CompatibilityError, lookup: Lookup | None
                   ) -> tuple[Draft, str] | None:
    """The draft with one exact pin moved as a pack's rule proposes (``exc.repairs``:
    ``torch==1.1.0``, the release a torchvision 0.3.0 is built for), the first repair with a
    release on the index that has a wheel for the Python (``_pin_listing``: torchvision
    0.2.2, torch 1.0's pair, yanked only for newer Pythons, counts); None when no repair
    applies."""
    minor = draft.python.minor
    found = draft.repository.imported.requirements
    for repair in exc.repairs:
        wanted = Requirement(repair)
        at = next((i for i, f in enumerate(found)
                   if _pinned_version(f.requirement, wanted.name) is not None), None)
        if at is None:
            continue
        old = found[at]
        pinned = _pinned_version(old.requirement, wanted.name) or ""
        listed = _pin_listing(draft, wanted.name, lookup)
        moved = nearest_allowed(listed, pinned, minor, wanted.specifier, draft.platform)
        if moved is None or moved == pinned:
            continue
        requirement = Requirement(old.requirement)
        requirement.specifier = SpecifierSet(f"=={moved}")
        conflict = (exc.conflict.partition(": ")[2] or exc.conflict).split("; ")[0]
        note = (f"was {old.requirement}: {conflict}; "
                f"{moved} is the release {repair} names with a wheel for Python {minor} "
                f"(source: {exc.source})")
        return (_with(draft, at, Found(str(requirement), old.origin,
                                       "; ".join(n for n in (old.note, note) if n), True)),
                f"{old.requirement}: a pack's rule refused it; moved to {requirement}")
    return None


def _pin_listing(draft: Draft, name: str, lookup: Lookup | None
                 ) -> Sequence[Mapping[str, Any]]:
    """The index's files of ``name`` for a repair that writes an exact pin: a release
    yanked for a reason that does not hold here counts (``kept_yanked``: an exact pin
    installs it, PEP 592), as it does for the repository's own pins (drafting's listings)."""
    from envforge.resolve.pypi_index import index_files

    return kept_yanked(name, (lookup or index_files)(draft.index or PYPI_SIMPLE, name) or ())


def _moved(draft: Draft, name: str, version: str, minor: str, why: str,
           lookup: Lookup | None, *, metadata: bool) -> Proposal | None:
    """``name==version``'s nearest later release with a wheel for Python ``minor`` (with
    ``metadata``, also whose metadata the resolver reads: pandas 0.23.2 -> 0.25.0)."""
    from envforge.resolve.pypi_index import metadata_parses

    moved = repair_pin(_pin_listing(draft, name, lookup), version, minor, failed=why,
                       accept=metadata_parses if metadata else None, platform=draft.platform)
    return None if moved is None or moved.value is None else moved


# a version ends at a comma, a space or the bracket that closes uv's aside ("(torchvision
# ==0.5.0 depends on torch==1.4.0)", which ``==1.4.0)`` crashed init with)
_DEPENDS = re.compile(r"([A-Za-z0-9_.-]+)==(\S+?) depends on ([A-Za-z0-9_.-]+)"
                      r"((?:[<>=!~]=?[^,\s()]+,?)+)")


def _repair_conflict(draft: Draft, failure: str, lookup: Lookup | None
                     ) -> tuple[Draft, str] | None:
    """The draft with the project's exact pin that another pin's dependency rules out
    (tensorflow==1.15.4 depends on numpy>=1.16.0,<1.19.0; the file pins numpy==1.15.4, which
    pip's resolver before 20.3 installed anyway) moved to the nearest release the
    dependency admits that has a wheel for the Python."""
    minor = draft.python.minor
    found = draft.repository.imported.requirements
    for parent, parent_version, name, spec in _DEPENDS.findall(failure):
        try:
            allowed = SpecifierSet(spec.rstrip(","))
        except InvalidSpecifier:  # words of the resolver's this reading does not know
            continue
        at = next((i for i, f in enumerate(found)
                   if (pinned := _pinned_version(f.requirement, name)) is not None
                   and not allowed.contains(pinned, prereleases=True)), None)
        if at is None:
            continue
        old = found[at]
        version = _pinned_version(old.requirement, name) or ""
        moved = nearest_allowed(_pin_listing(draft, name, lookup), version, minor, allowed,
                                draft.platform)
        if moved is None:
            return None
        requirement = Requirement(old.requirement)
        requirement.specifier = SpecifierSet(f"=={moved}")
        note = (f"was {old.requirement}: {parent}=={parent_version} depends on {name}{spec}; "
                f"{moved} is the nearest release it admits with a wheel for Python {minor} "
                "(pip's resolver before 20.3 installed such conflicts without a word)")
        return (_with(draft, at, Found(str(requirement), old.origin,
                                       "; ".join(n for n in (old.note, note) if n), True)),
                f"{old.requirement}: {parent}=={parent_version} needs {name}{spec}; "
                f"moved to {requirement}")
    return None


_DELETED = re.compile(r"there is no version of ([A-Za-z0-9_.-]+)==(\S+?) and "
                      r"([A-Za-z0-9_.-]+)==(\S+?) depends on \1==\2")
NEVER = 'sys_platform == "never"'  # a marker no environment meets: uv drops the requirement


def _repair_deleted(draft: Draft, failure: str) -> tuple[Draft, str] | None:
    """The draft with a dependency's pin of a nightly the index no longer has (a pre-release:
    tb-nightly prunes its old builds) overridden away, where another distribution installs
    the same module ([[same_module]]): test-tube 0.7.0 pins tb-nightly==1.15.0a20190708,
    which PyPI deleted, and tensorboard installs the same package. The alternative is added,
    unpinned, where no requirement names it; None where the deleted one has no alternative
    or is overridden already."""
    match = _DELETED.search(failure)
    if match is None:
        return None
    name, version, parent, parent_version = match.groups()
    if not _prerelease(version):  # a nightly PyPI pruned; a release's removal is no rule
        return None
    gone = canonicalize_name(name)
    row = next((r for r in legacy_names().same_module
                if gone in {canonicalize_name(n) for n in r.names}), None)
    override = f"{gone}; {NEVER}"
    if row is None or override in draft.overrides:
        return None
    others = [n for n in row.names if canonicalize_name(n) != gone]
    found = draft.repository.imported.requirements
    held = {canonicalize_name(Requirement(f.requirement).name) for f in found}
    why = (f"{parent}=={parent_version} depends on {name}=={version}, which the index no "
           f"longer has; {', '.join(others)} installs the same module ({row.reason}: "
           "knowledge/legacy_names.toml [[same_module]])")
    if held.isdisjoint(canonicalize_name(n) for n in others):
        origin = next((f.origin for f in found if canonicalize_name(
            Requirement(f.requirement).name) == canonicalize_name(parent)), "")
        draft = _with(draft, len(found), Found(others[0], origin or parent,
                                               f"added: {why}", True))
    return (replace(draft, overrides={**draft.overrides, override: why}),
            f"{name}=={version}, which {parent}=={parent_version} pins, is no longer on the "
            f"index: overridden, {' or '.join(others)} installs its module")


def _prerelease(version: str) -> bool:
    try:
        return Version(version).is_prerelease
    except InvalidVersion:
        return False


def _pinned_version(text: str, name: str) -> str | None:
    requirement = Requirement(text)
    if canonicalize_name(requirement.name) != canonicalize_name(name):
        return None
    return exact_version(requirement)


# lock's own fix for a project none of whose releases for the Python came by as_of
# (resolve/pypi_explain.py's culprit_message)
_ALONE = re.compile(r"give \S+ alone that day \(as_of_packages = \{ \"([^\"]+)\" = "
                    r"(\d{4}-\d{2}-\d{2}) \}\)")


def _repair_too_new(draft: Draft, failure: str) -> tuple[Draft, str] | None:
    """The draft with a project none of whose releases for the Python came by its day given
    the day after its first one came (``as_of_packages``), as lock's fix says; widening every
    package's day could not reach it: pytorch/text 0.4.0 (2019-08) names codecov, whose
    every PyPI upload is of 2023-04-17 (re-uploaded after its removal), and init widened
    four times, then stopped. On the proposed day only: on a widened day it let that day
    resolve where narrowing from the proposed one did better (pytorch-cifar's torchvision,
    whose first Python 3.7 wheel needs a later torch, kept the widened day for both)."""
    match = _ALONE.search(failure)
    if match is None or canonicalize_name(match[1]) in {
            canonicalize_name(n) for n in draft.as_of_packages}:
        return None
    name, came = match[1], date.fromisoformat(match[2])
    day = (came + timedelta(days=1)).isoformat()  # as narrowing's: whatever uv's time zone
    # the pin's note names no day: narrowing may give the package a later one (practical-
    # pytorch's torch, 2018-12-08 here, 2019-05-01 once torchvision 0.3.0 needed its torch),
    # and as_of_packages, beside it, says which
    note = (f"as_of_packages gives {name} a day of its own: the index has no release of it "
            f"for Python {draft.python.minor} uploaded by as_of, its first came "
            f"{came.isoformat()}")
    found = draft.repository.imported.requirements
    at = next((i for i, f in enumerate(found) if " @ " not in f.requirement
               and canonicalize_name(Requirement(f.requirement).name)
               == canonicalize_name(name)), None)
    changed = replace(draft, as_of_packages={**draft.as_of_packages, name: day})
    if at is not None:
        old = found[at]
        changed = _with(changed, at, Found(old.requirement, old.origin,
                                           "; ".join(n for n in (old.note, note) if n), True))
    return changed, f"as_of_packages gives {name} {day}: {note.split(': ', 1)[1]}"


def _with(draft: Draft, at: int, item: Found) -> Draft:
    found = draft.repository.imported.requirements
    imported = replace(draft.repository.imported,
                       requirements=[*found[:at], item, *found[at + 1:]])
    return replace(draft, repository=replace(draft.repository, imported=imported))


def _pins(text: str, name: str, version: str) -> bool:
    requirement = Requirement(text)
    return canonicalize_name(requirement.name) == canonicalize_name(name) and any(
        s.operator in ("==", "===") and s.version == version for s in requirement.specifier)


_T = TypeVar("_T")


def _bounded(work: Callable[[], _T], deadline: float | None) -> _T:
    """``work`` run within the deadline; past it, the resolver processes this one started
    are ended and DraftTimeoutError says so."""
    if deadline is None:
        return work()
    result: list[_T] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            result.append(work())
        except BaseException as exc:  # re-raised in the caller's thread
            errors.append(exc)

    worker = threading.Thread(target=run, name="envforge-settle", daemon=True)
    worker.start()
    worker.join(_left(deadline))
    if worker.is_alive():
        proc.end_descendants()
        raise DraftTimeoutError("the time bound ran out while resolving the draft")
    if errors:
        raise errors[0]
    return result[0]
