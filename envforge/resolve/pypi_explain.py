"""uv's "No solution found" turned into one line: spec file and line, the package, what the
index has for the target Python, and the fix (another pin, ``as_of``, another Python).

The culprit is found from the index, not from uv's prose: the first requirement of the spec
that no release usable by the target satisfies. A conflict between dependencies falls back
to uv's first reason, still without its command line or its own option names.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Sequence
from datetime import date
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from envforge.errors import SpecError
from envforge.resolve.pypi import (
    EraBuildError,
    UndeclaredBuildError,
    UnsatisfiableError,
    exact_names,
)
from envforge.resolve.releases import Release, supports, usable
from envforge.spec import Spec
from envforge.tomlpos import key_lines, line_of

Lookup = Callable[[str, str], "list[Release] | None"]
_SHOWN = 4  # newest usable versions named in the message


class UnknownProjectError(SpecError):
    """A requirement names a project the index lists no release of: no other day, Python or
    pin of the others resolves it (init stops widening its day)."""


def explain_unsatisfiable(spec: Spec, exc: UnsatisfiableError, *,
                          lookup: Lookup | None = None) -> SpecError:
    """The error to show; ``lookup(index, name)`` lists a project's releases (default: the
    index's JSON API)."""
    if lookup is None:
        from envforge.resolve.pypi_index import index_releases

        lookup = index_releases
    text = _spec_text(spec.source)
    newer: list[tuple[date, str]] = []  # exact pins of after as_of: taken whatever their day
    for requirement in _suspects(exc.requirements, exc.uv_output):
        releases = lookup(exc.index, requirement.name)
        if releases is None:
            continue
        dated = canonicalize_name(requirement.name) not in exact_names(exc.requirements)
        day = None if dated else _pinned_day(requirement, releases)
        if day is not None and exc.as_of is not None and day > exc.as_of:
            newer.append((day, str(requirement)))
        message = culprit_message(requirement, releases, python=exc.python,
                                  as_of=exc.as_of if dated else None, platform=exc.platform)
        if message is not None:
            raw = next(r for r in exc.requirements if _name(r) == canonicalize_name(
                requirement.name))
            kind = SpecError if releases else UnknownProjectError
            return kind(spec.source, message, line=requirement_line(text, raw),
                        key="pypi.packages")
    reason = uv_reason(exc.uv_output)
    fix = "relax or change one of these pins, set [pypi] as_of to the project's era, or " \
        "another [python] version"
    if newer:
        day, pin = max(newer)
        fix = f"set [pypi] as_of to {day} or later ({pin} is of {day}: an exact pin is taken " \
            f"whatever its day, its dependencies only as of {exc.as_of}); or {fix}"
    return SpecError(spec.source, f"[pypi] packages cannot be installed together on Python "
                     f"{exc.python} ({exc.platform}): {reason}; fix: {fix}",
                     line=line_of(key_lines(text), ("pypi", "packages")), key="pypi.packages")


def explain_undeclared_build(spec: Spec, exc: UndeclaredBuildError) -> SpecError:
    """The fix in the spec's terms: the key that gives the sdist's build what it imports
    (uv's own hint names its project settings), with what the spec lists for it already."""
    import sys

    from envforge.knowledge import removed_build_module

    text = _spec_text(spec.source)
    lines = key_lines(text)
    removed = removed_build_module(exc.needs)
    if removed is not None or "." in exc.needs or exc.needs in sys.stdlib_module_names:
        keeps = f"{json.dumps(removed.build_constraint)} ({removed.source})" if removed \
            else "a release of the sdist's era"
        return SpecError(spec.source, f"{exc.project} {exc.version} is built from its sdist, "
                         f"whose build imports {exc.needs}, which its build environment lacks "
                         "(no distribution gives it: the build back-end floats to the newest "
                         "for the Python); fix: set [pypi] build_constraints to keep it, "
                         f"{keeps}, or pin a release with a wheel",
                         line=line_of(lines, ("pypi", "packages")), key="pypi.packages")
    name = canonicalize_name(exc.project)
    listed = [r for p in spec.platforms.values()
              for r in p.pypi.extra_build_dependencies.get(name, ())]
    needs = list(dict.fromkeys([*listed, exc.needs]))
    table = f"{{ {json.dumps(name)} = [{', '.join(json.dumps(n) for n in needs)}] }}"
    key = ("pypi", "extra_build_dependencies") if listed else ("pypi", "packages")
    return SpecError(spec.source, f"{exc.project} {exc.version} is built from its sdist, whose "
                     f"setup.py imports {exc.needs} without declaring it (its build fails: No "
                     f"module named {exc.needs!r}); fix: set [pypi] extra_build_dependencies = "
                     f"{table} (installed into its build, NumPy's and the like's at the "
                     "environment's version), or pin a release with a wheel",
                     line=line_of(lines, key), key=".".join(key))


def explain_era_build(spec: Spec, exc: EraBuildError) -> SpecError:
    """The fix in the spec's terms: the build constraint of the sdist's era that the
    knowledge's row names for the build's words, added to what the spec constrains."""
    text = _spec_text(spec.source)
    given = next(iter(spec.platforms.values())).pypi.build_constraints
    key = ("pypi", "packages")
    named = next((p for pspec in spec.platforms.values() for p in pspec.pypi.packages
                  if _name(p) == canonicalize_name(exc.project)), None)
    line = (requirement_line(text, named) if named else None) or line_of(key_lines(text), key)
    return SpecError(spec.source, f"{exc.project} {exc.version} is built from its sdist, and "
                     "its build fails under today's build back-end, which floats to the newest "
                     f"for the Python (source: {exc.row.source}); fix: set [pypi] "
                     f"{constraints_fix(given, exc.row.build_constraint)}",
                     line=line, key=".".join(key))


def constraints_fix(given: Iterable[str], constraint: str) -> str:
    """``build_constraints = [...]`` as a fix writes it: the spec's own, then the era's."""
    listed = ", ".join(json.dumps(c) for c in dict.fromkeys([*given, constraint]))
    return f"build_constraints = [{listed}]"


def _pinned_day(requirement: Requirement, releases: Sequence[Release]) -> date | None:
    """The upload day of the newest release an exact pin admits."""
    days = [r.uploaded for r in releases if r.uploaded is not None
            and requirement.specifier.contains(r.version, prereleases=True)]
    return max(days) if days else None


def culprit_message(requirement: Requirement, releases: Sequence[Release], *, python: str,
                    as_of: date | None, platform: str) -> str | None:
    """The message when no usable release satisfies ``requirement``; None when one does."""
    if not releases:  # the index answered 404 (``opencv``, ``keras-contrib``): no date helps
        return (f"{requirement} cannot be installed: the index lists no release of "
                f"{requirement.name} at all (no such project, or every release yanked); fix: "
                "the name the index gives it (a conda package's PyPI name can differ: conda's "
                "opencv is opencv-python), a `NAME @ git+URL` line for a project never "
                "published, or remove it")
    fit = usable(releases, python, as_of)
    if any(requirement.specifier.contains(r.version, prereleases=True) for r in fit):
        return None
    era = f" uploaded by {as_of.isoformat()}" if as_of else ""
    if fit:
        newest = [str(r.version) for r in fit[-_SHOWN:]]
        has = (f"releases for Python {python}{era}: {', '.join(newest)} (newest last; "
               f"{len(fit)} in all)")
    else:
        has = f"no release for Python {python}{era}"
    wanted = [r for r in releases if requirement.specifier.contains(r.version, prereleases=True)]
    fixes = []
    if fit:
        fixes.append(f'pin one of those ("{requirement.name}=={_nearest(requirement, fit)}")')
    too_new = [r for r in wanted if supports(r, python) and r.uploaded is not None
               and as_of is not None and r.uploaded > as_of]
    if too_new:
        day = too_new[0].uploaded
        fixes.append(f"set [pypi] as_of to {day} or later, or give {requirement.name} alone "
                     f"that day (as_of_packages = {{ {json.dumps(requirement.name)} = {day} }})")
    other_python = [r for r in wanted if not supports(r, python)]
    # another Python: the release nearest the era that needs one (by as_of, else the first
    # after it), but not one after the day where a later day fits this Python (torch for a
    # 2018 repository on 3.7 was offered 2.0.0's Python 3.8)
    by_then = [r for r in other_python
               if as_of is None or r.uploaded is None or r.uploaded <= as_of]
    if by_then or (other_python and not too_new):
        named = by_then[-1] if by_then else other_python[0]
        fixes.append(f"set [python] version to one {requirement.name} {named.version} "
                     f"supports (Requires-Python {named.requires_python})")
    if not wanted:
        fixes.append(f"the index has no release matching {requirement.specifier or 'it'} "
                     "(yanked releases left out: a range never takes one, an exact pin may, "
                     "PEP 592)")
    elif as_of is None and not too_new and not other_python:
        fixes.append("set [pypi] as_of to the project's era")
    return (f"{requirement} cannot be installed on Python {python} ({platform}): the index has "
            f"{has}; fix: {'; or '.join(fixes)}")


def _nearest(requirement: Requirement, fit: Sequence[Release]) -> str:
    """The release to propose for a pin none fits: the first after the one pinned, as init
    moves a pin (legacy code asking for torch 0.4.1 is nearer 1.0.0 than 1.13.1), else the
    newest."""
    pinned = [s.version for s in requirement.specifier
              if s.operator == "==" and "*" not in s.version]
    if len(pinned) == 1:
        later = [r for r in fit if r.version >= Version(pinned[0])]
        if later:
            return str(later[0].version)
    return str(fit[-1].version)


def uv_reason(output: str) -> str:
    """uv's first reason (``cause:`` and its continuation lines, every paragraph of its
    derivation) on one line, without its hints, which name uv's options rather than
    envforge's. The paragraphs after the first name what blocks a release the first one
    ruled in (``tensorflow>=1.13.1 depends on tensorflow-estimator>=1.13.0``): init's
    narrowing reads those names, and stopped at the blank line before them."""
    reason: list[str] = []
    for line in output.splitlines():
        stripped = line.strip()
        if not reason:
            if stripped.startswith("cause:"):
                reason.append(stripped.removeprefix("cause:"))
            continue
        if stripped.startswith(("hint:", "cause:", "error:")):
            break
        if stripped:
            reason.append(stripped)
    joined = re.sub(r"\s+", " ", " ".join(reason)).strip().rstrip(".,")
    return joined or "uv found no solution"


def requirement_line(text: str, requirement: str) -> int | None:
    """The line that spells the requirement as a TOML string, first one wins."""
    for number, line in enumerate(text.splitlines(), start=1):
        if f'"{requirement}"' in line or f"'{requirement}'" in line:
            return number
    return None


def _suspects(requirements: Sequence[str], uv_output: str) -> list[Requirement]:
    """The spec's named requirements, those uv's output mentions first."""
    parsed = []
    for raw in requirements:
        try:
            parsed.append(Requirement(raw))
        except InvalidRequirement:
            continue
    lowered = uv_output.lower()
    return sorted((r for r in parsed if r.url is None),
                  key=lambda r: canonicalize_name(r.name) not in _names_in(lowered))


def _names_in(output: str) -> set[str]:
    return {canonicalize_name(m) for m in re.findall(r"[a-z0-9][a-z0-9._-]*", output)}


def _name(raw: str) -> str | None:
    try:
        return canonicalize_name(Requirement(raw).name)
    except InvalidRequirement:
        return None


def _spec_text(source: str) -> str:
    try:
        return Path(source).read_text(encoding="utf-8")
    except OSError:
        return ""
