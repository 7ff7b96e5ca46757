"""The framework packs, found through the entry-point group ``envforge.packs``
(pyproject.toml), the built-in ones too, so a pack shipped as its own distribution registers
the same way. Only the app layer calls ``load_packs``; the ``Registry`` it returns is handed
down to the core as an argument.
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any

from envforge.packapi import Registry
from envforge.packs.base import FrameworkPack
from envforge.packs.keras import KERAS
from envforge.packs.tensorflow import TENSORFLOW
from envforge.packs.theano import THEANO
from envforge.packs.torch import TORCH

if TYPE_CHECKING:
    from envforge.lockfile import Expectations
    from envforge.spec import PlatformSpec

__all__ = ["PACKS", "FrameworkPack", "Registry", "active_packs", "load_packs", "locked_packs",
           "mounted"]

ENTRY_POINTS = "envforge.packs"
BUILT_IN: tuple[FrameworkPack, ...] = (THEANO, TENSORFLOW, KERAS, TORCH)
# Registry order decides which pack runs the core's kernels and the order of rows.
_FIRST = ("theano", "tensorflow", "keras")


def load_packs() -> Registry[FrameworkPack]:
    """Every pack of the ``envforge.packs`` entry points, by name: theano, tensorflow, keras,
    then the others by name. Only where no entry point is registered (envforge run from a
    source tree or bundle whose distribution metadata is absent) the built-in packs: without
    them nothing could be locked or verified, while a present but partial metadata is what
    the user installed and is taken as it is."""
    found: dict[str, FrameworkPack] = {}
    for point in entry_points(group=ENTRY_POINTS):
        pack: FrameworkPack = point.load()
        found.setdefault(pack.name, pack)
    if not found:
        found = {pack.name: pack for pack in BUILT_IN}
    rank = {name: index for index, name in enumerate(_FIRST)}
    return Registry([found[name] for name in
                     sorted(found, key=lambda name: (rank.get(name, len(rank)), name))])


_LOADED = load_packs()
PACKS: dict[str, FrameworkPack] = dict(zip(_LOADED.names, _LOADED, strict=True))


def mounted(raw: Mapping[str, Any]) -> list[FrameworkPack]:
    """The packs a spec's sections call for, in registry order; where it names none, the
    implicit ones (a spec without [theano] is a Theano stack, as before packs existed)."""
    named = [pack for name, pack in PACKS.items() if name in raw]
    return named or [pack for pack in PACKS.values() if pack.implicit]


def active_packs(pspec: PlatformSpec) -> list[FrameworkPack]:
    """The packs mounted in one platform's view of a spec, in registry order."""
    return [pack for name, pack in PACKS.items() if name in pspec.packs]


def locked_packs(expect: Expectations) -> list[FrameworkPack]:
    """The packs a lock holds expectations for, in registry order."""
    return [pack for name, pack in PACKS.items() if name in expect.packs]
