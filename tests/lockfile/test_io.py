"""The lock on disk: stable bytes, and a damaged lock named by file, line and key."""

from __future__ import annotations

from pathlib import Path

import pytest

from envforge.cli import main
from envforge.errors import ExitCode, SpecError
from envforge.lockfile import dumps_lock, load_lock
from tests.testing.packs import REGISTRY

REPO = Path(__file__).resolve().parents[2]
COMMITTED = REPO / "locks" / "theano-cpu.lock"


def test_committed_lock_round_trips_to_the_same_bytes() -> None:
    assert dumps_lock(load_lock(COMMITTED, REGISTRY)) == COMMITTED.read_text()


def damaged(tmp_path: Path, old: str, new: str) -> Path:
    text = COMMITTED.read_text()
    assert old in text
    path = tmp_path / "theano-cpu.lock"
    path.write_text(text.replace(old, new, 1))
    return path


def test_an_old_locks_built_table_is_read_and_dropped(tmp_path: Path) -> None:
    """Locks written before issue 25 carry the host-specific sha256 of a built wheel: they
    still load, and nothing writes the table again (a committed lock stays clean)."""
    old = ('version = "1.0.5"\n\n[platforms.linux-64.pypi.built]\n'
           'build_requires = ["setuptools==68.0.0"]\n'
           'filename = "Theano_PyMC-1.0.5-py3-none-any.whl"\n'
           f'sha256 = "{"ae24" * 16}"\n')
    path = damaged(tmp_path, 'version = "1.0.5"\n', old)
    assert "[platforms.linux-64.pypi.built]" in path.read_text()
    assert dumps_lock(load_lock(path, REGISTRY)) == COMMITTED.read_text()


def test_a_bad_hash_names_its_line_and_key(tmp_path: Path) -> None:
    lock = load_lock(COMMITTED, REGISTRY)
    sha = lock.platforms["linux-64"].deb[0].sha256
    path = damaged(tmp_path, f'sha256 = "{sha}"', 'sha256 = "not-a-hash"')
    with pytest.raises(SpecError) as error:
        load_lock(path, REGISTRY)
    line = next(n for n, text in enumerate(path.read_text().splitlines(), 1)
                if "not-a-hash" in text)
    assert error.value.line == line
    assert error.value.key == "platforms.linux-64.deb.0.sha256"
    assert error.value.exit_code == ExitCode.BAD_INPUT


def test_an_unknown_format_version_is_refused(tmp_path: Path) -> None:
    path = damaged(tmp_path, "version = 3\n", "version = 7\n")
    with pytest.raises(SpecError, match="lock format version 7 is not 3; re-lock"):
        load_lock(path, REGISTRY)


def test_apply_with_a_damaged_lock_exits_2_and_changes_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("ENVFORGE_HOME", str(tmp_path / "home"))
    (tmp_path / "specs").mkdir()
    spec = tmp_path / "specs" / "theano-cpu.toml"
    spec.write_text((REPO / "specs" / "theano-cpu.toml").read_text())
    (tmp_path / "locks").mkdir()
    damaged(tmp_path, "[platforms.linux-64]", "[platforms.linux-64\n").replace(
        tmp_path / "locks" / "theano-cpu.lock")
    assert main(["apply", str(spec), "--yes", "--prefix", str(tmp_path / "env")]) == 2
    err = capsys.readouterr().err.strip()
    assert "theano-cpu.lock:" in err and "TOML syntax error" in err
    assert len(err.splitlines()) == 1
    assert not (tmp_path / "env").exists() and not (tmp_path / "home").exists()


@pytest.mark.parametrize(("written", "typed"), [
    ("size = 792696", 'size = "792696"'),
    ("repeats = 3", 'repeats = "3"'),
    ("seed = 22", "seed = 22.0"),
])
def test_a_lock_value_of_the_wrong_type_is_refused_not_coerced(
        tmp_path: Path, written: str, typed: str) -> None:
    """Issue 29: the spec and the plan were strict, the lock coerced "792696" to a size."""
    text = (REPO / "locks" / "theano-cpu.lock").read_text(encoding="utf-8")
    assert written in text
    lock = tmp_path / "theano-cpu.lock"
    lock.write_text(text.replace(written, typed, 1), encoding="utf-8")
    line = text[:text.index(written)].count("\n") + 1
    with pytest.raises(SpecError) as raised:
        load_lock(lock, REGISTRY)
    assert raised.value.line == line and "valid integer" in raised.value.reason
