"""The store of Theano's compiled modules: folders kept by their files' sha256 and copied into
a fresh compiledir whole, a damaged file detected and left for Theano to rebuild, a damaged or
unsafe manifest ignored. Real files in a compiledir laid out as Theano-PyMC 1.0.5 lays it."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import sys
from pathlib import Path

import pytest

from envforge.cli import main
from envforge.lockfile import load_lock
from envforge.packs.theano.compilecache import (
    after_probe,
    after_run,
    before_probe,
    before_run,
    keep_suite_modules,
    module_folders,
    publish,
    read_set,
    seed,
    set_key,
    suite_seed,
)
from envforge.packs.theano.expect import TheanoExpect
from envforge.paths import EnvforgeDirs
from envforge.steps.base import StepContext
from envforge.ui import UI
from tests.testing.contexts import make_ctx
from tests.testing.packs import REGISTRY

REPO = Path(__file__).resolve().parents[3]

TOP = "compiledir_Linux-6.1-x86_64-with-debian-12--3.7.16-64"
KEY = "k" * 8


def _module(root: Path, name: str, *, key: bool = True, so: bytes | None = None) -> Path:
    folder = root / TOP / name
    folder.mkdir(parents=True)
    (folder / "mod.cpp").write_text(f"// {name}\n")
    (folder / f"m{name}.so").write_bytes(so or b"\x7fELF " + name.encode())
    (folder / "__init__.py").write_text("")
    if key:
        (folder / "key.pkl").write_bytes(b"pickled key of " + name.encode())
    return folder


@pytest.fixture
def built(tmp_path: Path) -> Path:
    """A compiledir after a verify: modules, Theano's own extensions and what is not kept."""
    root = tmp_path / "p1" / "theano-compiledir"
    _module(root, "tmpaaa")
    _module(root, "tmpbbb")
    lazy = root / TOP / "lazylinker_ext"
    lazy.mkdir()
    (lazy / "lazylinker_ext.so").write_bytes(b"\x7fELF lazylinker")
    (lazy / "__init__.py").write_text("_version = 0.211\n")
    _module(root, "tmpfailed", key=False)  # g++ failed: mod.cpp, no key.pkl
    (_module(root, "tmpold") / "delete.me").write_text("")
    (root / TOP / "lock_dir").mkdir()
    (root / TOP / "lock_dir" / "lock.so").write_bytes(b"not a module")
    return root


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in root.rglob("*") if p.is_file()}


def test_a_fresh_compiledir_gets_every_kept_folder_byte_for_byte(built: Path,
                                                                tmp_path: Path) -> None:
    store = tmp_path / "cache" / "theano-modules"
    assert publish(built, store, KEY) == 3
    assert sorted(module_folders(built)) == [f"{TOP}/lazylinker_ext", f"{TOP}/tmpaaa",
                                             f"{TOP}/tmpbbb"]
    fresh = tmp_path / "p2" / "theano-compiledir"
    done = seed(fresh, store, KEY)
    assert (done.copied, done.rejected) == (3, 0)
    kept = {k: v for k, v in _tree(built).items()
            if k.split("/")[1] in ("tmpaaa", "tmpbbb", "lazylinker_ext")}
    assert _tree(fresh) == kept
    for blob in (store / "blobs").iterdir():
        assert hashlib.sha256(blob.read_bytes()).hexdigest() == blob.name


def test_seeding_leaves_what_the_environment_compiled_itself_alone(built: Path,
                                                                  tmp_path: Path) -> None:
    store = tmp_path / "store"
    publish(built, store, KEY)
    fresh = tmp_path / "p2"
    own = _module(fresh, "tmpzzz", so=b"\x7fELF compiled here")
    assert seed(fresh, store, KEY).copied == 3
    assert (own / "mtmpzzz.so").read_bytes() == b"\x7fELF compiled here"
    assert seed(fresh, store, KEY).copied == 0


def test_a_truncated_module_is_detected_left_out_and_stored_again(built: Path,
                                                                 tmp_path: Path) -> None:
    store = tmp_path / "store"
    publish(built, store, KEY)
    so = built / TOP / "tmpaaa" / "mtmpaaa.so"
    blob = store / "blobs" / hashlib.sha256(so.read_bytes()).hexdigest()
    blob.write_bytes(blob.read_bytes()[:3])
    fresh = tmp_path / "p2"
    done = seed(fresh, store, KEY)
    assert (done.copied, done.rejected) == (2, 1)
    assert not (fresh / TOP / "tmpaaa").exists()  # Theano compiles it again
    assert not blob.exists()
    assert [p.name for p in (fresh / TOP).iterdir() if p.name.startswith(".")] == []
    publish(built, store, KEY)  # the next verify stores it again
    assert blob.read_bytes() == so.read_bytes()
    assert seed(tmp_path / "p3", store, KEY).copied == 3


def test_a_damaged_library_in_the_environment_is_replaced_by_the_stored_one(
        built: Path, tmp_path: Path) -> None:
    """Theano would load it: a truncated module crashed the probe with SIGBUS (exit -7)."""
    store = tmp_path / "store"
    publish(built, store, KEY)
    fresh = tmp_path / "p2"
    seed(fresh, store, KEY)
    so = fresh / TOP / "tmpaaa" / "mtmpaaa.so"
    so.write_bytes(so.read_bytes()[:3])
    (fresh / TOP / "tmpbbb" / "key.pkl").write_bytes(b"keys Theano added since")
    done = seed(fresh, store, KEY)
    assert (done.copied, done.repaired, done.rejected) == (1, 1, 0)
    assert so.read_bytes() == (built / TOP / "tmpaaa" / "mtmpaaa.so").read_bytes()
    assert (fresh / TOP / "tmpbbb" / "key.pkl").read_bytes() == b"keys Theano added since"


def test_a_damaged_or_unsafe_manifest_is_ignored_and_removed(built: Path, tmp_path: Path) -> None:
    store = tmp_path / "store"
    publish(built, store, KEY)
    manifest = store / "sets" / f"{KEY}.json"
    text = manifest.read_text()
    for bad in (text[:40], text.replace(f"{TOP}/tmpaaa", f"{TOP}/../../escaped"),
                text.replace('"lazylinker_ext.so"', '"../lazylinker_ext.so"'),
                text.replace('"folders"', '"format": 1, "extra": 1, "folders"')):
        manifest.write_text(bad)
        assert read_set(store, KEY) is None
        assert not manifest.exists()
        assert seed(tmp_path / "p2", store, KEY).copied == 0
    assert not (tmp_path / "escaped").exists()
    assert not (tmp_path / "p2").exists()


def _key(*, numpy: str = "1.19.5", float_x: str = "float64", gxx: str = "12.2.0",
         python: str = "/root/.pyenv/versions/3.7.16/bin/python3.7") -> str:
    return set_key(platform="linux-64",
                   versions={"numpy": numpy, "theano": "1.0.5", "python": "3.7"},
                   flags={"base_compiledir": "{prefix}/theano-compiledir", "floatX": float_x},
                   python=python, compiler=("/usr/bin/x86_64-linux-gnu-g++-12", gxx))


def test_the_key_is_the_same_for_every_prefix_and_moves_with_what_theano_keys() -> None:
    assert _key() == _key()  # the flags keep {prefix}: every prefix of the lock shares it
    assert len({_key(), _key(numpy="1.18.5"), _key(float_x="float32"), _key(gxx="12.3.0"),
                _key(python="/usr/bin/python3.7")}) == 5


def test_verify_of_a_prefix_never_applied_still_says_so(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("ENVFORGE_HOME", str(tmp_path / "envforge"))
    spec = REPO / "specs" / "theano-cpu.toml"
    code = main(["verify", str(spec), "--prefix", str(tmp_path / "none")])
    assert code == 2  # verify's one line for an environment that is not there
    assert "not applied at" in capsys.readouterr().err
    assert not (tmp_path / "none").exists()


def _ctx(tmp: Path, *, flags: dict[str, str] | None = None) -> StepContext:
    """An applied-looking prefix of theano-cpu's lock in ``tmp``, envforge's cache beside it:
    its Python, an empty activation, and the host's own g++ on PATH (part of the key)."""
    plock = load_lock(REPO / "locks" / "theano-cpu.lock", REGISTRY).platforms["linux-64"]
    if flags is not None:
        packs = {**plock.expect.packs, "theano": TheanoExpect(flags=flags)}
        plock = plock.model_copy(update={"expect": plock.expect.model_copy(
            update={"packs": packs})})
    ctx = dataclasses.replace(make_ctx(tmp, "linux-64", None,
                                       environ={"PATH": os.environ["PATH"]}),
                              lock=plock, ui=UI(quiet=True),
                              dirs=EnvforgeDirs(tmp.parent / "cache", tmp / "data", tmp / "state"))
    python = Path(ctx.layout.python)
    python.parent.mkdir(parents=True)
    python.symlink_to(sys.executable)
    (ctx.prefix / "envforge-env.json").write_text("[]", encoding="utf-8")
    return ctx


@pytest.mark.posix_only("the prefix's Python is a symlink to this interpreter")
def test_two_prefixes_of_one_lock_share_the_store(tmp_path: Path) -> None:
    first, second = _ctx(tmp_path / "a"), _ctx(tmp_path / "b")
    _module(Path(first.layout.compiledir), "tmpaaa")
    after_probe(first, passed=True)
    before_probe(second)
    assert _tree(Path(second.layout.compiledir)) == _tree(Path(first.layout.compiledir))
    own = _ctx(tmp_path / "c", flags={"base_compiledir": "/srv/theano", "device": "cpu"})
    before_probe(own)  # the spec's own compiledir is left alone, and so is the store
    assert not Path(own.layout.compiledir).exists()
    after_probe(own, passed=True)
    third = _ctx(tmp_path / "d")
    _module(Path(third.layout.compiledir), "tmpccc")
    after_probe(third, passed=False)  # a failing verify passes nothing on
    sets = tmp_path / "cache" / "theano-modules" / "sets"
    assert all("tmpccc" not in manifest.read_text() for manifest in sets.iterdir())
    assert len(list(sets.iterdir())) == 1


@pytest.mark.posix_only("the prefix's Python is a symlink to this interpreter")
def test_a_store_the_host_refuses_costs_a_warning_not_the_verify(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ctx = dataclasses.replace(_ctx(tmp_path / "a"), ui=UI())
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "theano-modules").write_text("a file where the store goes")
    _module(Path(ctx.layout.compiledir), "tmpaaa")
    after_probe(ctx, passed=True)
    before_probe(_ctx(tmp_path / "b"))
    err = capsys.readouterr().err
    assert "theano: compiled modules not stored in" in err
    assert "theano: compiled modules not reused from" in err


@pytest.mark.posix_only("the prefix's Python is a symlink to this interpreter")
def test_a_runs_own_modules_are_added_to_the_store_and_reach_the_next_prefix(
        tmp_path: Path) -> None:
    """verify stores what its probe compiled; a run's command compiles the model's own ops,
    added beside them once it exits 0, and the next prefix's run starts with both."""
    first, second = _ctx(tmp_path / "a"), _ctx(tmp_path / "b")
    compiledir = Path(first.layout.compiledir)
    _module(compiledir, "tmpprobe")
    after_probe(first, passed=True)
    _module(compiledir, "tmpmodel")
    after_run(first, succeeded=True)
    _module(compiledir, "tmpcrashed")
    after_run(first, succeeded=False)  # a command that failed passes nothing on
    before_run(second)
    assert sorted(p.name for p in (Path(second.layout.compiledir) / TOP).iterdir()) == [
        "tmpmodel", "tmpprobe"]
    assert _tree(Path(second.layout.compiledir) / TOP / "tmpmodel") == _tree(
        compiledir / TOP / "tmpmodel")


@pytest.mark.posix_only("the prefix's Python is a symlink to this interpreter")
def test_a_run_keeps_the_stored_folders_and_reads_none_of_the_environments_own(
        tmp_path: Path) -> None:
    """A run's merge reads only folders the store lacks (verify's publish reads them all), and
    its seeding copies only what the environment lacks: a library the environment holds is
    not hashed on each run (verify repairs a damaged one)."""
    first, second = _ctx(tmp_path / "a"), _ctx(tmp_path / "b")
    _module(Path(first.layout.compiledir), "tmpaaa", so=b"\x7fELF stored")
    after_probe(first, passed=True)
    own = _module(Path(second.layout.compiledir), "tmpaaa", so=b"\x7fELF built here")
    _module(Path(second.layout.compiledir), "tmpbbb")
    after_run(second, succeeded=True)
    store = tmp_path / "cache" / "theano-modules"
    (manifest,) = (store / "sets").iterdir()
    found = read_set(store, manifest.stem)
    assert found is not None and f"{TOP}/tmpbbb" in found.folders
    assert found.folders[f"{TOP}/tmpaaa"]["mtmpaaa.so"] == hashlib.sha256(
        b"\x7fELF stored").hexdigest()
    before_run(second)
    assert (own / "mtmpaaa.so").read_bytes() == b"\x7fELF built here"
    before_probe(second)  # verify's seeding compares it with the store's
    assert (own / "mtmpaaa.so").read_bytes() == b"\x7fELF stored"


@pytest.mark.posix_only("the prefix's Python is a symlink to this interpreter")
def test_the_suites_modules_seed_its_next_run_and_never_a_prefix(tmp_path: Path) -> None:
    """verify --suite compiles hundreds of modules verify and run never use: kept in a set of
    their own after a run that passed, copied into the next run's starting folder beside
    the environment's, never into an environment."""
    first, second = _ctx(tmp_path / "a"), _ctx(tmp_path / "b")
    _module(Path(first.layout.compiledir), "tmpprobe")
    after_probe(first, passed=True)
    workers = [tmp_path / "run" / "gw0", tmp_path / "run" / "gw1"]
    _module(workers[0], "tmpsuite0")
    _module(workers[1], "tmpsuite1")
    keep_suite_modules(first, [tmp_path / "run" / "gw9"], passed=False)
    keep_suite_modules(first, workers, passed=True)
    before_probe(second)
    before_run(second)
    assert [p.name for p in (Path(second.layout.compiledir) / TOP).iterdir()] == ["tmpprobe"]
    seeded = suite_seed(second, tmp_path / "seed")
    assert seeded == tmp_path / "seed"
    assert sorted(p.name for p in (seeded / TOP).iterdir()) == [
        "tmpprobe", "tmpsuite0", "tmpsuite1"]
    own = _ctx(tmp_path / "c", flags={"base_compiledir": "/srv/theano", "device": "cpu"})
    assert suite_seed(own, tmp_path / "seed2") is None  # the spec's own compiledir: as before
