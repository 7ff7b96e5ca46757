"""The ``[debian]`` section init writes: the packages a mounted pack asks for on the spec's
platform (its ``init_debian`` rows: Theano's OpenBLAS on linux-64), with the keys of its
section that use them, the programs a module the code uses runs (knowledge/
legacy_names.toml's ``import_debian`` rows: ffmpeg for gym's video recorder), and the
libraries a resolved release loads and does not ship (``library_debian`` rows: PortAudio for
sounddevice), and the headers a named project's sdist compiles against (``build_debian``:
PortAudio's for PyAudio). They go into
the spec with why, so lock, apply and verify take them as the user's own, and the user can
drop them there."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from packaging.utils import canonicalize_name

from envforge.importers.legacy_names import FrameworkRow, legacy_names
from envforge.knowledge.models import ImportDebianRow, InitDebianRow, LibraryDebianRow, in_range
from envforge.packapi import Pack, Registry


class DebianPack(Pack, Protocol):
    """What init asks of a pack for the [debian] section: its rows, of every platform."""

    @property
    def init_debian(self) -> Sequence[InitDebianRow]: ...


@dataclass(frozen=True)
class DebianAddition:
    """One row as init writes it: a pack's, for the mounted ``section``, or one for a name
    the code uses (``section`` None, ``used`` the name and the line that uses it)."""

    section: str | None
    row: InitDebianRow
    where: str  # "the theano pack": where the row came from, for the spec's comment
    used: tuple[str, str] | None = None  # ("gym.wrappers.Monitor", "train.py:3")

    @property
    def cause(self) -> str:
        """What the packages are for: ``[theano]``, or the use that needs them."""
        if self.used is None:
            return f"[{self.section}]"
        return f"{self.used[0]} ({self.used[1]})"


def debian_additions(mounted: Iterable[FrameworkRow], platform: str,
                     registry: Registry[DebianPack],
                     uses: Mapping[str, str] | None = None,
                     resolved: Mapping[str, str] | None = None,
                     named: Mapping[str, str] | None = None) -> list[DebianAddition]:
    """The rows for ``platform`` of the mounted sections' packs, in the sections' order, then
    the ``import_debian`` rows one of whose names the code ``uses`` (name -> "path:line"), the
    ``build_debian`` rows of the projects the draft ``named`` (normalized name -> origin),
    the ``library_debian`` rows of the ``resolved`` releases (name -> version).
    The spec gets one [debian], so a row of another suite than the first's is left out, and
    so is a row setting a key its section already has (the mounted row's own keys, or an
    earlier row's): what the requirements mounted is not overridden."""
    chosen: list[DebianAddition] = []
    for mounted_row in mounted:
        pack = registry.get(mounted_row.section)
        if pack is None:
            continue
        taken = set(mounted_row.keys)
        for row in pack.init_debian:
            if row.platform != platform or not taken.isdisjoint(row.keys):
                continue
            if chosen and row.suite != chosen[0].row.suite:
                continue
            taken |= set(row.keys)
            chosen.append(DebianAddition(mounted_row.section, row, f"the {pack.name} pack"))
    named = named or {}
    wanted: list[tuple[InitDebianRow, tuple[str, str]]] = [
        *used_rows(uses or {}),
        *((row, (f"{row.project}'s build", named[canonicalize_name(row.project)]))
          for row in legacy_names().build_debian if canonicalize_name(row.project) in named),
        *((row, (release, "as resolved")) for row, release in library_rows(resolved or {}))]
    for row, used in wanted:  # knowledge's rows: no section key to set
        if row.platform == platform and (not chosen or row.suite == chosen[0].row.suite):
            chosen.append(DebianAddition(None, row, "knowledge/legacy_names.toml", used))
    return chosen


def library_rows(resolved: Mapping[str, str]) -> list[tuple[LibraryDebianRow, str]]:
    """Each ``library_debian`` row a resolved release (normalized name -> version) is in,
    with that release as ``NAME VERSION``, whatever the platform."""
    found = []
    for row in legacy_names().library_debian:
        version = resolved.get(canonicalize_name(row.project))
        if version is not None and in_range(version, row.versions):
            found.append((row, f"{row.project} {version}"))
    return found


def used_rows(uses: Mapping[str, str]) -> list[tuple[ImportDebianRow, tuple[str, str]]]:
    """Each ``import_debian`` row one of whose names the code uses, with the first such use
    (in the row's order of names), whatever the platform."""
    found = []
    for row in legacy_names().import_debian:
        name = next((n for n in row.names if n in uses), None)
        if name is not None:
            found.append((row, (name, uses[name])))
    return found


def no_debian(uses: Mapping[str, str], platform: str) -> list[str]:
    """For a platform with no row (win-64 has no Debian): each program a module the code
    uses runs, with the use, said in the spec and init's report for the user to install."""
    return list(dict.fromkeys(
        f"{used[0]} ({used[1]}) runs `{row.runs}` from PATH: no [debian] on {platform} "
        f"(Debian's packages are {row.platform}'s), so install {row.runs} on PATH yourself"
        for row, used in used_rows(uses) if row.platform != platform))


def dependencies(added: Sequence[DebianAddition]) -> Literal["named", "closure"]:
    """``closure`` where a row locks its packages with what they depend on (a program's
    many libraries): the section has one ``dependencies``, so every package gets it."""
    return "closure" if any(a.row.dependencies == "closure" for a in added) else "named"


def debian_packages(added: Sequence[DebianAddition]) -> list[str]:
    """Every addition's packages, each once, in order: the section's ``packages``."""
    return list(dict.fromkeys(name for addition in added for name in addition.row.packages))


def section_keys(added: Sequence[DebianAddition], section: str) -> dict[str, str]:
    """The keys the additions set in ``section`` for the platform."""
    return {key: value for addition in added if addition.section == section
            for key, value in addition.row.keys.items()}
