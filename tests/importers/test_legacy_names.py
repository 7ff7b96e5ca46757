"""legacy_names.toml's tensorflow-gpu and MKL rows against PyPI's own file lists (PEP 691
JSON): what broke (tensorflow-gpu 2.12.0 is a tiny sdist), why 1.x keeps the name (the
`tensorflow` 1.15.2+ wheels are CPU-only), and that MKL's conda names are PyPI's too."""

from __future__ import annotations

import io
import re
import urllib.request
import zipfile

import pytest
from packaging.utils import parse_wheel_filename

from envforge.importers.legacy_names import RemovedApiRow, legacy_names, map_requirement
from envforge.resolve.pypi_index import index_files
from tests.testing.packs import REGISTRY

PYPI = "https://pypi.org/simple"
MiB = 1 << 20

pytestmark = pytest.mark.network


def _linux_cp37(name: str) -> dict[str, int]:
    """Each release's cp37 manylinux x86-64 wheel size."""
    files = index_files(PYPI, name)
    assert files, f"PyPI lists no files for {name}"
    sizes = {}
    for entry in files:
        filename = str(entry["filename"])
        if not filename.endswith(".whl"):
            continue
        _, version, _, tags = parse_wheel_filename(filename)
        if any(t.interpreter == "cp37" and t.platform.startswith("manylinux")
               and t.platform.endswith("x86_64") for t in tags):
            sizes[str(version)] = int(entry["size"])
    return sizes


def test_tensorflow_gpu_2_12_is_the_refusing_sdist_the_rename_row_names() -> None:
    [row] = [r for r in legacy_names().rename if r.name == "tensorflow-gpu" and r.admits]
    files = {str(f["filename"]): f for f in index_files(PYPI, "tensorflow-gpu") or []}
    sdist = files[f"tensorflow-gpu-{row.admits}.tar.gz"]
    assert int(sdist["size"]) < 10_000 and "2,646 bytes" in row.source
    assert not any(name.startswith(f"tensorflow_gpu-{row.admits}-") for name in files)


def test_tensorflow_1_15_2_and_later_are_cpu_only_so_tensorflow_gpu_is_kept() -> None:
    cpu, gpu = _linux_cp37("tensorflow"), _linux_cp37("tensorflow-gpu")
    assert cpu["1.15.0"] > 300 * MiB  # the one GPU build among tensorflow 1.x
    for version in ("1.15.2", "1.15.3", "1.15.4", "1.15.5"):
        assert cpu[version] < 120 * MiB < 300 * MiB < gpu[version], version
        pinned = f"tensorflow-gpu=={version}"
        assert map_requirement(pinned, REGISTRY)[0] == pinned
    # -> 1.15.5
    assert map_requirement("tensorflow-gpu~=1.15", REGISTRY) == (
        "tensorflow-gpu~=1.15", "kept as written: it does not admit 2.12.0 (tensorflow would)")


def test_mkl_names_are_pypi_distributions() -> None:
    [row] = [r for r in legacy_names().conda_only if "mkl" in r.names]
    assert set(row.names) == {"mkl", "mkl-service", "intel-openmp"}
    for name in row.names:
        assert index_files(PYPI, name), name
        assert f"https://pypi.org/simple/{name}/" in row.source


def _keras_wheel(version: str) -> zipfile.ZipFile:
    files = {str(f["filename"]): str(f["url"]) for f in index_files(PYPI, "keras") or []}
    with urllib.request.urlopen(files[f"Keras-{version}-py2.py3-none-any.whl"],
                                timeout=60) as answer:
        return zipfile.ZipFile(io.BytesIO(answer.read()))


def _keras_row(name: str) -> RemovedApiRow:
    [row] = [r for r in legacy_names().removed_api
             if r.requirement == "keras" and name in r.names]
    return row


def test_keras_2_2_removed_the_legacy_merge_the_removed_api_row_names() -> None:
    """Keras 2.1.6's keras/legacy/layers.py has `class Merge` and `def merge` (exported by
    keras.layers), 2.2.0's has neither: the row caps Keras below 2.2 for code calling them."""
    row = _keras_row("keras.layers.Merge")
    assert row.below == "2.2" and set(row.names) == {"keras.layers.merge()",
                                                     "keras.layers.Merge"}
    defined = {}
    for version in ("2.1.6", "2.2.0"):
        wheel = _keras_wheel(version)
        legacy = wheel.read("keras/legacy/layers.py").decode()
        defined[version] = set(re.findall(r"^(?:def|class) (merge|Merge)\b", legacy, re.M))
        assert "from ..legacy.layers import *" in wheel.read("keras/layers/__init__.py").decode()
    assert defined == {"2.1.6": {"merge", "Merge"}, "2.2.0": set()}


def test_keras_2_2_1_left_out_the_private_obtain_input_shape() -> None:
    """fchollet/deep-learning-models imports ``_obtain_input_shape`` from Keras's
    imagenet_utils: 2.2.0 defines it, 2.2.1 re-exports keras_applications' module instead."""
    row = _keras_row("keras.applications.imagenet_utils._obtain_input_shape")
    assert row.below == "2.2.1"
    member = "keras/applications/imagenet_utils.py"
    old, new = (_keras_wheel(v).read(member).decode() for v in ("2.2.0", "2.2.1"))
    assert "\ndef _obtain_input_shape(" in old
    assert "_obtain_input_shape" not in new and "from keras_applications import" in new


def test_kerass_image_helpers_need_pil_which_no_metadata_requires() -> None:
    """The [[api_needs]] row for Keras's load_img: Keras 2.0.8's own image.py and
    Keras_Preprocessing 1.0.5's (Keras 2.2.4's) import PIL only where installed and raise
    without it, and neither wheel's METADATA requires Pillow."""
    [row] = [r for r in legacy_names().api_needs if "keras.preprocessing.image.load_img"
             in r.names]
    assert row.needs == ("Pillow",)
    files = {str(f["filename"]): str(f["url"])
             for f in index_files(PYPI, "keras-preprocessing") or []}
    with urllib.request.urlopen(files["Keras_Preprocessing-1.0.5-py2.py3-none-any.whl"],
                                timeout=60) as answer:
        preprocessing = zipfile.ZipFile(io.BytesIO(answer.read()))
    for wheel, member in ((_keras_wheel("2.0.8"), "keras/preprocessing/image.py"),
                          (preprocessing, "keras_preprocessing/image.py")):
        code = wheel.read(member).decode()
        assert "pil_image = None" in code and "\ndef load_img(" in code
        assert "raise ImportError('Could not import PIL.Image. '" in code
        metadata = next(n for n in wheel.namelist() if n.endswith(".dist-info/METADATA"))
        assert "pillow" not in wheel.read(metadata).decode().lower()


def test_a_yanked_release_of_a_kept_row_counts_for_an_exact_pin_only_for_its_reason() -> None:
    """PyPI yanked every torchvision before 0.3.0 "So that users won't accidentally install
    this when using python 3.11": an exact pin installs one (PEP 592), so init counts them;
    a file yanked for another reason (0.1.6's), or of a release the row leaves out, stays
    yanked."""
    from envforge.importers.legacy_names import kept_yanked

    reason = "So that users won't accidentally install this when using python 3.11"
    files = [{"filename": "torchvision-0.2.2.post3-py2.py3-none-any.whl", "yanked": reason},
             {"filename": "torchvision-0.1.6.tar.gz", "yanked": "past its support date"},
             {"filename": "torchvision-0.3.0-cp37-cp37m-manylinux1_x86_64.whl", "yanked": reason},
             {"filename": "torchvision-0.4.0-cp37-cp37m-manylinux1_x86_64.whl", "yanked": False}]
    assert [f["yanked"] for f in kept_yanked("TorchVision", files)] == [
        False, "past its support date", reason, False]
    assert kept_yanked("numpy", files[:1]) == files[:1]  # no row: as listed
