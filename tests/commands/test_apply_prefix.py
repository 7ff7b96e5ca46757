"""A prefix envforge did not create is never filled: rollback could not give it back."""

from __future__ import annotations

from pathlib import Path

import pytest

from envforge.cli import main

REPO = Path(__file__).resolve().parents[2]
SPEC = REPO / "specs" / "theano-cpu.toml"


@pytest.mark.parametrize("contents", [{"notes.txt": b"mine\n"}, {}])
def test_an_existing_folder_is_refused_before_anything_changes(
        contents: dict[str, bytes], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("ENVFORGE_HOME", str(tmp_path / "envforge-home"))
    prefix = tmp_path / "existing"
    prefix.mkdir()
    for name, data in contents.items():
        (prefix / name).write_bytes(data)
    for argv in (["plan", str(SPEC)], ["apply", str(SPEC), "--yes"]):
        assert main([*argv, "--prefix", str(prefix)]) == 2
        err = capsys.readouterr().err.strip()
        assert err == (f"error: {prefix} already exists and envforge did not create it: "
                       "choose another --prefix, or move that folder away")
    assert sorted(p.name for p in prefix.iterdir()) == sorted(contents)
    for name, data in contents.items():
        assert (prefix / name).read_bytes() == data
    assert not (tmp_path / "envforge-home").exists()
