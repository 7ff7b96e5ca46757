"""The TensorFlow pack's knowledge: every row names a source, the probe runs the kernels
compat allows, and the GPU libraries are TensorFlow 1.15's per platform."""

from __future__ import annotations

import importlib.util
import tomllib
from pathlib import Path

from envforge.packs.tensorflow import PROBE_SCRIPT
from envforge.packs.tensorflow.knowledge import (
    build_configuration,
    gpu_libraries,
    tensorflow_knowledge,
)
from envforge.packs.tensorflow.section import PROBE_KERNELS

PACK = Path(__file__).resolve().parents[3] / "envforge" / "packs"


def test_every_row_names_a_source() -> None:
    for name in ("tensorflow/tensorflow.toml", "keras/keras.toml"):
        raw = tomllib.loads((PACK / name).read_text(encoding="utf-8"))
        rows = [row for body in raw.values() for row in body]
        assert rows and all(str(row.get("source", "")).strip() for row in rows), name
    assert tensorflow_knowledge().pitfalls


def test_the_probe_runs_the_kernels_compat_allows() -> None:
    spec = importlib.util.spec_from_file_location("tf_probe", PROBE_SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert tuple(module.KERNELS) == PROBE_KERNELS


def test_gpu_libraries_per_platform() -> None:
    linux = {row.library: row.files["linux-64"] for row in gpu_libraries("1.15.5", "linux-64")}
    windows = {row.library: row.files["win-64"] for row in gpu_libraries("1.15.5", "win-64")}
    assert linux["cudart"] == "libcudart.so.10.0" and linux["cudnn"] == "libcudnn.so.7"
    assert windows["cudart"] == "cudart64_100.dll" and windows["cudnn"] == "cudnn64_7.dll"
    assert set(linux) == set(windows) == {"cudart", "cublas", "cufft", "curand", "cusolver",
                                          "cusparse", "cudnn"}
    assert gpu_libraries("2.4.0", "linux-64") == ()
    row = build_configuration("1.15.5")
    assert row is not None and row.cuda == "10.0"
