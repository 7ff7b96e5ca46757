"""Verify's Keras rows: keras.json as Keras loaded it, and the model's training against the
lock's NumPy loss curve (a report built the way the probe builds it, and a wrong one)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from envforge.expectations import reference_output
from envforge.lockfile import load_lock
from envforge.packs.keras.expect import KerasExpect
from envforge.packs.keras.verify import verify_rows
from envforge.verify import build_request
from tests.testing.packs import REGISTRY

REPO = Path(__file__).resolve().parents[3]
EXPECT = load_lock(REPO / "locks" / "tf1-keras-cpu.lock", REGISTRY).platforms["linux-64"].expect
TABLE = EXPECT.packs["keras"]
assert isinstance(TABLE, KerasExpect)


def _entry(learning_rate: float) -> dict[str, Any]:
    kernel = TABLE.train
    out = reference_output("train", seed=kernel.seed, shape=kernel.shape, float_x="float32",
                           params={"learning_rate": learning_rate})
    out = out.astype(np.float32).astype(np.float64)  # as a float32 Keras reports it
    return {"name": "train", "output_shape": list(out.shape), "checksum": float(out.sum()),
            "samples": [float(out[i]) for i in kernel.sample_indices], "error": None}


def _report(entry: dict[str, Any], **config: Any) -> dict[str, Any]:
    seen = {"backend": "tensorflow", "floatx": "float32", "epsilon": 1e-07,
            "image_data_format": "channels_last", "config_path": "/env/keras/keras.json",
            **config}
    return {"format": 1, "keras": {"config": seen, "train": entry}}


def _rows(report: dict[str, Any]) -> dict[str, str]:
    return {r.name: r.status for r in verify_rows(report, EXPECT, prefix="/env",
                                                  gpu_expected=False)}


def test_the_keras_probe_is_asked_for_the_model() -> None:
    train = build_request(EXPECT, REGISTRY)["keras"]["train"]
    assert train["name"] == "train" and train["params"] == {"learning_rate": 0.5}
    assert train["shape"] == [32, 4, 20]


def test_the_locked_loss_curve_passes() -> None:
    assert set(_rows(_report(_entry(0.5))).values()) == {"pass"}


def test_another_training_fails() -> None:
    rows = _rows(_report(_entry(0.45)))
    assert rows["keras.train.checksum"] == "fail" and rows["keras.train.samples"] == "fail"


def test_keras_reading_another_config_fails() -> None:
    rows = _rows(_report(_entry(0.5), backend="theano", config_path="/root/.keras/keras.json"))
    assert rows["keras.backend"] == "fail" and rows["keras.json"] == "fail"
    assert rows["keras.floatx"] == "pass"


def test_keras_not_importable() -> None:
    report = {"format": 1, "import_errors": {"keras": "ModuleNotFoundError: No module named "
                                                      "'keras'"}, "keras": {"config": None}}
    rows = verify_rows(report, EXPECT, prefix="/env", gpu_expected=False)
    assert {r.status for r in rows} == {"fail"}
    assert "No module named 'keras'" in rows[0].why
