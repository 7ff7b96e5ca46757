"""The no-op fast path on a real theano-cpu environment: after any change to the lock, the
spec, a managed file or the environment (not what using it writes), or to a cache file an
``--offline`` no-op read, it falls through and the real path decides."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from envforge import __version__
from envforge.cli import main
from envforge.host import noopstamp

REPO = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.slow, pytest.mark.network]


@pytest.fixture(scope="module")
def applied(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    """theano-cpu applied once from a copy of the project (its spec is edited below)."""
    root = tmp_path_factory.mktemp("noop")
    for folder, name in (("specs", "theano-cpu.toml"), ("locks", "theano-cpu.lock")):
        (root / folder).mkdir()
        shutil.copy2(REPO / folder / name, root / folder / name)
    home = root / "home"
    home.mkdir()
    saved = dict(os.environ)
    os.environ.update({"ENVFORGE_HOME": str(root / "envforge-home"), "HOME": str(home),
                       "PYENV_ROOT": saved.get("PYENV_ROOT", str(Path.home() / ".pyenv"))})
    prefix = root / "envforge-home" / "data" / "envs" / "theano-cpu"
    spec = root / "specs" / "theano-cpu.toml"
    try:
        assert main(["apply", str(spec), "--yes"]) == 0
        yield {"root": root, "spec": spec, "lock": root / "locks" / "theano-cpu.lock",
               "prefix": prefix, "site": prefix / "lib" / "python3.7" / "site-packages"}
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _words(files: dict[str, Path], *more: str) -> list[str]:
    return ["apply", str(files["spec"]), "--yes", *more]


def _fast(files: dict[str, Path], *more: str) -> bool:
    return noopstamp.try_noop(_words(files, *more), cwd=str(Path.cwd()), environ=os.environ,
                              version=__version__) == 0


def _settle(files: dict[str, Path]) -> None:
    """A real no-op, past the racy window of the last writes: the stamp holds again, from
    its first writing on (writing it changes nothing it records)."""
    time.sleep(noopstamp.RACY_NS / 1e9 + 0.1)
    shutil.rmtree(Path(os.environ["ENVFORGE_HOME"]) / "cache" / "noop", ignore_errors=True)
    assert main(_words(files)) == 0
    assert _fast(files)


def test_noop_apply_is_fast_until_something_changes(
        applied: dict[str, Path], capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    _settle(applied)
    capsys.readouterr()
    assert main(_words(applied)) == 0
    assert capsys.readouterr().err.strip() == (
        f"{applied['spec']}: nothing to do ({applied['prefix']})")

    # the lock rewritten with the same bytes: the real path decides (nothing to do)
    applied["lock"].write_bytes(applied["lock"].read_bytes())
    assert not _fast(applied)
    _settle(applied)

    # a managed file edited: the real path puts it back
    rc = applied["prefix"] / "etc" / "theanorc"
    good = rc.read_bytes()
    rc.write_text("[global]\ndevice = cuda\n")
    assert not _fast(applied)
    assert main(_words(applied)) == 0
    assert rc.read_bytes() == good
    _settle(applied)

    # a package removed from the environment: the real path installs it again
    shutil.rmtree(applied["site"] / "six-1.16.0.dist-info")
    (applied["site"] / "six.py").unlink()
    assert not _fast(applied)
    assert main(_words(applied)) == 0
    assert (applied["site"] / "six-1.16.0.dist-info").is_dir()
    _settle(applied)

    # the environment's variables changed
    monkeypatch.setenv("THEANO_FLAGS", "device=cuda")
    assert not _fast(applied)
    monkeypatch.delenv("THEANO_FLAGS")
    assert _fast(applied)

    # the environment used: Python's bytecode beside six.py, uv's .lock in the prefix
    python = applied["prefix"] / "bin" / "python"
    writes = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([str(python), "-c", "import six, numpy"], check=True, env=writes)
    assert (applied["site"] / "__pycache__").is_dir()
    (applied["prefix"] / ".lock").write_text("")
    assert _fast(applied)
    (applied["prefix"] / "notes.txt").write_text("mine\n")  # anything else: the real path
    assert not _fast(applied)
    (applied["prefix"] / "notes.txt").unlink()

    # the spec edited: the lock is stale, and the real path says so
    text = applied["spec"].read_text()
    applied["spec"].write_text(text.replace("allow_gc = true", "allow_gc = false"))
    assert not _fast(applied)
    assert main(_words(applied)) == 3
    applied["spec"].write_text(text)
    _settle(applied)


def test_an_offline_noop_is_stamped_with_the_cache_files_it_read(
        applied: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    _settle(applied)
    assert main(_words(applied, "--offline")) == 0
    time.sleep(noopstamp.RACY_NS / 1e9 + 0.1)
    assert _fast(applied, "--offline")

    archive = next((Path(os.environ["ENVFORGE_HOME"]) / "cache" / "files").rglob("six-*.whl"))
    aside = archive.with_name("aside")
    archive.rename(aside)
    try:
        assert not _fast(applied, "--offline")
        assert main(_words(applied, "--offline")) == 2  # the real path: the cache lacks it
        assert "six-1.16.0-py2.py3-none-any.whl: not in the cache" in capsys.readouterr().err
        archive.write_bytes(aside.read_bytes().replace(b"six", b"s1x", 1))
        assert main(_words(applied, "--offline")) == 2
        assert f"{archive}: altered" in capsys.readouterr().err
    finally:
        aside.replace(archive)
    assert main(_words(applied, "--offline")) == 0
