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


def test_format_2_moves_the_cublas_floor_into_theano_s_table(tmp_path: Path) -> None:
    """Core format 2 kept Theano's GEMM-to-cuBLAS floor in the core table: Theano's table
    format 2 holds it, and a TensorFlow GPU lock, where nothing read it, drops it."""
    gpu = load_lock(REPO / "locks" / "theano-gpu-linux.lock", REGISTRY).platforms["linux-64"].expect
    assert theano_expect(gpu).min_cublas_ratio == 0.9
    assert "min_cublas_ratio" not in gpu.model_dump()
    tf_gpu = REPO / "locks" / "tf1-gpu-cuda100.lock"
    today = tf_gpu.read_text(encoding="utf-8")
    text = today.replace("\nversion = 3\n", "\nversion = 2\n").replace(  # as format 2 wrote it
        'float_x = "float32"\nrepeats = 3\n',
        'float_x = "float32"\nmin_cublas_ratio = 0.9\nrepeats = 3\n')
    assert text.count("min_cublas_ratio") == 2
    path = tmp_path / "tf.lock"
    path.write_text(text, encoding="utf-8")
    assert dumps_lock(load_lock(path, REGISTRY)) == today


def test_format_2_takes_both_steps_to_format_3(tmp_path: Path) -> None:
    """The one step from format 2 to 3: Theano's table takes the cuBLAS floor from the core
    table (its own format 1 -> 2), and the apply table, which format 2 did not record, is
    left for the spec: completed from it, as `envforge lock` does, the committed bytes."""
    committed = REPO / "locks" / "theano-gpu-linux.lock"
    today = committed.read_text(encoding="utf-8")
    apply_table = '[platforms.linux-64.apply]\npath_scope = "env"\n\n' \
        '[platforms.linux-64.apply.compiler]\nkind = "gcc"\n\n'
    own = 'lock_version = 2\nmin_cublas_ratio = 0.9\n'
    core = 'float_x = "float32"\nmin_gpu_speedup'
    assert today.count(apply_table) == today.count(own) == today.count(core) == 1
    path = tmp_path / "gpu.lock"
    path.write_text(today.replace("\nversion = 3\n", "\nversion = 2\n").replace(apply_table, "")
                    .replace(own, "").replace(core, 'float_x = "float32"\nmin_cublas_ratio = 0.9'
                                                   '\nmin_gpu_speedup'), encoding="utf-8")
    old = load_lock(path, REGISTRY)
    assert old.meta.version == 3 and old.platforms["linux-64"].apply is None
    assert theano_expect(old.platforms["linux-64"].expect).min_cublas_ratio == 0.9
    spec = load_spec(REPO / "specs" / "theano-gpu-linux.toml", REGISTRY)
    done = Lockfile(meta=old.meta, platforms={
        name: completed(plock, spec.for_platform(name), REGISTRY)
        for name, plock in old.platforms.items()})
    assert dumps_lock(done) == today


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
