"""Lock format 1 (Theano's flags in the core tables) is read through the pack's migration:
the committed format-1 lock of theano-cpu reads as today's format less what format 3 added
(the apply table, where the rc file goes: only the spec can tell), and completed from its
spec, as `envforge lock` does, rewrites to the committed bytes."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from envforge.errors import SpecError
from envforge.lockfile import LOCK_VERSION, Lockfile, dumps_lock, load_lock
from envforge.lockplan import completed
from envforge.packs.theano.expect import TheanoExpect, theano_expect
from envforge.spec import load_spec
from tests.testing.packs import REGISTRY

REPO = Path(__file__).resolve().parents[3]
V1 = Path(__file__).parent / "data" / "theano-cpu.v1.lock"  # locks/theano-cpu.lock as format 1
COMMITTED = REPO / "locks" / "theano-cpu.lock"


def test_format_1_reads_as_today_s_format() -> None:
    assert 'theano_flag_spelling = "dots"' in V1.read_text(encoding="utf-8")
    old, new = load_lock(V1, REGISTRY), load_lock(COMMITTED, REGISTRY)
    assert LOCK_VERSION == 3 and old.meta.version == 3
    assert all(plock.apply is None for plock in old.platforms.values())
    assert old.platforms.keys() == new.platforms.keys()
    for name, plock in old.platforms.items():
        assert plock.model_copy(update={"apply": new.platforms[name].apply}) == new.platforms[name]
    flags = theano_expect(old.platforms["linux-64"].expect)
    assert flags.flag_spelling == "dots" and flags.flags["device"] == "cpu"


def test_format_1_completed_from_its_spec_rewrites_to_the_committed_bytes() -> None:
    spec = load_spec(REPO / "specs" / "theano-cpu.toml", REGISTRY)
    old = load_lock(V1, REGISTRY)
    done = Lockfile(meta=old.meta, platforms={
        name: completed(plock, spec.for_platform(name), REGISTRY)
        for name, plock in old.platforms.items()})
    assert dumps_lock(done) == COMMITTED.read_text(encoding="utf-8")


def test_a_bad_flag_in_a_lock_names_its_key_and_line(tmp_path: Path) -> None:
    path = tmp_path / "x.lock"
    shutil.copyfile(COMMITTED, path)
    text = path.read_text(encoding="utf-8")
    table = "[platforms.linux-64.expect.theano.flags]\n"
    path.write_text(text.replace(table, table + '"global.device" = "cuda"\n'), encoding="utf-8")
    with pytest.raises(SpecError) as error:
        load_lock(path, REGISTRY)
    assert error.value.key == "platforms.linux-64.expect.theano.flags.global.device.[key]"
    assert error.value.line == text[:text.index(table)].count("\n") + 2


def test_a_lock_without_theano_has_no_flags() -> None:
    expect = load_lock(COMMITTED, REGISTRY).platforms["linux-64"].expect
    assert theano_expect(expect.model_copy(update={"packs": {}})) == TheanoExpect(flags={})


def test_a_packs_table_written_in_the_lock_is_refused(tmp_path: Path) -> None:
    """Only a pack's own name takes its table: ``expect.packs`` is no way around the model."""
    path = tmp_path / "x.lock"
    text = COMMITTED.read_text(encoding="utf-8")
    path.write_text(text.replace("[platforms.linux-64.expect.theano]\n",
                                 "[platforms.linux-64.expect.packs.theano]\n"), encoding="utf-8")
    with pytest.raises(SpecError) as error:
        load_lock(path, REGISTRY)
    assert error.value.key == "platforms.linux-64.expect"
