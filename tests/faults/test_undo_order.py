"""Undo in any order: a restore checks the file still holds what envforge wrote; if not,
it keeps the current file, puts the original beside it and says so. Rollback and
``doctor --undo`` share the rule (one journal code)."""

from __future__ import annotations

from pathlib import Path

import pytest

from envforge.cli import main
from tests.faults.conftest import World, count
from tests.faults.harness import USER_RC

pytestmark = [pytest.mark.slow, pytest.mark.network]

ORIGINAL = ".theanorc.envforge-original"


def test_two_home_specs_rolled_back_newest_first_restore_exactly(world: World,
                                                                 tmp_path: Path) -> None:
    rc = world.home / ".theanorc"
    for name in ("a", "b"):
        assert main(["apply", str(world.spec(name)), "--yes", "--prefix",
                     str(tmp_path / name), "-q"]) == 0
    for name in ("b", "a"):
        assert main(["rollback", str(world.spec(name)), "--prefix", str(tmp_path / name),
                     "-q"]) == 0
    assert rc.read_bytes() == USER_RC and rc.stat().st_mode & 0o777 == 0o600
    assert not (world.home / ORIGINAL).exists()
    count("undo order: newest first, exact")


def test_two_home_specs_rolled_back_oldest_first_give_the_users_bytes_back(
        world: World, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = world.home / ".theanorc"
    assert main(["apply", str(world.spec("a")), "--yes", "--prefix", str(tmp_path / "a"),
                 "-q"]) == 0
    assert main(["apply", str(world.spec("b")), "--yes", "--prefix", str(tmp_path / "b"),
                 "-q"]) == 0
    rendered_b = rc.read_bytes()
    capsys.readouterr()

    assert main(["rollback", str(world.spec("a")), "--prefix", str(tmp_path / "a")]) == 0
    err = capsys.readouterr().err
    assert "warning" not in err and f"handed {rc} over to " in err
    assert rc.read_bytes() == rendered_b  # b's file, still in use by b, left alone
    assert not (world.home / ORIGINAL).exists()

    assert main(["rollback", str(world.spec("b")), "--prefix", str(tmp_path / "b")]) == 0
    assert rc.read_bytes() == USER_RC and rc.stat().st_mode & 0o777 == 0o600
    assert not (world.home / ORIGINAL).exists()
    count("undo order: oldest first, exact")


@pytest.mark.parametrize("order", ["abc", "bca", "cab", "acb"])
def test_three_home_specs_rolled_back_in_mixed_order_restore_exactly(
        order: str, world: World, tmp_path: Path) -> None:
    rc = world.home / ".theanorc"
    for name in "abc":
        assert main(["apply", str(world.spec(name)), "--yes", "--prefix",
                     str(tmp_path / name), "-q"]) == 0
    for name in order:
        assert main(["rollback", str(world.spec(name)), "--prefix", str(tmp_path / name),
                     "-q"]) == 0
    assert rc.read_bytes() == USER_RC and rc.stat().st_mode & 0o777 == 0o600
    assert not (world.home / ORIGINAL).exists()
    count("undo order: three specs, mixed order, exact")


@pytest.mark.parametrize("doctor_first", [True, False])
def test_doctor_fix_then_apply_undone_in_either_order_restore_exactly(
        doctor_first: bool, world: World, tmp_path: Path) -> None:
    rc = world.home / ".theanorc"
    mine = USER_RC + b"\n[lib]\ncnmem = 0.8\n"  # the user's own file, which doctor fixes
    rc.write_bytes(mine)
    assert main(["doctor", "--fix", "--yes", "-q"]) in (0, 1)
    assert rc.read_bytes() != mine
    prefix = tmp_path / "a"
    assert main(["apply", str(world.spec("a")), "--yes", "--prefix", str(prefix), "-q"]) == 0
    undo = [["doctor", "--undo", "-q"], ["rollback", str(world.spec("a")), "--prefix",
                                          str(prefix), "-q"]]
    for command in undo if doctor_first else undo[::-1]:
        assert main(command) == 0
    assert rc.read_bytes() == mine and rc.stat().st_mode & 0o777 == 0o600
    assert not (world.home / ORIGINAL).exists()
    count("undo order: doctor --fix and apply, either order, exact")


@pytest.mark.parametrize("order", ["ab", "ba"])
def test_default_prefixes_leave_no_envforge_folder_behind(order: str, world: World) -> None:
    for name in "ab":
        assert main(["apply", str(world.spec(name)), "--yes", "-q"]) == 0
    assert (world.efhome / "data" / "envs" / "a").is_dir()
    for name in order:
        assert main(["rollback", str(world.spec(name)), "-q"]) == 0
    assert not (world.efhome / "data").exists()
    assert (world.home / ".theanorc").read_bytes() == USER_RC
    count("undo order: the folders envforge made are gone")


def test_apply_edit_doctor_fix_rollback_doctor_undo(world: World, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    rc = world.home / ".theanorc"
    prefix = tmp_path / "a"
    assert main(["apply", str(world.spec("a")), "--yes", "--prefix", str(prefix), "-q"]) == 0
    edited = rc.read_bytes() + b"\n[lib]\ncnmem = 0.8\n"  # the user's own edit
    rc.write_bytes(edited)
    assert main(["doctor", "--fix", "--yes", "-q"]) in (0, 1)
    fixed = rc.read_bytes()
    assert fixed != edited and b"preallocate = 0.8" in fixed
    capsys.readouterr()

    assert main(["rollback", str(world.spec("a")), "--prefix", str(prefix)]) == 0
    assert f"warning: kept {rc}: changed since envforge wrote it" in capsys.readouterr().err
    assert rc.read_bytes() == fixed
    assert (world.home / ORIGINAL).read_bytes() == USER_RC

    assert main(["doctor", "--undo"]) == 0
    assert rc.read_bytes() == edited  # doctor's own undo: it still held what doctor wrote
    assert (world.home / ORIGINAL).read_bytes() == USER_RC
    count("undo order: apply, edit, doctor --fix, rollback, doctor --undo")


def test_apply_edit_doctor_fix_doctor_undo_rollback(world: World, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """The other order: doctor's undo gives the user's edit back, rollback keeps it (a file
    the user changed since apply wrote it) and puts the user's original beside it."""
    rc = world.home / ".theanorc"
    prefix = tmp_path / "a"
    assert main(["apply", str(world.spec("a")), "--yes", "--prefix", str(prefix), "-q"]) == 0
    edited = rc.read_bytes() + b"\n[lib]\ncnmem = 0.8\n"
    rc.write_bytes(edited)
    assert main(["doctor", "--fix", "--yes", "-q"]) in (0, 1)
    assert rc.read_bytes() != edited
    assert main(["doctor", "--undo", "-q"]) == 0
    assert rc.read_bytes() == edited
    capsys.readouterr()
    assert main(["rollback", str(world.spec("a")), "--prefix", str(prefix)]) == 0
    assert f"warning: kept {rc}: changed since envforge wrote it" in capsys.readouterr().err
    assert rc.read_bytes() == edited
    assert (world.home / ORIGINAL).read_bytes() == USER_RC
    assert (world.home / ORIGINAL).stat().st_mode & 0o777 == 0o600
    assert sorted(p.name for p in world.home.iterdir()) == [".theanorc", ORIGINAL]
    count("undo order: apply, edit, doctor --fix, doctor --undo, rollback")


def test_doctor_undo_keeps_a_file_changed_after_the_fix(world: World,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    rc = world.home / ".theanorc"
    rc.write_bytes(USER_RC + b"\n[lib]\ncnmem = 0.8\n")
    assert main(["doctor", "--fix", "--yes", "-q"]) in (0, 1)
    later = rc.read_bytes() + b"# and mine after the fix\n"
    rc.write_bytes(later)
    capsys.readouterr()
    assert main(["doctor", "--undo"]) == 0
    assert "warning: kept" in capsys.readouterr().err
    assert rc.read_bytes() == later
    assert (world.home / ORIGINAL).read_bytes() == USER_RC + b"\n[lib]\ncnmem = 0.8\n"
    count("undo order: doctor --undo after a later edit keeps both")
