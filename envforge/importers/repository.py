"""A repository's dependency files, found, read and merged into one list of requirements."""

from __future__ import annotations

import os
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement

from envforge.confine import EscapeError, resolved_inside
from envforge.errors import SpecError
from envforge.importers import Found, Imported, Skipped, UnreadableError, exact_version
from envforge.importers.codeimports import FROM_IMPORTS
from envforge.importers.condafiles import is_conda_list, read_conda_list, read_environment_yml
from envforge.importers.dockerfile import read_dockerfile
from envforge.importers.installcmds import read_shell_script
from envforge.importers.legacy_names import (
    LegacyPack,
    map_requirement,
    module_group,
    not_distribution,
)
from envforge.importers.pyfiles import (
    read_pipfile,
    read_pipfile_lock,
    read_requirements,
    read_setup_cfg,
    read_setup_py,
)
from envforge.inputfile import DEPENDENCY_LIMIT, LINE_LIMIT, read_input_text
from envforge.packapi import Registry

# requirements-dev.txt and the like are left out; a tests' file is read (what the repository's
# own tests need: ibab/tensorflow-wavenet's requirements_test.txt names nose and pep8, which its
# ci/test.sh runs), as init takes a test extra whole
_DEV = re.compile(r"(dev|doc|lint|ci|tox|build)", re.IGNORECASE)
_CONDA_NAMES = ("environment.yml", "environment.yaml", "conda.yml", "conda.yaml")
_KNOWN = {"setup.py", "setup.cfg", "pipfile", "pipfile.lock"}
# pip's requirements files, and pip-tools' inputs in the same syntax (``requirements.in``,
# which ``pip-compile`` pins into ``requirements.txt``: https://pip-tools.readthedocs.io/)
_PIP_FILES = (".txt", ".in")


@dataclass(frozen=True)
class Repository:
    """What init read: the files, the merged requirements, what it left out. No files: the
    requirements were drafted from the code's imports (``importers/codeimports.py``)."""

    files: tuple[str, ...]
    imported: Imported

    @property
    def sources(self) -> str:
        """What the requirements came from, for the spec's comments and init's report."""
        return ", ".join(self.files) or FROM_IMPORTS


class _Files:
    """The repository's files as init reads them: each confined to the repository (links
    followed), a regular file of bounded size and line length, read once."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.texts: dict[str, str] = {}
        self.scripts: dict[str, Imported] = {}

    def text(self, relative: str) -> str:
        """The file's text; EscapeError outside the repository, SpecError when unreadable."""
        if relative not in self.texts:
            path = resolved_inside(self.root, relative)
            # Python and JSON may hold a long line (a long_description, a minified lock);
            # a line-oriented file's line is one requirement
            long_lines = Path(relative).name.lower() in ("setup.py", "pipfile.lock")
            self.texts[relative] = read_input_text(path, DEPENDENCY_LIMIT, lenient=True,
                                                   max_line=None if long_lines else LINE_LIMIT)
        return self.texts[relative]

    def included(self, relative: str) -> str | None:
        """An include's text, None when there is no such file (reported, not refused)."""
        path = resolved_inside(self.root, relative)
        return self.text(relative) if os.path.lexists(path) else None

    def script(self, relative: str) -> Imported:
        """A shell script's install commands, read once (``dependency_files`` asks whether it
        installs anything; ``read_repository`` takes what it installs)."""
        if relative not in self.scripts:
            self.scripts[relative] = read_shell_script(relative, self.sniffed(relative))
        return self.scripts[relative]

    def sniffed(self, relative: str) -> str:
        """Another ``*.txt``, read only to see whether it is a conda list: one envforge may
        not or cannot read (a link out, a big data file) is none."""
        try:
            return self.text(relative)
        except (EscapeError, SpecError):
            return ""


def dependency_files(root: Path, files: _Files | None = None
                     ) -> tuple[list[str], list[Skipped]]:
    """The files init reads, relative to ``root``; development-only ones are reported."""
    files = files or _Files(root)
    names = sorted(p.name for p in root.iterdir() if not p.is_dir())  # a FIFO is refused
    chosen: list[str] = []
    skipped: list[Skipped] = []
    for name in names:
        low = name.lower()  # REQUIREMENTS.txt, Setup.py: found as pip and a checkout on macOS do
        wanted = (low.startswith("requirements") and low.endswith(_PIP_FILES)) or low in (
            _KNOWN | set(_CONDA_NAMES)) or is_dockerfile(name) or (
            is_shell_script(name) and (root / name).is_file() and _installs(files.script(name))
        ) or (
            low.endswith(".txt") and (root / name).is_file()
            and is_conda_list(files.sniffed(name))) or (
            low.endswith((".yml", ".yaml")) and (root / name).is_file()
            and _is_conda_environment(files.sniffed(name)))
        if not wanted:
            continue
        if low.startswith("requirements") and _DEV.search(low.removeprefix("requirements")):
            skipped.append(Skipped(name, name, "development requirements: not imported"))
        else:
            chosen.append(name)
    docker = root / "docker"  # the folder many repositories keep their images' files in
    if docker.is_dir() and not docker.is_symlink():
        chosen += [f"docker/{p.name}" for p in sorted(docker.iterdir())
                   if is_dockerfile(p.name) and p.is_file() and not p.is_symlink()]
    # install scripts' and Dockerfiles' pins after the dependency files': what those name
    # exactly wins
    chosen.sort(key=lambda name: (is_shell_script(name), is_dockerfile(name)))
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


def read_repository(root: Path, registry: Registry[LegacyPack]) -> Repository:
    """Every dependency file of the repository, merged: one requirement per distribution (an
    exact pin wins over a range, the first file over a later one), legacy names mapped.
    A file that cannot be read as its kind, or that leads outside the repository, is one
    SpecError naming it (and the including line)."""
    files = _Files(root)
    chosen, skipped = dependency_files(root, files)
    everything = Imported(skipped=list(skipped))
    seen: set[str] = set()
    for name in chosen:
        try:
            text = files.text(name)
        except EscapeError as exc:
            raise SpecError(root / name, f"{exc}; init reads only inside the repository") \
                from None
        try:
            everything.extend(_read_one(name, text, files, seen))
        except UnreadableError as exc:
            raise SpecError(root / exc.name, exc.reason, line=exc.line) from None
    everything.requirements = merge(_distributions(everything), registry)
    everything.skipped = _once(everything.skipped)
    return Repository(tuple(chosen), everything)


def _once(skipped: list[Skipped]) -> list[Skipped]:
    """Each thing skipped for one reason said once, at its first place, with how many more
    (a script's ``-i`` of a mirror on each of its six lines)."""
    said = Counter((item.what, item.reason) for item in skipped)
    first: dict[tuple[str, str], Skipped] = {}
    for item in skipped:
        first.setdefault((item.what, item.reason), item)
    return [Skipped(item.what, f"{item.origin} and {said[key] - 1} more" if said[key] > 1 else
                    item.origin, item.reason) for key, item in first.items()]


def _distributions(imported: Imported) -> list[Found]:
    """The requirements that name a distribution; the others (``pkg-resources==0.0.0`` of an
    Ubuntu ``pip freeze``) added to what was skipped, with why."""
    kept = []
    for found in imported.requirements:
        try:
            why = not_distribution(Requirement(found.requirement).name)
        except InvalidRequirement:
            why = None
        if why is None:
            kept.append(found)
        else:
            imported.skipped.append(Skipped(found.requirement, found.origin, why))
    return kept


def is_dockerfile(name: str) -> bool:
    """``Dockerfile``, ``Dockerfile.gpu``, ``cpu.Dockerfile`` (in a folder too): Docker's
    names for one."""
    low = name.rsplit("/", 1)[-1].lower()
    return low == "dockerfile" or low.startswith("dockerfile.") or low.endswith(".dockerfile")


def _installs(script: Imported) -> bool:
    """Whether a script installs what a spec carries (a requirement, its Python): one that
    installs nothing (``train.sh``), or only ``pip install -r`` of a file elsewhere, ``-e .``
    or ``conda env create -f``, is no dependency file, and the code's imports are drafted
    from where no other file is."""
    return bool(script.requirements or script.python)


def is_shell_script(name: str) -> bool:
    """A shell script at the root (``install.sh``, ``requirements.sh``, ``env.sh``): the
    install commands its authors ran, read for their requirements."""
    return "/" not in name and name.lower().endswith(".sh")


def _read_one(name: str, text: str, files: _Files, seen: set[str]) -> Imported:
    kind = name.lower()
    if is_dockerfile(name):
        return read_dockerfile(name, text)
    if is_shell_script(name):
        return files.script(name)
    if kind == "setup.py":
        return read_setup_py(name, text)
    if kind == "setup.cfg":
        return read_setup_cfg(name, text)
    if kind == "pipfile":
        return read_pipfile(name, text)
    if kind == "pipfile.lock":
        return read_pipfile_lock(name, text)
    if kind in _CONDA_NAMES or kind.endswith((".yml", ".yaml")):
        return read_environment_yml(name, text)
    if is_conda_list(text):
        return read_conda_list(name, text)
    if name in seen:  # already read as another requirements file's include
        return Imported()
    return read_requirements(name, text, files.included, seen=seen)


def merge(found: list[Found], registry: Registry[LegacyPack]) -> list[Found]:
    """One entry per distribution and marker as the files name it (an exact pin wins over a
    range, the first file over a later one; the others' origins are kept), legacy names
    mapped, then once more by the mapped names: the Windows and the Linux pin of one package
    both stay, and alternatives that install one module (``tensorflow-gpu==1.15`` in one file,
    ``tensorflow==1.15`` in another) are one requirement, the first file's."""
    mapped = []
    for item in _merged(found):
        text, note = map_requirement(item.requirement, registry)
        mapped.append(Found(text, item.origin, note or item.note,
                            item.mapped or _another_release(item.requirement, text)))
    return _merged(mapped)


def _another_release(written: str, mapped: str) -> bool:
    """Whether a mapping changed what the requirement pins: a rename that keeps its exact
    release (``tensorflow-gpu==1.8.0`` -> ``tensorflow==1.8.0``, the CPU build) keeps the
    project's pin, which still dates the project and picks its Python."""
    if written == mapped:
        return False
    before, after = (exact_version(Requirement(text)) for text in (written, mapped))
    return before is None or before != after


def _merged(found: list[Found]) -> list[Found]:
    merged: dict[tuple[str, str], Found] = {}
    for item in found:
        requirement = Requirement(item.requirement)
        key = (module_group(requirement.name), str(requirement.marker or ""))
        kept = merged.get(key)
        if kept is None:
            merged[key] = item
            continue
        first, second = (item, kept) if _exact(item) and not _exact(kept) else (kept, item)
        places = [*first.origin.split(", also "), *second.origin.split(", also ")]
        merged[key] = Found(first.requirement, ", also ".join(dict.fromkeys(places)),
                            first.note, first.mapped)
    return list(merged.values())


def _exact(found: Found) -> bool:
    return any(s.operator in ("==", "===") for s in Requirement(found.requirement).specifier)
