"""The TensorFlow and Keras packs for real: both CPU specs applied from their committed
locks into temporary prefixes with the real Python 3.7 (pyenv), verified (TensorFlow's
kernels against the lock's NumPy references, Keras's model trained on each back-end against
its locked loss curve), a negative control, then rolled back leaving no trace."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from envforge.cli import main
from tests.commands.test_apply import snapshot
from tests.packs.conftest import verify_json

REPO = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.slow, pytest.mark.network,
              pytest.mark.posix_only("applies the Linux Python 3.7 from pyenv")]




def _status(document: Any) -> dict[str, str]:
    return {row["name"]: row["status"] for row in document["rows"]}


def test_tf1_keras_cpu(host: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = REPO / "specs" / "tf1-keras-cpu.toml"
    prefix = tmp_path / "envs" / "tf1"
    before = snapshot(host)
    assert main(["apply", str(spec), "--yes", "--prefix", str(prefix)]) == 0
    code, document = verify_json(spec, prefix, capsys)
    rows = _status(document)
    assert code == 0, [r for r in document["rows"] if r["status"] == "fail"]
    for name in ("version.tensorflow", "version.keras", "version.protobuf", "version.h5py",
                 "tensorflow.devices", "tensorflow.env.TF_CPP_MIN_LOG_LEVEL", "keras.backend",
                 "keras.json", "kernel.gemm.samples", "kernel.conv.samples",
                 "keras.train.checksum", "keras.train.samples", "drift.extra"):
        assert rows[name] == "pass", name
    assert document["counts"]["fail"] == 0 and document["counts"]["pass"] >= 30

    # negative control: a keras.json edited behind envforge's back is what Keras runs with
    config = prefix / "keras" / "keras.json"
    config.write_text(config.read_text().replace('"float32"', '"float64"'))
    code, document = verify_json(spec, prefix, capsys)
    assert code == 1 and _status(document)["keras.floatx"] == "fail"

    assert main(["rollback", str(spec), "--prefix", str(prefix)]) == 0
    assert not prefix.exists()
    assert snapshot(host) == before  # the user's ~/.keras was never made


def test_keras_on_theano_cpu(host: Path, tmp_path: Path,
                             capsys: pytest.CaptureFixture[str]) -> None:
    spec = REPO / "specs" / "keras-theano-cpu.toml"
    prefix = tmp_path / "envs" / "kt"
    assert main(["apply", str(spec), "--yes", "--prefix", str(prefix)]) == 0
    code, document = verify_json(spec, prefix, capsys)
    rows = _status(document)
    assert code == 0, [r for r in document["rows"] if r["status"] == "fail"]
    for name in ("version.theano", "version.keras", "keras.backend", "keras.json", "blas",
                 "kernel.conv.samples", "keras.train.checksum", "keras.train.samples"):
        assert rows[name] == "pass", name
    assert main(["rollback", str(spec), "--prefix", str(prefix)]) == 0
    assert not prefix.exists()


def test_lock_refuses_what_resolves_to_protobuf_4(host: Path, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """TensorFlow 1.15.5 asks only protobuf>=3.6.1: unpinned, uv picks 4.x, and lock says
    what `import tensorflow` would print, naming the spec; nothing is written."""
    spec = tmp_path / "specs" / "tf1-unpinned.toml"
    spec.parent.mkdir()
    text = (REPO / "specs" / "tf1-keras-cpu.toml").read_text(encoding="utf-8")
    spec.write_text(text.replace(', "h5py<3", "protobuf<4"]', "]")
                    .replace('name = "tf1-keras-cpu"', 'name = "tf1-unpinned"'), encoding="utf-8")
    capsys.readouterr()
    assert main(["lock", str(spec)]) == 2
    error = capsys.readouterr().err
    line = next(n for n, row in enumerate(spec.read_text().splitlines(), 1)
                if row.startswith("packages"))
    # the first platform to fail fails the lock (the other is cancelled): either may say it
    assert re.search(rf"{re.escape(str(spec))}:{line}: pypi\.packages: (linux|win)-64: resolved "
                     r"tensorflow 1\.15\.5 with protobuf 4\.", error), error
    assert "Descriptors cannot not be created directly" in error
    assert 'fix: pin "protobuf<4"' in error
    assert not (tmp_path / "locks").exists()
