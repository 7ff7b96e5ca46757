"""``envforge add`` / ``remove``: edit a spec's PyPI packages, re-lock, and write both.

The spec is written only once the edited spec has locked (uv reverts pyproject.toml when
``uv add``'s lock fails; here it is never changed), atomically, and put back byte for byte
if the lock then cannot be written: a refused edit leaves the spec and its lock as they were.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from envforge.app.packs import installed_packs
from envforge.app.project import Project, lock
from envforge.errors import InputError
from envforge.inputfile import SPEC_LIMIT, read_input_text
from envforge.lockfile import Lockfile, lock_path_for, write_lock
from envforge.spec import Platform, parse_spec
from envforge.specedit import (
    add_requirement,
    packages_path,
    remove_requirement,
    requirement_name,
)

_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?")  # PEP 508's project names


@dataclass(frozen=True)
class Edit:
    """What an edit did: the spec's values before and after, and the lock when re-locked."""

    project: Project
    before: tuple[str, ...]
    after: tuple[str, ...]
    spec_changed: bool
    previous: Lockfile | None = None
    locked: Lockfile | None = None
    lock_changed: bool = False
    notes: list[str] = field(default_factory=list)


def edit_packages(spec_path: Path, *, add: Sequence[str] = (), remove: Sequence[str] = (),
                  platform: Platform | None = None, locks_dir: Path | None = None,
                  relock: bool = True) -> Edit:
    """Add (or replace, by project name) the requirements ``add``, drop the projects named in
    ``remove``, in ``[pypi] packages`` or ``[pypi.platform.P] packages``; then, unless not
    ``relock``, lock the edited spec keeping the lock's other versions and write both."""
    source = str(spec_path)
    text = read_input_text(spec_path, SPEC_LIMIT, missing="no such spec file")
    registry = installed_packs()
    project = Project(spec_path=spec_path,
                      spec=parse_spec(text, source=source, registry=registry),
                      lock_path=lock_path_for(spec_path, locks_dir), registry=registry)
    if platform is not None and platform not in project.spec.project.platforms:
        raise InputError(f"{source}: --platform {platform} is not among the spec's platforms "
                         f"({', '.join(project.spec.project.platforms)})")
    path = packages_path(platform)
    for requirement in add:
        requirement_name(requirement, where="envforge add")
    for name in remove:
        if not _NAME.fullmatch(name):
            raise InputError(f"envforge remove: {name!r} is not a project name (remove takes "
                             "names, e.g. h5py, not requirements)")
    edited = text
    for requirement in add:
        edited = add_requirement(edited, path, requirement, source=source)
    for name in remove:
        edited = remove_requirement(edited, path, name, source=source)
    try:
        new = Project(spec_path=project.spec_path,
                      spec=parse_spec(edited, source=source, registry=registry),
                      lock_path=project.lock_path, registry=registry)
    except InputError as exc:
        raise _as_on_disk(exc, source, text, edited) from None
    before, after = _values(text, path, source), _values(edited, path, source)
    if not relock:
        _write_spec(spec_path, edited, text)
        return Edit(new, before, after, spec_changed=edited != text)
    previous = project.lock_to_replace()
    notes: list[str] = []
    try:
        locked = lock(new, previous, notes=notes)
    except InputError as exc:
        raise _as_on_disk(exc, source, text, edited) from None
    _write_spec(spec_path, edited, text)
    try:
        changed = write_lock(locked, new.lock_path)
    except BaseException:
        _write_spec(spec_path, text, edited)  # the spec goes back with the lock unwritten
        raise
    return Edit(new, before, after, spec_changed=edited != text, previous=previous,
                locked=locked, lock_changed=changed, notes=notes)


def _as_on_disk(exc: InputError, source: str, text: str, edited: str) -> InputError:
    """A refusal of the edited spec, whose ``file:line`` counts the edited text's lines: kept
    where the spec on disk has the same line there, else without the line (the message
    names the value, which the user has just typed)."""
    match = re.match(rf"{re.escape(source)}:(\d+): ", str(exc))
    if match is None:
        return exc
    old, new = text.splitlines(), edited.splitlines()
    same = next((i for i, (a, b) in enumerate(zip(old, new, strict=False)) if a != b),
                min(len(old), len(new)))
    if int(match.group(1)) <= same:
        return exc
    return InputError(f"{source}: {str(exc)[match.end():]}")


def _values(text: str, path: Sequence[str], source: str) -> tuple[str, ...]:
    from envforge.spec import load_toml

    table = load_toml(text, source)
    for key in path:
        table = table.get(key, {}) if isinstance(table, dict) else {}
    return tuple(table) if isinstance(table, list) else ()


def _write_spec(spec_path: Path, text: str, was: str) -> None:
    """``text`` in place of the spec, atomically (a link's target is what is replaced, and
    keeps its mode); nothing is written where the text did not change, and nothing over a
    spec that is no longer ``was`` (edited by hand while the lock resolved)."""
    if text == was:
        return
    target = Path(os.path.realpath(spec_path))
    if target.read_bytes() != was.encode("utf-8"):
        raise InputError(f"{spec_path}: changed while envforge locked it; nothing was written "
                         "(run the command again)")
    tmp = target.with_name(f".{target.name}.envforge-tmp")
    tmp.write_bytes(text.encode("utf-8"))
    try:
        tmp.chmod(target.stat().st_mode & 0o7777)
        tmp.replace(target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
