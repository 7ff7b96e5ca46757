"""Drafting a spec from a legacy repository: its dependency files read (never run), the
Python and the day to resolve as of proposed, and the draft settled on a variant that locks.

The index's JSON API and the repository's git history feed the proposals; a proposed day or
a git dependency that does not resolve is left out with uv's reason (``settle``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from datetime import date
from pathlib import Path
from typing import Any

from packaging.requirements import Requirement

from envforge.errors import EnvforgeError, InputError
from envforge.importers.propose import propose_as_of, propose_python, release_files
from envforge.importers.render import Draft, render_spec
from envforge.importers.repository import Repository, read_repository
from envforge.spec import PYPI_SIMPLE, Platform, parse_spec

Lookup = Callable[[str, str], "Sequence[Mapping[str, Any]] | None"]


def spec_name(root: Path) -> str:
    """The repository folder's name as a spec name (``DeepSurv`` -> ``deepsurv``)."""
    name = re.sub(r"[^a-z0-9._-]+", "-", root.resolve().name.lower()).strip("-._")
    return name or "imported"


def exact_pins(repo: Repository) -> dict[str, tuple[str, str]]:
    """``name==version`` -> (name, version) for every exact pin the project made (not the
    ones init mapped a legacy name to)."""
    pins = {}
    for found in repo.imported.requirements:
        if found.mapped:
            continue
        requirement = Requirement(found.requirement)
        exact = [s for s in requirement.specifier if s.operator in ("==", "===")
                 and "*" not in s.version]
        if len(exact) == 1:
            pins[f"{requirement.name}=={exact[0].version}"] = (requirement.name,
                                                               exact[0].version)
    return pins


def draft_spec(root: Path, *, source: str, name: str, platform: Platform,
               lookup: Lookup | None, commit_day: date | None) -> Draft:
    """Read the repository and make the proposals; ``lookup`` None means no index queries."""
    repo = read_repository(root)
    if not repo.files:
        raise InputError(f"{source}: no requirements*.txt, setup.py, setup.cfg, Pipfile, "
                         "Pipfile.lock, environment.yml or conda list file found")
    index = repo.imported.index[0][0] if repo.imported.index else None
    files: dict[str, Sequence[Mapping[str, Any]]] = {}
    if lookup is not None:
        for pin, (package, version) in exact_pins(repo).items():
            listed = lookup(index or PYPI_SIMPLE, package)
            if listed:
                files[pin] = release_files(listed, version)
    as_of = propose_as_of(files, commit_day)
    python = propose_python(files, as_of.value, repo.imported.python)
    return Draft(name=name, source=source, repository=repo, platform=platform, python=python,
                 as_of=as_of, index=index if index and index != PYPI_SIMPLE else None)


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
    """Resolve the draft for ``platform`` once; None when it locks, else the one-line reason."""
    from envforge.app.locking import lock_platform
    from envforge.resolve.pypi import UnsatisfiableError
    from envforge.resolve.pypi_explain import explain_unsatisfiable

    spec = parse_spec(text, source=source)
    try:
        lock_platform(spec.for_platform(platform))
    except UnsatisfiableError as exc:
        return explain_unsatisfiable(spec, exc).reason
    except EnvforgeError as exc:
        return str(exc).splitlines()[0]
    return None


def settle(draft: Draft, source: str, platform: Platform) -> tuple[Draft, str, str | None]:
    """The first variant of the draft that resolves: as proposed; without the proposed day;
    without the git dependencies (an unreachable host), with and without the day. What had
    to go is kept in the spec as a comment with the reason. Returns the last failure too."""
    text = render_spec(draft)
    failure = try_lock(text, source, platform)
    if failure is None:
        return draft, text, None
    first = failure
    gits = {f.requirement for f in draft.repository.imported.requirements
            if "@ git+" in f.requirement}
    variants: list[dict[str, Any]] = []
    if draft.as_of.value is not None:
        variants.append({"as_of_refused": f"it does not resolve: {first}"})
    if gits:
        left_out = {g: f"it does not resolve: {first}" for g in sorted(gits)}
        variants.append({"left_out": left_out})
        if draft.as_of.value is not None:
            variants.append({"left_out": left_out,
                             "as_of_refused": f"it does not resolve: {first}"})
    for changes in variants:
        candidate = _replace(draft, **changes)
        text = render_spec(candidate)
        failure = try_lock(text, source, platform)
        if failure is None:
            return candidate, text, None
    return draft, render_spec(draft), first


def _replace(draft: Draft, **changes: Any) -> Draft:
    from dataclasses import replace

    return replace(draft, **changes)
