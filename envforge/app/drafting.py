"""Drafting a spec from a legacy repository: its dependency files read (never run), the
Python and the day to resolve as of proposed, exact pins with no wheel for that Python moved
to the nearest release with one, and the draft settled on a variant that locks.

The index's JSON API (queried concurrently) and the repository's git history feed the
proposals. ``settle`` keeps the proposed day: when the draft does not resolve it widens the
day six months at a time (``WIDEN_STEPS`` at most), and leaves out only git dependencies an
unreachable host cannot serve. Everything runs within one deadline and says what it does.
"""

from __future__ import annotations

import calendar
import functools
import os
import re
import signal
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import wait as wait_all
from dataclasses import dataclass, replace
from datetime import date
from pathlib import Path
from typing import Any

from packaging.requirements import Requirement

from envforge.errors import EnvforgeError, InputError
from envforge.importers import Found
from envforge.importers.propose import (
    Proposal,
    era_for_python,
    propose_as_of,
    propose_python,
    release_files,
    repair_pin,
)
from envforge.importers.render import Draft, render_spec
from envforge.importers.repository import Repository, read_repository
from envforge.resolve.releases import releases_from_files
from envforge.spec import PYPI_SIMPLE, Platform, parse_spec

Lookup = Callable[[str, str], "Sequence[Mapping[str, Any]] | None"]
Say = Callable[[str], None]

WIDEN_MONTHS = 6  # how far each step moves a day that does not resolve
WIDEN_STEPS = 4  # at most two years past the repository's own day
TRY_S = 20.0  # the least time one trial resolution gets before the next day is tried
REASON_CHARS = 600  # a resolver's reason is cut there: a spec comment, one output line
_LOOKUP_THREADS = 8


class DraftTimeoutError(EnvforgeError):
    """init's time bound ran out before the draft was settled."""


def spec_name(root: Path) -> str:
    """The repository folder's name as a spec name (``DeepSurv`` -> ``deepsurv``)."""
    name = re.sub(r"[^a-z0-9._-]+", "-", root.resolve().name.lower()).strip("-._")
    return name or "imported"


def exact_pins(repo: Repository, *, mapped: bool = False) -> dict[str, tuple[str, str]]:
    """``name==version`` -> (name, version) for every exact pin the project made (with
    ``mapped``, also the ones init mapped a legacy name to)."""
    pins = {}
    for found in repo.imported.requirements:
        if found.mapped and not mapped:
            continue
        requirement = Requirement(found.requirement)
        exact = [s for s in requirement.specifier if s.operator in ("==", "===")
                 and "*" not in s.version]
        if len(exact) == 1:
            pins[f"{requirement.name}=={exact[0].version}"] = (requirement.name,
                                                               exact[0].version)
    return pins


def draft_spec(root: Path, *, source: str, name: str, platform: Platform,
               lookup: Lookup | None, commit_day: date | None, say: Say = lambda _: None,
               deadline: float | None = None) -> Draft:
    """Read the repository and make the proposals; ``lookup`` None means no index queries.
    ``deadline`` (time.monotonic()) bounds the index queries: a project not listed by then
    counts as unknown."""
    repo = read_repository(root)
    if not repo.files:
        raise InputError(f"{source}: no requirements*.txt, setup.py, setup.cfg, Pipfile, "
                         "Pipfile.lock, environment.yml or conda list file found")
    index = repo.imported.index[0][0] if repo.imported.index else None
    pins = exact_pins(repo, mapped=True)
    listings: dict[str, Sequence[Mapping[str, Any]]] = {}
    if lookup is not None and pins:
        say(f"querying {_host(index or PYPI_SIMPLE)} for {len(pins)} "
            f"pin{'s' if len(pins) != 1 else ''}…")
        listings = _query(lookup, index or PYPI_SIMPLE, pins, deadline)
    files = {pin: release_files(listings[pin], version)  # the project's own pins date it
             for pin, (_, version) in exact_pins(repo).items() if listings.get(pin)}
    as_of = propose_as_of(files, commit_day)
    python = propose_python(files, as_of.value, repo.imported.python)
    minor = ".".join((python.value or "3.7").split(".")[:2])
    as_of = era_for_python(as_of, minor)
    repaired = _repaired(repo, pins, listings, minor)
    as_of = _era_of_moved(as_of, repo, repaired, listings)
    repo = repaired
    return Draft(name=name, source=source, repository=repo, platform=platform,
                 python=_full_python(python), as_of=as_of,
                 index=index if index and index != PYPI_SIMPLE else None)


def _host(index: str) -> str:
    return "PyPI" if index == PYPI_SIMPLE else index


def _query(lookup: Lookup, index: str, pins: Mapping[str, tuple[str, str]],
           deadline: float | None) -> dict[str, Sequence[Mapping[str, Any]]]:
    """Every pin's project listing, side by side; what has not come by the deadline is
    left unknown (the resolver still decides)."""
    pool = ThreadPoolExecutor(max_workers=_LOOKUP_THREADS, thread_name_prefix="envforge-index")
    futures = {pin: pool.submit(lookup, index, package) for pin, (package, _) in pins.items()}
    wait_all(futures.values(), timeout=_left(deadline))
    pool.shutdown(wait=False, cancel_futures=True)
    return {pin: got for pin, future in futures.items()
            if future.done() and not future.cancelled() and future.exception() is None
            and (got := future.result())}


def _left(deadline: float | None) -> float | None:
    return None if deadline is None else max(0.0, deadline - time.monotonic())


def _repaired(repo: Repository, pins: Mapping[str, tuple[str, str]],
              listings: Mapping[str, Sequence[Mapping[str, Any]]], minor: str) -> Repository:
    """The repository's requirements with each exact pin that has no wheel for Python
    ``minor`` moved to the nearest release that has one, the old pin and why in its note."""
    moved: list[Found] = []
    for found in repo.imported.requirements:
        requirement = Requirement(found.requirement)
        pin = next((p for p, (package, _) in pins.items()
                    if package == requirement.name and p in listings
                    and requirement.url is None), None)
        proposal = None if pin is None else repair_pin(listings[pin], pins[pin][1], minor)
        if proposal is None or proposal.value is None:
            if proposal is not None:
                found = Found(found.requirement, found.origin,
                              _joined(found.note, f"no wheel for Python {minor}: "
                                      f"{proposal.why}"), found.mapped)
            moved.append(found)
            continue
        old = found.requirement
        requirement.specifier = type(requirement.specifier)(f"=={proposal.value}")
        moved.append(Found(str(requirement), found.origin,
                           _joined(found.note, f"was {old}: {proposal.why} (the index's file "
                                   "list)"), True))
    imported = replace(repo.imported, requirements=moved)
    return Repository(repo.files, imported)


def _era_of_moved(as_of: Proposal, before: Repository, after: Repository,
                  listings: Mapping[str, Sequence[Mapping[str, Any]]]) -> Proposal:
    """The day raised to the newest release a pin moved to: its own dependencies (TF 1.13.1's
    tensorboard 1.13) are of its day, and ``as_of`` would hide them."""
    if as_of.value is None:
        return as_of
    newest: tuple[date, str] | None = None
    for old, new in zip(before.imported.requirements, after.imported.requirements,
                        strict=True):
        if old.requirement == new.requirement:
            continue
        was, requirement = Requirement(old.requirement), Requirement(new.requirement)
        pin = f"{was.name}=={next(iter(was.specifier)).version}"
        version = next(iter(requirement.specifier)).version
        day = next((r.uploaded for r in releases_from_files(listings.get(pin, ()))
                    if str(r.version) == version), None)
        if day is not None and day > date.fromisoformat(as_of.value) and (
                newest is None or day > newest[0]):
            newest = (day, f"{requirement.name}=={version}")
    if newest is None:
        return as_of
    return Proposal(newest[0].isoformat(), f"{as_of.why}; then {newest[1]}'s day "
                    f"({newest[0]}), the release a pin moved to, whose dependencies are of it")


def _joined(*notes: str) -> str:
    return "; ".join(n for n in notes if n)


def _full_python(python: Proposal) -> Proposal:
    """``3.7`` -> this host's ``3.7.16``, the version lock resolves for (README: lock uses the
    spec's patch, else the host's); written so, every host locks the same and lock has
    nothing to warn about. Kept as proposed where this host has no such Python."""
    from envforge.errors import StepError
    from envforge.host.interpreters import find_interpreter

    value = python.value
    if value is None or value.count(".") != 1:
        return python
    try:
        found = find_interpreter(value)
    except StepError:
        return python
    return Proposal(found.version, f"{python.why}; {found.version} is the Python {value} on "
                    "this host, the one lock resolves for")


def git_commit_day(root: Path) -> date | None:
    """The committer date of the repository's last commit; None outside git, and where no
    git is installed (a Windows machine, a project downloaded as a zip)."""
    from envforge.errors import ToolError
    from envforge.host import proc

    try:
        done = proc.run(["git", "-C", str(root), "log", "-1", "--format=%cs", "--", "."],
                        check=False)
    except ToolError:  # no git on PATH
        return None
    text = done.stdout.strip()
    return date.fromisoformat(text) if done.returncode == 0 and text else None


def try_lock(text: str, source: str, platform: Platform) -> str | None:
    """Resolve the draft for ``platform`` once; None when it locks, else the reason (the
    resolver's own words, never its command line)."""
    from envforge.app.locking import lock_platform
    from envforge.resolve.pypi import UnsatisfiableError
    from envforge.resolve.pypi_explain import explain_unsatisfiable

    spec = parse_spec(text, source=source)
    try:
        lock_platform(spec.for_platform(platform))
    except UnsatisfiableError as exc:
        return trim(str(explain_unsatisfiable(spec, exc)))
    except EnvforgeError as exc:
        return failure_reason(str(exc))
    return None


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
    """The draft as written, its text, and why it does not resolve (None: it does)."""

    draft: Draft
    text: str
    failure: str | None


def settle(draft: Draft, source: str, platform: Platform, *, say: Say = lambda _: None,
           deadline: float | None = None, today: date | None = None) -> Settled:
    """The draft resolved as proposed; when it does not, git dependencies the resolver cannot
    fetch are left out, and the day is widened by WIDEN_MONTHS up to WIDEN_STEPS times (never
    past ``today``) until it resolves. The day is never dropped: when no step resolves, the
    proposed one stays, with the days tried and the reason. Past ``deadline`` the draft is
    returned as it stands, with the time bound as its failure."""
    start = date.fromisoformat(draft.as_of.value) if draft.as_of.value else None
    days: list[date | None] = [start]
    while start is not None and len(days) <= WIDEN_STEPS and \
            widen(start, WIDEN_MONTHS * len(days)) <= (today or date.today()):
        days.append(widen(start, WIDEN_MONTHS * len(days)))
    gits = sorted(f.requirement for f in draft.repository.imported.requirements
                  if "@ git+" in f.requirement)
    tries = len(days) + (1 if gits else 0)
    tried: list[str] = []
    failure: str | None = None
    candidate = draft
    attempt, position = 0, 0
    while position < len(days):
        day = days[position]
        attempt += 1
        if day is not None:
            candidate = replace(candidate, as_of=Proposal(day.isoformat(), draft.as_of.why),
                                as_of_tried=tuple(tried))
        what = f"as of {day.isoformat()}" if day else "the draft"
        say(f"resolving {what} (try {attempt} of {tries})…")
        text = render_spec(candidate)
        share = _share(deadline, tries - attempt + 1)
        try:
            failure = _bounded(functools.partial(try_lock, text, source, platform),
                               None if share is None else time.monotonic() + share)
        except DraftTimeoutError:
            if deadline is not None and time.monotonic() >= deadline - 0.5:
                failure = f"init's time bound ran out while resolving {what} (try {attempt} " \
                          f"of {tries}); give more with --timeout, or lock the spec as written"
                break
            failure = f"no answer {what} within {share:.0f} s, its share of --timeout (where " \
                      "that day's releases have no wheel for the Python, the resolver builds " \
                      "their sdists)"
        if failure is None:
            done = candidate if tried else replace(candidate, as_of_failure=None)
            return Settled(done, text, None)
        candidate = replace(candidate, as_of_failure=failure)
        if gits and not candidate.left_out and _blames_git(failure, gits):
            candidate = replace(candidate, left_out={
                g: f"the resolver cannot fetch it: {failure}" for g in gits})
            continue  # the same day again, without them
        if day is not None:
            tried.append(day.isoformat())
        position += 1
    if start is not None:
        candidate = replace(candidate, as_of=draft.as_of, as_of_tried=tuple(tried),
                            as_of_failure=failure)
    return Settled(candidate, render_spec(candidate), failure)


def _share(deadline: float | None, tries_left: int) -> float | None:
    """The seconds one try may take: an even share of what is left (TRY_S at least), so a day
    whose resolution builds old sdists gives way to the next day instead of eating it all."""
    left = _left(deadline)
    if left is None:
        return None
    return min(left, max(TRY_S, left / max(tries_left, 1)))


def _blames_git(failure: str, gits: Sequence[str]) -> bool:
    """Whether a failure is a git dependency's fetch (an unreachable host, a gone commit)."""
    urls = [g.split("@ ", 1)[1].removeprefix("git+").split("@")[0] for g in gits]
    return any(u in failure for u in urls) or bool(re.search(r"\bgit\b.*(fail|fetch|clone)",
                                                            failure, re.IGNORECASE))


def _bounded(work: Callable[[], str | None], deadline: float | None) -> str | None:
    """``work`` run within the deadline; past it, the resolver processes this one started
    are ended and DraftTimeoutError says so."""
    if deadline is None:
        return work()
    result: list[str | None] = []
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
        _end_children()
        raise DraftTimeoutError("the time bound ran out while resolving the draft")
    if errors:
        raise errors[0]
    return result[0]


def _end_children() -> None:
    """End the processes this one started (uv and the builds uv started), by their ids,
    deepest first; POSIX's /proc only."""
    if sys.platform == "win32" or not Path("/proc").is_dir():
        return
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parents[int(stat.parent.name)] = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
    ours: list[int] = []
    frontier = [os.getpid()]
    while frontier:
        children = [pid for pid, parent in parents.items() if parent in frontier]
        ours += children
        frontier = children
    for pid in reversed(ours):
        try:
            os.kill(pid, signal.SIGTERM)
        except OSError:
            continue
