"""Every registered pack keeps the registry's promises: its name is its key, its folder, its
spec section and its lock table; its knowledge files exist; its migrations start from a
format older than today's."""

from __future__ import annotations

from importlib.metadata import entry_points
from pathlib import Path

import pytest

from envforge.knowledge import KNOWLEDGE_FILES
from envforge.lockfile import LOCK_VERSION
from envforge.packs import BUILT_IN, ENTRY_POINTS, FrameworkPack, load_packs
from tests.testing.packs import REGISTRY

PACKAGE = Path(__file__).resolve().parents[2] / "envforge"


@pytest.mark.parametrize("pack", list(REGISTRY), ids=list(REGISTRY.names))
def test_a_pack_is_what_the_registry_says(pack: FrameworkPack) -> None:
    assert REGISTRY.get(pack.name) is pack
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


def test_the_registry_is_the_entry_point_group() -> None:
    """Built-in packs register as a third-party one would: pyproject.toml's entry points."""
    points = {point.name: point.load() for point in entry_points(group=ENTRY_POINTS)}
    assert {"theano", "tensorflow", "keras", "torch"} <= set(points), \
        "the installed metadata predates the entry points: reinstall envforge (make setup)"
    assert points == dict(zip(REGISTRY.names, REGISTRY, strict=True))
    assert REGISTRY.names[:4] == ("theano", "tensorflow", "keras", "torch")


def test_a_pack_of_its_own_distribution_is_found(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A distribution on sys.path (its dist-info and module, as pip leaves them) whose entry
    point names a pack: the registry loads it after the first three, ordered by name."""
    (tmp_path / "envforge_aardvark.py").write_text(
        "class Pack:\n    name = 'aardvark'\n\n\nPACK = Pack()\n", encoding="utf-8")
    info = tmp_path / "envforge_aardvark-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: envforge-aardvark\n"
                                   "Version: 1.0\n", encoding="utf-8")
    (info / "entry_points.txt").write_text("[envforge.packs]\naardvark = envforge_aardvark:PACK\n",
                                           encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    found = load_packs()
    assert found.names == ("theano", "tensorflow", "keras", "aardvark", "torch")
    assert found.get("aardvark") is not None


def test_without_metadata_the_built_in_packs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("envforge.packs.entry_points", lambda group: [])
    assert list(load_packs()) == list(BUILT_IN)
