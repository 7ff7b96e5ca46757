"""The registry of framework packs: a dict by name, as pre-commit's ``all_languages``.

Packs are found through the entry-point group ``envforge.packs`` (pyproject.toml), the
built-in ones too, so a pack shipped as its own distribution registers the same way; the
core finds a pack through these functions only.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, MutableMapping
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any

from envforge.packs.base import FrameworkPack
from envforge.packs.keras import KERAS
from envforge.packs.tensorflow import TENSORFLOW
from envforge.packs.theano import THEANO
from envforge.packs.torch import TORCH

if TYPE_CHECKING:
    from envforge.lockfile import Expectations
    from envforge.spec import PlatformSpec

__all__ = ["PACKS", "FrameworkPack", "active_packs", "locked_packs", "mounted"]

ENTRY_POINTS = "envforge.packs"
BUILT_IN: tuple[FrameworkPack, ...] = (THEANO, TENSORFLOW, KERAS, TORCH)
# Registry order decides which pack runs the core's kernels and the order of rows.
_FIRST = ("theano", "tensorflow", "keras")


def load_packs() -> dict[str, FrameworkPack]:
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
    return {name: found[name] for name in
            sorted(found, key=lambda name: (rank.get(name, len(rank)), name))}


class _Registry(MutableMapping[str, FrameworkPack]):
    """The packs by name, loaded from the entry points on first use, not when this module is
    imported: a pack shipped as its own distribution imports envforge's modules at its top
    (``envforge.verify``, ``envforge.doctor``), which import this one, so loading it here
    would import that pack while this module is half made."""

    def __init__(self) -> None:
        self._packs: dict[str, FrameworkPack] | None = None
        self._lock = threading.RLock()
        self._loading = False

    def _loaded(self) -> dict[str, FrameworkPack]:
        with self._lock:
            if self._packs is None:
                if self._loading:
                    raise RuntimeError("a pack asked for the registry while it was loaded")
                self._loading = True
                try:
                    self._packs = load_packs()
                finally:
                    self._loading = False
            return self._packs

    def __getitem__(self, name: str) -> FrameworkPack:
        return self._loaded()[name]

    def __setitem__(self, name: str, pack: FrameworkPack) -> None:
        self._loaded()[name] = pack

    def __delitem__(self, name: str) -> None:
        del self._loaded()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._loaded())

    def __len__(self) -> int:
        return len(self._loaded())


PACKS: MutableMapping[str, FrameworkPack] = _Registry()


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
