"""The composition root's one registry: the installed packs, loaded once per process from the
entry points and handed down from here as an argument (issue 26)."""

from __future__ import annotations

import functools

from envforge.packapi import Registry
from envforge.packs import FrameworkPack, load_packs


@functools.cache
def installed_packs() -> Registry[FrameworkPack]:
    """The packs of this installation (``envforge.packs`` entry points), in registry order."""
    return load_packs()
