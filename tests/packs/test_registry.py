"""Every registered pack keeps the registry's promises: its name is its key, its folder, its
spec section and its lock table; its knowledge files exist; its migrations start from a
format older than today's."""

from __future__ import annotations

from pathlib import Path

import pytest

from envforge.knowledge import KNOWLEDGE_FILES
from envforge.lockfile import LOCK_VERSION
from envforge.packs import PACKS, FrameworkPack

PACKAGE = Path(__file__).resolve().parents[2] / "envforge"


@pytest.mark.parametrize("pack", PACKS.values(), ids=list(PACKS))
def test_a_pack_is_what_the_registry_says(pack: FrameworkPack) -> None:
    assert PACKS[pack.name] is pack
    assert (PACKAGE / "packs" / pack.name / "__init__.py").is_file()
    for name in pack.knowledge:
        assert name not in KNOWLEDGE_FILES  # the core's; a pack types and reads its own
        assert (PACKAGE / "packs" / pack.name / f"{name}.toml").is_file()
        assert not (PACKAGE / "knowledge" / f"{name}.toml").exists()
    assert all(1 <= version < LOCK_VERSION for version in pack.lock_migrations)
    assert pack.probe is None or pack.probe.is_file()
    if pack.implicit:
        pack.section()  # mounted with its defaults: every key must have one
    assert pack.section.model_config.get("extra") == "forbid"
    assert pack.expect.model_config.get("extra") == "forbid"
    assert pack.section.model_config.get("frozen") and pack.expect.model_config.get("frozen")
