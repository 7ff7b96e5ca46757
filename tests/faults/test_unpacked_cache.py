"""A damaged entry of the unpacked cache (a flipped byte, a removed file, an edit made
through a hard link in an environment) is made again and never installed; rollback leaves
the cache and the user's files as they were."""

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
    data_tar = next(unpacked.glob("debtrees-v1/*/*/files/data.tar"))
    library = next(unpacked.glob("debtrees-v1/*/*/files/tree/usr/lib/*/libquadmath.so.0.*"))
    good = {p: p.read_bytes() for p in (six, theano_init, data_tar, library)}
    site = "lib/python3.7/site-packages"
    deb_lib = f"deb/{library.relative_to(library.parents[3])}"
    names = ("six.py", "theano/__init__.py")
    first = {name: (tmp_path / "first" / site / name).read_bytes() for name in names}
    first_lib = (tmp_path / "first" / deb_lib).read_bytes()
    _flip(six)  # the first environment's six.py is the same file: it sees the flip
    theano_init.unlink()
    _flip(data_tar)
    _apply(world, tmp_path / "again")  # the deb's entry made again, its files linked anew
    _flip(library)  # the first and this environment's library: the same file as the entry's

    _apply(world, tmp_path / "second")

    assert {name: (tmp_path / "second" / site / name).read_bytes() for name in names} == first
    assert (tmp_path / "second" / deb_lib).read_bytes() == first_lib
    assert {p: p.read_bytes() for p in good} == good  # made again from the archives
    count("unpacked cache: flipped byte, removed file: made again, not installed")


def test_an_edit_through_an_environment_s_link_is_never_installed_again(
        world: World, tmp_path: Path) -> None:
    site = "lib/python3.7/site-packages"
    _apply(world, tmp_path / "first")
    six = tmp_path / "first" / site / "six.py"
    good = six.read_bytes()
    with open(six, "r+b") as handle:  # an editor that keeps the inode (root may write)
        handle.write(b"#")

    _apply(world, tmp_path / "second")

    assert (tmp_path / "second" / site / "six.py").read_bytes() == good
    assert six.read_bytes() == b"#" + good[1:]  # the user's edit stays where it was made
    count("unpacked cache: an edit made through a link: made again, not installed")


def test_rollback_leaves_the_cache_and_the_user_s_files_alone(
        world: World, tmp_path: Path) -> None:
    prefix = tmp_path / "env"
    _apply(world, tmp_path / "other")  # the entries exist and are linked elsewhere too
    unpacked = world.efhome / "cache" / "unpacked"
    before = _snapshot(unpacked)
    modes = {p: p.stat().st_mode for p in unpacked.rglob("*")}
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_bytes(b"the user's\n")
    users = _snapshot(mine)
    _apply(world, prefix)

    assert main(["rollback", str(world.spec("a")), "--prefix", str(prefix), "-q"]) == 0

    assert not prefix.exists()
    assert _snapshot(unpacked) == before
    assert {p: p.stat().st_mode for p in unpacked.rglob("*")} == modes
    assert _snapshot(mine) == users
    assert (tmp_path / "other" / "lib/python3.7/site-packages/six.py").is_file()
    count("unpacked cache: untouched by rollback, as are the user's files")
