"""Issue 27 for real: theano-cpu (less its scan and random kernels) applied into two prefixes
with the real Python 3.7, the first verified with an empty store (g++ compiles every module),
the second seeded from it with one stored module truncated; the second compiles only that
one, the BLAS ops (whose key names the prefix) and at most one more (Theano rebuilds one even
in its own compiledir: bench/results/theano-compile-cache.md); a model's own ops that a run
compiled in the first reach the second's run from the store; and rolling it back leaves the
store and the first environment as they were. With seeding off (all eight kernels), the
second compiled 46 modules besides the BLAS ops."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from envforge.cli import main
from envforge.packs.theano.compilecache import module_folders, read_set
from tests.commands.test_apply import snapshot

REPO = Path(__file__).resolve().parents[3]
SPEC = REPO / "specs" / "theano-cpu.toml"

pytestmark = [pytest.mark.slow, pytest.mark.network,
              pytest.mark.posix_only("applies the Linux Python 3.7 from pyenv")]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("PYENV_ROOT", os.environ.get("PYENV_ROOT", str(Path.home() / ".pyenv")))
    (tmp_path / "home").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("ENVFORGE_HOME", str(tmp_path / "envforge"))
    yield tmp_path / "envforge"


OWN_OPS = """
import numpy as np, theano, theano.tensor as T
x = T.matrix("x")
f = theano.function([x], T.cosh(x) ** 3 + T.arctan(x).sum(axis=0))
assert np.isfinite(f(np.ones((2, 3), dtype=x.dtype))).all()
"""


def _names_prefix(folder: Path, prefix: Path) -> bool:
    """Whether the module's key holds the prefix beyond its own path (BLAS's rpath)."""
    return f"-Wl,-rpath,{prefix}".encode() in (folder / "key.pkl").read_bytes()


KERNELS = 'kernels = ["elementwise", "gemm", "conv", "scan", "grad", "random", "softmax_xent", ' \
    '"train"]'


@pytest.fixture
def spec(tmp_path: Path) -> Path:
    """theano-cpu without the scan and random kernels, locked here: the same kinds of modules
    (the BLAS ops among them) for two thirds of the test's CPU (86 -> 57 s run alone: scan's
    and random's graphs are the most modules of a cold verify)."""
    text = SPEC.read_text(encoding="utf-8")
    assert KERNELS in text
    path = tmp_path / "project" / "specs" / SPEC.name
    path.parent.mkdir(parents=True)
    kernels = 'kernels = ["elementwise", "gemm", "conv", "grad", "softmax_xent", "train"]'
    path.write_text(text.replace(KERNELS, kernels), encoding="utf-8")
    assert main(["lock", str(path), "--quiet"]) == 0
    return path


def test_a_second_prefix_reuses_the_first_ones_modules(home: Path, tmp_path: Path,
                                                        spec: Path) -> None:
    first, second = tmp_path / "envs" / "first", tmp_path / "envs" / "second"
    for prefix in (first, second):
        assert main(["apply", str(spec), "--yes", "--quiet", "--prefix", str(prefix)]) == 0
    assert main(["verify", str(spec), "--quiet", "--prefix", str(first)]) == 0

    store = home / "cache" / "theano-modules"
    (manifest,) = (store / "sets").iterdir()
    stored = read_set(store, manifest.stem)
    assert stored is not None
    compiledir = first / "theano-compiledir"
    built = module_folders(compiledir)
    assert sorted(stored.folders) == sorted(built) and len(built) > 25, len(built)
    damaged = next(rel for rel in sorted(built) if rel.rpartition("/")[2].startswith("tmp")
                   and not _names_prefix(compiledir / rel, first))
    so = next(name for name in stored.folders[damaged] if name.endswith(".so"))
    blob = store / "blobs" / stored.folders[damaged][so]
    blob.write_bytes(blob.read_bytes()[:4096])

    assert main(["verify", str(spec), "--quiet", "--prefix", str(second)]) == 0
    mine = second / "theano-compiledir"
    compiled = {rel for rel in module_folders(mine) if rel not in stored.folders}
    rebuilt = {rel for rel in compiled if (mine / rel / so).is_file()}
    assert damaged not in module_folders(mine) and len(rebuilt) == 1
    assert (mine / rebuilt.pop() / so).stat().st_size > 4096
    blas = {rel for rel in compiled if _names_prefix(mine / rel, second)}
    assert len(compiled - blas) <= 2, sorted(compiled - blas)
    assert len(compiled) * 5 < len(built), (len(compiled), len(built))

    # a model's own ops, which verify never compiles: built by a run in the first prefix,
    # stored once it exited 0, and copied into the second, not built again (Theano names a
    # module's folder at random: the second holds the first's folder)
    known = set(module_folders(compiledir)) | set(read_set(store, manifest.stem).folders)
    assert main(["run", str(spec), "--prefix", str(first), "--", "python", "-c", OWN_OPS]) == 0
    added = set(module_folders(compiledir)) - known
    assert added and added <= set(read_set(store, manifest.stem).folders)
    before = set(module_folders(mine)) | set(read_set(store, manifest.stem).folders)
    assert not added & set(module_folders(mine))
    assert main(["run", str(spec), "--prefix", str(second), "--", "python", "-c", OWN_OPS]) == 0
    assert added <= set(module_folders(mine))
    # g++ built at most the one Theano rebuilds in any process (bench/results/
    # theano-compile-cache.md), not the run's own ops
    assert len(set(module_folders(mine)) - before) <= 1 < len(added), sorted(added)

    kept, theirs = snapshot(store), snapshot(compiledir)
    assert main(["rollback", str(spec), "--prefix", str(second)]) == 0
    assert not second.exists()
    assert snapshot(store) == kept and snapshot(compiledir) == theirs
    assert main(["rollback", str(spec), "--prefix", str(first)]) == 0
    assert snapshot(store) == kept
