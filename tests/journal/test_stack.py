"""Undo in any order: journals side by side are a stack of edits per file; every order
of undos gives the user's bytes (and mode) back, and the folders envforge made go."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

import pytest

import envforge.journal.undo as undo_module
from envforge.journal import KEPT, Journal, Transaction, rollback

USER = b"[global]\n# mine \xe2\x82\xac\r\nfloatX = float32\n"


@pytest.fixture
def user_rc(tmp_path: Path) -> Path:
    """A user's own file of odd bytes and mode, which every journal below rewrites."""
    rc = tmp_path / "home" / ".theanorc"
    rc.parent.mkdir()
    rc.write_bytes(USER)
    rc.chmod(0o600)
    return rc


def _apply(state: Path, name: str, path: Path, data: bytes) -> None:
    Transaction(Journal(state / name), "theanorc").write_bytes(path, data)


def _undo_all(state: Path, order: str) -> list[str]:
    return [line for name in order for line in rollback(Journal(state / name))]


def _exact(path: Path) -> tuple[str, int]:
    """The bytes' sha256 and the mode; Windows keeps no POSIX mode (its 0o600 reads 0o666),
    so there the mode is the one the test wrote."""
    mode = stat.S_IMODE(path.stat().st_mode) if os.name == "posix" else 0o600
    return hashlib.sha256(path.read_bytes()).hexdigest(), mode


def _beside(path: Path) -> list[str]:
    return sorted(p.name for p in path.parent.glob(f"{path.name}.envforge-original*"))


@pytest.mark.parametrize("order", ["ab", "ba"])
def test_two_journals_on_one_file_undone_in_either_order_give_the_users_bytes_back(
        tmp_path: Path, user_rc: Path, order: str) -> None:
    state = tmp_path / "state"
    _apply(state, "a", user_rc, b"a's rc\n")
    _apply(state, "b", user_rc, b"b's rc\n")
    first = rollback(Journal(state / order[0]))
    if order == "ab":  # b's file stays in use by b; b's backup now holds the user's bytes
        assert user_rc.read_bytes() == b"b's rc\n"
        assert not any(line.startswith(KEPT) for line in first)
    _undo_all(state, order[1])
    assert _exact(user_rc) == (hashlib.sha256(USER).hexdigest(), 0o600)
    assert _beside(user_rc) == []


@pytest.mark.parametrize("order", ["abc", "acb", "bac", "bca", "cab", "cba"])
def test_three_journals_undone_in_any_order_give_the_users_bytes_back(
        tmp_path: Path, user_rc: Path, order: str) -> None:
    state = tmp_path / "state"
    for name in "abc":
        _apply(state, name, user_rc, f"{name}'s rc\n".encode())
    for n, name in enumerate(order):
        rollback(Journal(state / name))
        left = sorted(set("abc") - set(order[: n + 1]))
        if left:  # what is active is the file of the newest journal still applied
            assert user_rc.read_bytes() == f"{left[-1]}'s rc\n".encode()
    assert _exact(user_rc) == (hashlib.sha256(USER).hexdigest(), 0o600)
    assert _beside(user_rc) == []


@pytest.mark.parametrize("order", ["ab", "ba"])
def test_a_file_that_did_not_exist_is_gone_when_every_journal_is_undone(
        tmp_path: Path, order: str) -> None:
    state, rc = tmp_path / "state", tmp_path / "home" / ".theanorc"
    _apply(state, "a", rc, b"a's rc\n")
    _apply(state, "b", rc, b"b's rc\n")
    _undo_all(state, order)
    assert not rc.exists()
    assert _beside(rc) == []


@pytest.mark.parametrize("order", ["ab", "ba"])
def test_a_user_edit_between_two_journals_is_kept_with_the_original_beside(
        tmp_path: Path, user_rc: Path, order: str) -> None:
    state = tmp_path / "state"
    _apply(state, "a", user_rc, b"a's rc\n")
    user_rc.write_bytes(b"a's rc\n# and my edit\n")
    _apply(state, "b", user_rc, b"b's rc\n")
    undone = _undo_all(state, order)
    assert user_rc.read_bytes() == b"a's rc\n# and my edit\n"
    assert [p.read_bytes() for p in sorted(user_rc.parent.glob("*.envforge-original*"))] == [USER]
    assert sum(line.startswith(KEPT) for line in undone) == 1


@pytest.mark.parametrize("order", ["ab", "ba"])
def test_a_user_edit_after_both_journals_is_kept_with_the_users_original_beside(
        tmp_path: Path, user_rc: Path, order: str) -> None:
    state = tmp_path / "state"
    _apply(state, "a", user_rc, b"a's rc\n")
    _apply(state, "b", user_rc, b"b's rc\n")
    user_rc.write_bytes(b"b's rc\n# and my edit\n")
    _undo_all(state, order)  # "ba": a's file, b's original, is not put beside
    assert user_rc.read_bytes() == b"b's rc\n# and my edit\n"
    original = user_rc.with_name(".theanorc.envforge-original")
    assert _exact(original) == (hashlib.sha256(USER).hexdigest(), 0o600)
    assert _beside(user_rc) == [original.name]


def test_an_interrupted_hand_over_is_finished_once_by_running_rollback_again(
        tmp_path: Path, user_rc: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    state = tmp_path / "state"
    _apply(state, "a", user_rc, b"a's rc\n")
    _apply(state, "b", user_rc, b"b's rc\n")
    real_archive = undo_module._archive

    def die(journal: Journal) -> None:
        raise KeyboardInterrupt  # after the hand-over, before a's journal is archived

    monkeypatch.setattr(undo_module, "_archive", die)
    with pytest.raises(KeyboardInterrupt):
        rollback(Journal(state / "a"))
    monkeypatch.setattr(undo_module, "_archive", real_archive)
    rollback(Journal(state / "a"))
    assert sum(e.op == "handed" for e in Journal(state / "b").entries()) == 1
    rollback(Journal(state / "b"))
    assert _exact(user_rc) == (hashlib.sha256(USER).hexdigest(), 0o600)
    assert _beside(user_rc) == []


@pytest.mark.parametrize("order", ["ab", "ba"])
def test_a_shared_parent_folder_two_journals_made_is_removed_by_the_last_undo(
        tmp_path: Path, order: str) -> None:
    state, data = tmp_path / "state", tmp_path / "ef" / "data"
    (tmp_path / "ef").mkdir()
    Transaction(Journal(state / "a"), "prefix").mkdir(data / "envs" / "a")
    Transaction(Journal(state / "b"), "prefix").mkdir(data / "envs" / "b")
    _undo_all(state, order)
    assert not data.exists()
    assert (tmp_path / "ef").is_dir()  # not envforge's to remove


@pytest.mark.parametrize("order", ["abc", "cba", "bac"])
def test_a_parent_folder_handed_over_twice_is_removed_by_the_last_of_three_undos(
        tmp_path: Path, order: str) -> None:
    state, data = tmp_path / "state", tmp_path / "ef" / "data"
    (tmp_path / "ef").mkdir()
    for name in "abc":
        Transaction(Journal(state / name), "prefix").mkdir(data / "envs" / name)
    _undo_all(state, order)
    assert sorted(p.name for p in (tmp_path / "ef").iterdir()) == []
