"""A repository's dependency files, found, read and merged into one list of requirements."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from envforge.importers import Found, Imported, Skipped
from envforge.importers.condafiles import is_conda_list, read_conda_list, read_environment_yml
from envforge.importers.legacy_names import map_requirement
from envforge.importers.pyfiles import (
    read_pipfile,
    read_pipfile_lock,
    read_requirements,
    read_setup_cfg,
    read_setup_py,
)

_DEV = re.compile(r"(dev|test|doc|lint|ci|tox|build)", re.IGNORECASE)
_CONDA_NAMES = ("environment.yml", "environment.yaml", "conda.yml", "conda.yaml")
_KNOWN = {"setup.py", "setup.cfg", "pipfile", "pipfile.lock"}


@dataclass(frozen=True)
class Repository:
    """What init read: the files, the merged requirements, what it left out."""

    files: tuple[str, ...]
    imported: Imported


def dependency_files(root: Path) -> tuple[list[str], list[Skipped]]:
    """The files init reads, relative to ``root``; development-only ones are reported."""
    names = sorted(p.name for p in root.iterdir() if p.is_file())
    chosen: list[str] = []
    skipped: list[Skipped] = []
    for name in names:
        low = name.lower()  # REQUIREMENTS.txt, Setup.py: found as pip and a checkout on macOS do
        wanted = (low.startswith("requirements") and low.endswith(".txt")) or low in (
            _KNOWN | set(_CONDA_NAMES)) or (
            low.endswith(".txt") and is_conda_list(_text(root / name))) or (
            low.endswith((".yml", ".yaml")) and _is_conda_environment(_text(root / name)))
        if not wanted:
            continue
        if low.startswith("requirements") and _DEV.search(low.removeprefix("requirements")):
            skipped.append(Skipped(name, name, "development requirements: not imported"))
        else:
            chosen.append(name)
    kinds = {name.lower(): name for name in chosen}
    if "pipfile.lock" in kinds and "pipfile" in kinds:
        chosen.remove(kinds["pipfile"])
        skipped.append(Skipped(kinds["pipfile"], kinds["pipfile"],
                               "Pipfile.lock pins the same packages"))
    return chosen, skipped


def _is_conda_environment(text: str) -> bool:
    """A conda environment file under any name (``conda env create -f bap.yml``): top-level
    ``dependencies:`` with ``name:`` or ``channels:`` (CI and compose files have neither)."""
    return bool(re.search(r"^dependencies:", text, re.MULTILINE)) and bool(
        re.search(r"^(name|channels):", text, re.MULTILINE))


def read_repository(root: Path) -> Repository:
    """Every dependency file of the repository, merged: one requirement per distribution (an
    exact pin wins over a range, the first file over a later one), legacy names mapped."""
    files, skipped = dependency_files(root)
    everything = Imported(skipped=list(skipped))

    def read(relative: str) -> str | None:
        path = root / relative
        return _text(path) if path.is_file() else None

    for name in files:
        text = _text(root / name)
        kind = name.lower()
        if kind == "setup.py":
            everything.extend(read_setup_py(name, text))
        elif kind == "setup.cfg":
            everything.extend(read_setup_cfg(name, text))
        elif kind == "pipfile":
            everything.extend(read_pipfile(name, text))
        elif kind == "pipfile.lock":
            everything.extend(read_pipfile_lock(name, text))
        elif kind in _CONDA_NAMES or kind.endswith((".yml", ".yaml")):
            everything.extend(read_environment_yml(name, text))
        elif is_conda_list(text):
            everything.extend(read_conda_list(name, text))
        else:
            everything.extend(read_requirements(name, text, read))
    everything.requirements = merge(everything.requirements)
    return Repository(tuple(files), everything)


def merge(found: list[Found]) -> list[Found]:
    """One entry per distribution and marker as the files name it (an exact pin wins over a
    range, the first file over a later one; the others' origins are kept), legacy names
    mapped, then once more by the mapped names: the Windows and the Linux pin of one package
    both stay, and ``tensorflow-gpu==1.15`` in one file and ``tensorflow==1.15`` in another
    are one requirement."""
    mapped = []
    for item in _merged(found):
        text, note = map_requirement(item.requirement)
        mapped.append(Found(text, item.origin, note or item.note, text != item.requirement))
    return _merged(mapped)


def _merged(found: list[Found]) -> list[Found]:
    merged: dict[tuple[str, str], Found] = {}
    for item in found:
        requirement = Requirement(item.requirement)
        key = (canonicalize_name(requirement.name), str(requirement.marker or ""))
        kept = merged.get(key)
        if kept is None:
            merged[key] = item
            continue
        first, second = (item, kept) if _exact(item) and not _exact(kept) else (kept, item)
        merged[key] = Found(first.requirement, f"{first.origin}, also {second.origin}",
                            first.note, first.mapped)
    return list(merged.values())


def _exact(found: Found) -> bool:
    return any(s.operator in ("==", "===") for s in Requirement(found.requirement).specifier)


def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
