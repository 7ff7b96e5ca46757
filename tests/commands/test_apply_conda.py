"""A conda environment applied with rattler from a local channel of real packages, and undone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envforge.cli import main
from tests.testing.conda_channel import conda_spec_text

THEANO = """
[theano]
device = "cuda"
floatX = "float32"
dnn = "disabled"
"""


def test_conda_env_from_local_channel(conda_channel: Path, tmp_path: Path,
                                      monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("ENVFORGE_HOME", str(tmp_path / "envforge-home"))
    (tmp_path / "specs").mkdir()
    spec = tmp_path / "specs" / "condaenv.toml"
    spec.write_text(conda_spec_text(conda_channel, platforms=("linux-64",), extra=THEANO))
    prefix = tmp_path / "envs" / "condaenv"
    assert main(["lock", str(spec), "-q"]) == 0
    assert main(["apply", str(spec), "--yes", "--prefix", str(prefix)]) == 0

    installed = {json.loads(p.read_text())["name"] for p in (prefix / "conda-meta").glob("*.json")}
    assert {"python", "theano-pymc", "pygpu", "libgpuarray"} <= installed
    records = {r["name"]: r for r in (json.loads(p.read_text())
                                      for p in (prefix / "conda-meta").glob("*.json"))}
    assert records["pygpu"]["version"] == "0.7.6"
    activate = (prefix / "etc" / "conda" / "activate.d" / "envforge.sh").read_text()
    assert f'THEANORC="{prefix}/etc/theanorc"' in activate
    theanorc = (prefix / "etc" / "theanorc").read_text()
    assert "device = cuda" in theanorc and "enabled = False" in theanorc

    capsys.readouterr()
    assert main(["apply", str(spec), "--dry-run", "--prefix", str(prefix), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["pending"] is False

    assert main(["rollback", str(spec), "--prefix", str(prefix)]) == 0
    assert not (tmp_path / "envs").exists()
