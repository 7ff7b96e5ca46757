"""The ``[debian]`` section init writes: the packages a mounted pack asks for on the spec's
platform (its ``init_debian`` rows: Theano's OpenBLAS on linux-64), with the keys of its
section that use them. They go into the spec with why, so lock, apply and verify take them
as the user's own, and the user can drop them there."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from envforge.importers.legacy_names import FrameworkRow
from envforge.knowledge.models import InitDebianRow
from envforge.packapi import Pack, Registry


class DebianPack(Pack, Protocol):
    """What init asks of a pack for the [debian] section: its rows, of every platform."""

    @property
    def init_debian(self) -> Sequence[InitDebianRow]: ...


@dataclass(frozen=True)
class DebianAddition:
    """One pack's row as init writes it, for the mounted ``section``."""

    section: str
    row: InitDebianRow
    where: str  # "the theano pack": where the row came from, for the spec's comment


def debian_additions(mounted: Iterable[FrameworkRow], platform: str,
                     registry: Registry[DebianPack]) -> list[DebianAddition]:
    """The rows for ``platform`` of the mounted sections' packs, in the sections' order.
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
    return chosen


def debian_packages(added: Sequence[DebianAddition]) -> list[str]:
    """Every addition's packages, each once, in order: the section's ``packages``."""
    return list(dict.fromkeys(name for addition in added for name in addition.row.packages))


def section_keys(added: Sequence[DebianAddition], section: str) -> dict[str, str]:
    """The keys the additions set in ``section`` for the platform."""
    return {key: value for addition in added if addition.section == section
            for key, value in addition.row.keys.items()}
