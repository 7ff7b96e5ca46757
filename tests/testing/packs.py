"""The built-in packs' registry, as the app layer builds it, for tests that read specs and
locks or call the core (which takes the registry as an argument)."""

from __future__ import annotations

from envforge.packapi import Registry
from envforge.packs import FrameworkPack, load_packs

REGISTRY: Registry[FrameworkPack] = load_packs()
