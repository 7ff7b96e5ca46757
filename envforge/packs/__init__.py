"""The registry of framework packs: a dict by name, as pre-commit's ``all_languages``.

Adding a framework is a folder here, an entry below, its knowledge file and a spec; the
core finds the pack through these functions only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from envforge.packs.base import FrameworkPack
from envforge.packs.keras import KERAS
from envforge.packs.tensorflow import TENSORFLOW
from envforge.packs.theano import THEANO

if TYPE_CHECKING:
    from envforge.lockfile import Expectations
    from envforge.spec import PlatformSpec

__all__ = ["PACKS", "FrameworkPack", "active_packs", "locked_packs", "mounted"]

PACKS: dict[str, FrameworkPack] = {
    THEANO.name: THEANO,
    TENSORFLOW.name: TENSORFLOW,
    KERAS.name: KERAS,
}


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
