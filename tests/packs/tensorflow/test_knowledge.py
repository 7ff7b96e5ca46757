"""The TensorFlow pack's knowledge: every row names a source, the probe runs the kernels
compat allows, the GPU libraries are TensorFlow 1.15's per platform, and the rows about
PyPI's files (GPU builds, Pythons) agree with PyPI's file lists (network)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from envforge.packs.tensorflow import PROBE_SCRIPT
from envforge.packs.tensorflow.knowledge import (
    build_configuration,
    gpu_libraries,
    tensorflow_knowledge,
)
from envforge.packs.tensorflow.section import PROBE_KERNELS
from tests.testing.probes import load_probe

PACK = Path(__file__).resolve().parents[3] / "envforge" / "packs"


def test_every_row_names_a_source() -> None:
    for name in ("tensorflow/tensorflow.toml", "keras/keras.toml"):
        raw = tomllib.loads((PACK / name).read_text(encoding="utf-8"))
        rows = [row for body in raw.values() for row in body]
        assert rows and all(str(row.get("source", "")).strip() for row in rows), name
    assert tensorflow_knowledge().pitfalls


def test_the_probe_runs_the_kernels_compat_allows() -> None:
    assert tuple(load_probe(PROBE_SCRIPT).KERNELS) == PROBE_KERNELS


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


def _cp_wheels(name: str) -> dict[str, dict[str, int]]:
    """Each release's Linux x86-64 wheels: CPython tag -> size, from PyPI's file list."""
    from packaging.utils import parse_wheel_filename

    from envforge.resolve.pypi_index import index_files

    files = index_files("https://pypi.org/simple", name)
    assert files, f"PyPI lists no files for {name}"
    found: dict[str, dict[str, int]] = {}
    for entry in files:
        filename = str(entry["filename"])
        if not filename.endswith(".whl"):
            continue
        _, version, _, tags = parse_wheel_filename(filename)
        for tag in tags:
            if tag.platform.startswith("manylinux") and tag.platform.endswith("x86_64"):
                found.setdefault(str(version), {})[tag.interpreter] = int(entry["size"])
    return found


@pytest.mark.network
def test_gpu_builds_rows_match_the_wheels_on_pypi() -> None:
    """A GPU build's Linux wheel is over 300 MiB, a CPU build's near 100: each row's range
    holds exactly the 1.13-1.15 releases whose cp37 wheel is a GPU build."""
    from envforge.knowledge.models import in_range
    from envforge.packs.tensorflow.knowledge import gpu_build

    for name in ("tensorflow", "tensorflow-gpu"):
        row = gpu_build(name)
        assert row is not None and "https://pypi.org/simple/" + name in row.source
        for version, sizes in _cp_wheels(name).items():
            if version.startswith(("1.13.", "1.14.", "1.15.")) and "cp37" in sizes:
                assert (sizes["cp37"] > 300 << 20) == in_range(version, row.tensorflow), \
                    (name, version, sizes["cp37"])


@pytest.mark.network
def test_python_rows_match_the_wheels_on_pypi() -> None:
    """1.15.5: cp36 and cp37 only; 1.15.2-1.15.4: cp35-cp37; 1.15.0: cp27 and cp35-cp37 (no
    3.0-3.4): a tf1-python row fires for a Python exactly when PyPI has no wheel for it."""
    from envforge.compat import interval
    from envforge.packs.pitfalls import fired

    wheels = _cp_wheels("tensorflow")
    rows = [r for r in tensorflow_knowledge().pitfalls if r.id == "tf1-python"]
    for version in ("1.15.0", "1.15.2", "1.15.3", "1.15.4", "1.15.5"):
        for minor in range(3, 10):
            tensorflow, python = interval(f"=={version}"), interval(f"==3.{minor}.*")
            assert tensorflow is not None and python is not None
            has_wheel = f"cp3{minor}" in wheels[version]
            fires = fired(rows, {"tensorflow": tensorflow, "python": python})
            assert bool(fires) != has_wheel, (version, minor)


@pytest.mark.parametrize(("versions", "capped"), [
    ({"tensorflow": "1.15.5"}, True), ({"tensorflow-gpu": "1.15.0"}, True),
    ({"tensorflow": "1.4.0"}, True), ({"tensorflow": "2.1.0"}, True),
    ({"tensorflow": "2.2.0"}, False), ({"tensorflow": "1.2.1"}, False),
    ({"numpy": "1.18.5"}, False),
])
def test_tf_keras_before_2_2_gets_h5py_below_3(versions: dict[str, str], capped: bool) -> None:
    """tf.keras decodes an .h5 file's strings as bytes, which h5py 3 reads as str, and
    TensorFlow 1.4-2.1 requires no h5py itself (aymericdamien/TensorFlow-Examples: 1.15.4 with
    h5py 3.1.0, load_model failed): lock adds h5py<3 beside them, the GPU build's name too."""
    from tests.testing.packs import REGISTRY

    rows = REGISTRY.get("tensorflow").undeclared_imports(versions)
    assert [row.requirement for row in rows] == (["h5py<3"] if capped else [])


@pytest.mark.network
@pytest.mark.parametrize(("version", "saving", "capped"), [
    ("1.4.0", "tensorflow/python/keras/_impl/keras/engine/topology.py", True),
    ("1.15.4", "tensorflow_core/python/keras/saving/hdf5_format.py", True),
    ("2.1.0", "tensorflow_core/python/keras/saving/hdf5_format.py", True),
    ("2.2.0", "tensorflow/python/keras/saving/hdf5_format.py", False),
])
def test_the_h5py_rows_range_is_the_wheels_own(version: str, saving: str, capped: bool) -> None:
    """The cap's range read from PyPI's wheels: each decodes the .h5 file's strings as bytes
    (``.decode('utf8')`` of keras_version), and the releases capped require no h5py
    themselves, where 2.2.0 requires h5py<2.11."""
    import zipfile

    import requests

    from envforge.resolve.remotewheel import RangeFile
    from tests.testing.packs import REGISTRY

    files = requests.get("https://pypi.org/simple/tensorflow/", timeout=60, headers={
        "Accept": "application/vnd.pypi.simple.v1+json"}).json()["files"]
    entry = next(f for f in files if f["filename"].startswith(f"tensorflow-{version}-cp36-")
                 and "manylinux" in f["filename"])
    with zipfile.ZipFile(RangeFile(requests.Session(), entry["url"], int(entry["size"]), 60,
                                   limit=None)) as wheel:
        names = wheel.namelist()
        source = wheel.read(next(n for n in names if n.endswith(saving))).decode()
        meta = wheel.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert "f.attrs['keras_version'].decode('utf8')" in source
    assert ("Requires-Dist: h5py" not in meta) == capped
    rows = REGISTRY.get("tensorflow").undeclared_imports({"tensorflow": version})
    assert [row.requirement for row in rows] == (["h5py<3"] if capped else [])
