"""A damaged entry of the unpacked cache (a flipped byte, a removed file) is made again and
never installed; rollback and edits in the environment leave the cache as it was."""

from __future__ import annotations

from pathlib import Path

import pytest

from envforge.cli import main
from tests.faults.conftest import World, count

pytestmark = [pytest.mark.slow, pytest.mark.network]


def _flip(path: Path) -> None:
    path.chmod(0o644)
    with open(path, "r+b") as handle:  # in place: the inode and size stay
        first = handle.read(1)
        handle.seek(0)
        handle.write(bytes([first[0] ^ 0x20]))


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


def _apply(world: World, prefix: Path) -> None:
    assert main(["apply", str(world.spec("a")), "--yes", "--prefix", str(prefix), "-q"]) == 0


def test_damaged_entries_are_made_again_and_never_installed(world: World, tmp_path: Path) -> None:
    _apply(world, tmp_path / "first")
    unpacked = world.efhome / "cache" / "unpacked"
    six = next(unpacked.glob("wheels-v1/*/*/files/six.py"))
    theano_init = next(unpacked.glob("wheels-v1/*/*/files/theano/__init__.py"))
    data_tar = next(unpacked.glob("debs-v1/*/*/files/data.tar"))
    good = {p: p.read_bytes() for p in (six, theano_init, data_tar)}
    _flip(six)
    theano_init.unlink()
    _flip(data_tar)

    _apply(world, tmp_path / "second")

    site = "lib/python3.7/site-packages"
    for name in ("six.py", "theano/__init__.py"):
        assert (tmp_path / "second" / site / name).read_bytes() == \
            (tmp_path / "first" / site / name).read_bytes()
    assert {p: p.read_bytes() for p in good} == good  # made again from the archives
    count("unpacked cache: flipped byte, removed file: made again, not installed")


def test_rollback_and_edits_in_the_environment_leave_the_cache_alone(
        world: World, tmp_path: Path) -> None:
    prefix = tmp_path / "env"
    _apply(world, prefix)
    unpacked = world.efhome / "cache" / "unpacked"
    before = _snapshot(unpacked)
    six = prefix / "lib/python3.7/site-packages/six.py"
    with open(six, "r+b") as handle:  # an editor that keeps the inode
        handle.write(b"#")

    assert main(["rollback", str(world.spec("a")), "--prefix", str(prefix), "-q"]) == 0

    assert not prefix.exists()
    assert _snapshot(unpacked) == before
    count("unpacked cache: untouched by an edit in place and by rollback")
