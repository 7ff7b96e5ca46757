"""Every registered pack keeps the registry's promises: its name is its key, its folder, its
spec section and its lock table; its knowledge files exist; its migrations are of its own
table's formats older than its current one."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from envforge.knowledge import KNOWLEDGE_FILES
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
    assert all(0 <= version < pack.lock_version for version in pack.lock_migrations)
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
    _distribution(tmp_path, "class Pack:\n    name = 'aardvark'\n\n\nPACK = Pack()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    found = load_packs()
    assert found.names == ("theano", "tensorflow", "keras", "aardvark", "torch")
    assert found.get("aardvark") is not None


def _distribution(folder: Path, module: str) -> None:
    """A pack distribution as pip leaves it: its module and its dist-info with the entry point."""
    (folder / "envforge_aardvark.py").write_text(module, encoding="utf-8")
    info = folder / "envforge_aardvark-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: envforge-aardvark\n"
                                   "Version: 1.0\n", encoding="utf-8")
    (info / "entry_points.txt").write_text("[envforge.packs]\naardvark = envforge_aardvark:PACK\n",
                                           encoding="utf-8")


def test_a_pack_importing_the_core_at_its_top_loads(tmp_path: Path) -> None:
    """A pack of its own distribution imports what it uses at the top of its module, verify's
    CheckRow and doctor's findings: only the app layer loads the packs, after the core is
    imported, so no module is half imported when the pack's is (a fresh interpreter, so the
    order of imports is the one a user's command has)."""
    _distribution(tmp_path, "from envforge.doctor.model import Finding\n"
                            "from envforge.verify import CheckRow\n\n\n"
                            "class Pack:\n    name = 'aardvark'\n\n\nPACK = Pack()\n")
    # put on sys.path by the script: the Windows lane's embeddable Python ignores PYTHONPATH
    script = (f"import sys\nsys.path.insert(0, {str(tmp_path)!r})\n"
              "from envforge.app.packs import installed_packs\nprint(installed_packs().names)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert "'aardvark'" in done.stdout


def test_without_metadata_the_built_in_packs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("envforge.packs.entry_points", lambda group: [])
    assert list(load_packs()) == list(BUILT_IN)


def test_a_pack_s_table_format_is_its_model_s() -> None:
    """A lock is written with no registry at hand, so the format beside a pack's table is its
    model's ``lock_version``: each pack's own number agrees with it."""
    from envforge.lockfile import table_version

    assert {pack.name: pack.lock_version for pack in REGISTRY} == \
        {pack.name: table_version(pack.expect) for pack in REGISTRY}
    theano = REGISTRY.get("theano")
    assert theano is not None and theano.lock_version == 2
