"""The framework packs, found through the entry-point group ``envforge.packs``
(pyproject.toml), the built-in ones too, so a pack shipped as its own distribution registers
the same way. Only the app layer calls ``load_packs``; the ``Registry`` it returns is handed
down to the core as an argument.
"""

from __future__ import annotations

from importlib.metadata import entry_points

from envforge.packapi import Registry
from envforge.packs.base import FrameworkPack
from envforge.packs.keras import KERAS
from envforge.packs.tensorflow import TENSORFLOW
from envforge.packs.theano import THEANO
from envforge.packs.torch import TORCH

__all__ = ["BUILT_IN", "ENTRY_POINTS", "FrameworkPack", "Registry", "load_packs"]

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
