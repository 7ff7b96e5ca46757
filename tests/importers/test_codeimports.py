"""A repository with no dependency file: the requirements its code's imports call for, and the
modules init does not know, reported rather than guessed."""

from __future__ import annotations

from pathlib import Path

from envforge.importers.codeimports import from_imports, standard_library
from envforge.importers.pycode import scan_code


def _repository(root: Path) -> Path:
    (root / "models").mkdir()
    (root / "models" / "__init__.py").write_text("from resnet import *\n")  # Python 2's
    (root / "models" / "resnet.py").write_text("import torch.nn as nn\n")
    (root / "utils.py").write_text("import sys\n")
    (root / "main.py").write_text(
        "from __future__ import print_function\nimport torch\nimport os, cPickle, imp\n"
        "from models import *\nfrom utils import progress_bar\nfrom .local import x\n"
        "import torchvision.transforms as transforms\nimport caffe\nfrom PIL import Image\n"
        "import tensorflow as tf\n")
    return root


def test_each_known_module_is_its_distribution_unpinned_from_the_line_that_imports_it(
        tmp_path: Path) -> None:
    imported = from_imports(scan_code(_repository(tmp_path), (3, 7)), "3.7")
    assert [(f.requirement, f.origin) for f in imported.requirements] == [
        ("torch", "main.py:2"), ("torchvision", "main.py:7"), ("Pillow", "main.py:9"),
        ("tensorflow", "main.py:10")]
    assert all(f.mapped and "nothing pinned it" in f.note for f in imported.requirements)


def test_a_module_neither_its_own_the_standard_librarys_nor_known_is_reported(
        tmp_path: Path) -> None:
    imported = from_imports(scan_code(_repository(tmp_path), (3, 7)), "3.7")
    assert [(s.what, s.origin) for s in imported.skipped] == [("caffe", "main.py:8")]
    assert "not guessed" in imported.skipped[0].reason


def test_the_standard_library_is_the_proposed_pythons_and_python_2s() -> None:
    older, newer = standard_library("3.7"), standard_library("3.9")
    assert {"os", "cPickle", "urllib2", "Queue", "imp", "distutils", "macpath"} <= older
    assert "macpath" not in newer and "dummy_threading" not in newer and "imp" in newer
    assert "numpy" not in older


def test_a_folder_of_modules_without_init_is_the_repositorys_own(tmp_path: Path) -> None:
    """clovaai/deep-text-recognition-benchmark 68a80fe: ``from modules.transformation import
    TPS_SpatialTransformerNetwork``, its ``modules/`` folder holding no ``__init__.py`` (a
    namespace package, PEP 420); a ``tensorflow/`` folder of scripts stays TensorFlow."""
    (tmp_path / "modules").mkdir()
    (tmp_path / "modules" / "transformation.py").write_text("import numpy\n")
    (tmp_path / "tensorflow").mkdir()
    (tmp_path / "tensorflow" / "train.py").write_text("import tensorflow as tf\n")
    (tmp_path / "model.py").write_text(
        "from modules.transformation import TPS\nimport tensorflow\n")
    imported = from_imports(scan_code(tmp_path, (3, 7)), "3.7")
    assert [s.what for s in imported.skipped] == []
    assert {f.requirement for f in imported.requirements} == {"numpy", "tensorflow"}
