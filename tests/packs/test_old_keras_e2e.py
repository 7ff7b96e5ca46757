"""Keras before 2.3 for real: TensorFlow 1.14 with Keras 2.2.4 (keras.json in the environment,
KERAS_HOME) and TensorFlow 1.13.1 with Keras 2.1.6 (keras.json in the home folder: Keras 2.1
reads no KERAS_HOME) applied from their committed locks with the real Python 3.7 (pyenv),
verified (the Keras model trained with SGD(lr=...) against the lock's NumPy loss curve), then
rolled back leaving no trace, the user's ~/.keras included."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from envforge.cli import main
from tests.commands.test_apply import snapshot
from tests.packs.conftest import verify_json

REPO = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.slow, pytest.mark.network,
              pytest.mark.posix_only("applies the Linux Python 3.7 from pyenv")]

TRAINED = ("keras.backend", "keras.json", "keras.train.checksum", "keras.train.samples",
           "kernel.gemm.samples", "kernel.conv.samples", "drift.extra")




def _passes(spec: Path, prefix: Path, capsys: pytest.CaptureFixture[str],
            versions: dict[str, str]) -> dict[str, Any]:
    code, document = verify_json(spec, prefix, capsys)
    rows = {row["name"]: row for row in document["rows"]}
    assert code == 0, [r for r in document["rows"] if r["status"] == "fail"]
    for name in TRAINED:
        assert rows[name]["status"] == "pass", name
    for name, version in versions.items():
        assert rows[f"version.{name}"]["found"] == version
    return rows


def test_keras_2_2_on_tensorflow_1_14(host: Path, tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    spec = REPO / "specs" / "tf114-keras22-cpu.toml"
    prefix = tmp_path / "envs" / "tf114"
    before = snapshot(host)
    assert main(["apply", str(spec), "--yes", "--prefix", str(prefix)]) == 0
    _passes(spec, prefix, capsys, {"tensorflow": "1.14.0", "keras": "2.2.4"})
    assert (prefix / "keras" / "keras.json").is_file()

    # negative control: Keras 2.2 reads the environment's keras.json through KERAS_HOME
    config = prefix / "keras" / "keras.json"
    config.write_text(config.read_text().replace('"channels_last"', '"channels_first"'))
    code, document = verify_json(spec, prefix, capsys)
    assert code == 1
    assert {r["name"]: r["status"] for r in document["rows"]}["keras.image_data_format"] == \
        "fail"

    assert main(["rollback", str(spec), "--prefix", str(prefix)]) == 0
    assert not prefix.exists() and snapshot(host) == before


def test_keras_2_1_reads_keras_json_from_home(host: Path, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    spec = REPO / "specs" / "tf113-keras21-cpu.toml"
    prefix = tmp_path / "envs" / "tf113"
    mine = host / ".keras" / "keras.json"
    mine.parent.mkdir()
    mine.write_text('{"floatx": "float64", "backend": "theano"}\n')  # the user's own
    before = snapshot(host)
    assert main(["apply", str(spec), "--yes", "--prefix", str(prefix)]) == 0
    assert json.loads(mine.read_text())["backend"] == "tensorflow"
    rows = _passes(spec, prefix, capsys, {"tensorflow": "1.13.1", "keras": "2.1.6"})
    assert rows["keras.json"]["found"] == str(mine)
    assert main(["rollback", str(spec), "--prefix", str(prefix)]) == 0
    assert not prefix.exists() and snapshot(host) == before  # the user's keras.json, byte-exact
