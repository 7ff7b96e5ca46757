"""init reads the repository's own code as text for its Python: Python 2 code is named
before it fails at import."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

from envforge.importers.pycode import scan_code
from envforge.inputfile import DEPENDENCY_LIMIT


@pytest.mark.posix_only(reason="a FIFO and a symbolic link among the files")
def test_code_that_does_not_parse_for_the_python_is_named(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "ok.py").write_text("import os\nprint(os.sep)\n")
    (tmp_path / "pkg" / "tokenizer.py").write_text("import re\nRE_NUM = ur'[0-9]+'\n")  # DeepMoji
    (tmp_path / "train.py").write_text("print 'epoch', 1\n")
    (tmp_path / "escapes.py").write_text("PATTERN = '\\d+'\n")  # a warning, not an error
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "hook.py").write_text("print 'hidden'\n")
    (tmp_path / "big.py").write_bytes(b"print 'x'\n" + b"#" * DEPENDENCY_LIMIT)
    outside = tmp_path.parent / f"{tmp_path.name}-outside.py"
    outside.write_text("print 'not the repository'\n")
    (tmp_path / "link.py").symlink_to(outside)
    os.mkfifo(tmp_path / "fifo.py")  # read, it would block init for ever
    found = scan_code(tmp_path, (3, 7))
    assert found.files == 4
    assert "big" in found.local  # too big to read, still a module the repository defines
    assert [(p, n) for p, n, _ in found.failing] == [("train.py", 1), ("pkg/tokenizer.py", 2)]
    note = found.summary("3.7")
    assert note is not None and note.startswith(
        "2 of 4 .py files do not parse as Python 3.7 (first: train.py:1: ")
    assert scan_code(tmp_path / "pkg", (3, 7)).failing[0][0] == "tokenizer.py"


def test_async_as_a_name_is_python_3_6_code_not_3_7s(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("async = True\n")
    assert scan_code(tmp_path, (3, 6)).summary("3.6") is None
    assert scan_code(tmp_path, (3, 7)).failing


def test_code_nested_past_the_parser_is_named_not_a_crash(tmp_path: Path) -> None:
    """A file of the repository is input: 400 KB of ``1+1+…`` or ``-`` signs made ast.parse
    raise RecursionError or MemoryError, which ended init with a traceback."""
    (tmp_path / "sum.py").write_text("x = " + "+".join(["1"] * 200_000) + "\n")
    (tmp_path / "signs.py").write_text("x = " + "-" * 200_000 + "1\n")
    found = scan_code(tmp_path, (3, 7))
    assert found.files == 2
    assert [(p, n) for p, n, _ in found.failing] == [("signs.py", 0), ("sum.py", 0)]


def test_imports_and_file_names_are_read_as_text(tmp_path: Path) -> None:
    """The test runner init adds is shown by what the code imports (nested in a test too)
    and by pytest's conftest.py; relative imports name no distribution."""
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "conftest.py").write_text("def pytest_addoption(parser):\n    pass\n")
    (tmp_path / "tests" / "model_test.py").write_text(
        "import unittest\nfrom . import helpers\n\n\nclass T(unittest.TestCase):\n"
        "    def test_slow(self):\n        import pytest\n        from nose.tools import ok_\n")
    (tmp_path / "train.py").write_text("import numpy.linalg as la\nfrom os import path\n")
    found = scan_code(tmp_path, (3, 7))
    assert found.imports == {"numpy": "train.py:1", "os": "train.py:2",
                             "unittest": "tests/model_test.py:1",
                             "pytest": "tests/model_test.py:7",
                             "nose": "tests/model_test.py:8"}
    assert found.named["conftest.py"] == "tests/conftest.py"


def test_watched_names_are_found_however_imported_or_aliased(tmp_path: Path) -> None:
    """``from scipy.misc import imread`` (face_classification), ``from scipy import misc;
    misc.imresize``, ``import numpy as np; np.float``; an unwatched name is not kept, and a
    repository's own modules are known by name."""
    (tmp_path / "src" / "utils").mkdir(parents=True)
    (tmp_path / "src" / "utils" / "preprocessor.py").write_text(
        "import numpy as np\nfrom scipy.misc import imread, imresize\n")
    (tmp_path / "src" / "train.py").write_text(
        "from scipy import misc\nimport numpy as np\n\n\ndef f(x):\n"
        "    return misc.imresize(x, 2).astype(np.float), np.float64\n")
    watch = frozenset({"scipy.misc.imread", "scipy.misc.imresize", "numpy.float"})
    found = scan_code(tmp_path, (3, 7), watch)
    assert found.uses == {"scipy.misc.imread": "src/utils/preprocessor.py:2",
                          "scipy.misc.imresize": "src/train.py:6",  # src/ read first
                          "numpy.float": "src/train.py:6"}
    assert found.local == {"preprocessor", "train"}  # no package: scripts' folders
    (tmp_path / "src" / "utils" / "__init__.py").write_text("")
    assert scan_code(tmp_path, (3, 7)).local == {"utils", "train"}
    assert scan_code(tmp_path, (3, 7)).uses == {}


def test_an_import_whose_other_branch_imports_the_name_from_elsewhere_is_no_use(
        tmp_path: Path) -> None:
    """qubvel/segmentation_models v0.2.1 imports ``_obtain_input_shape`` from Keras before
    2.2.0 and from keras_applications after (an ``if``/``else``); a ``try``/``except
    ImportError`` fallback is the same. Only an import with no alternative counts."""
    shape = "keras.applications.imagenet_utils._obtain_input_shape"
    (tmp_path / "inception.py").write_text(
        "import keras\nfrom distutils.version import StrictVersion\n\n"
        "if StrictVersion(keras.__version__) < StrictVersion('2.2.0'):\n"
        "    from keras.applications.imagenet_utils import _obtain_input_shape\n"
        "else:\n    from keras_applications.imagenet_utils import _obtain_input_shape\n")
    (tmp_path / "fallback.py").write_text(
        "try:\n    from sklearn.cross_validation import KFold\n"
        "except ImportError:\n    from sklearn.model_selection import KFold\n")
    watch = frozenset({shape, "sklearn.cross_validation"})
    assert scan_code(tmp_path, (3, 7), watch).uses == {}
    (tmp_path / "plain.py").write_text(
        "try:\n    from keras.applications.imagenet_utils import _obtain_input_shape\n"
        "except ImportError:\n    _obtain_input_shape = None\n")
    assert scan_code(tmp_path, (3, 7), watch).uses == {shape: "plain.py:2"}
    (tmp_path / "plain.py").unlink()  # the name still binds: a use through it counts
    (tmp_path / "arrays.py").write_text(
        "try:\n    import cupy as xp\nexcept ImportError:\n    import numpy as xp\n"
        "x = xp.float\n")
    assert scan_code(tmp_path, (3, 7), watch | {"numpy.float"}).uses == {
        "numpy.float": "arrays.py:5"}


def test_a_name_watched_as_called_counts_only_where_it_is_called(tmp_path: Path) -> None:
    """Keras 1's functional ``merge`` (rykov8/ssd_keras ssd.py:12 and :252) is a call of
    ``keras.layers.merge``; Keras 2 code imports the module of that name and calls what is
    in it, which is no use of the removed function."""
    (tmp_path / "ssd.py").write_text(
        "from keras.layers import merge\n\n\ndef f(a, b):\n"
        "    return merge([a, b], mode='concat', concat_axis=1)\n")
    (tmp_path / "keras2.py").write_text(
        "from keras.layers import merge\nimport keras.layers.merge as m\n"
        "from keras.layers.merge import concatenate\n\n\ndef g(a, b):\n"
        "    return merge.concatenate([a, b]), m.add([a, b]), concatenate([a, b])\n")
    watch = frozenset({"keras.layers.merge()", "keras.layers.Merge"})
    assert scan_code(tmp_path, (3, 7), watch).uses == {"keras.layers.merge()": "ssd.py:5"}
    (tmp_path / "ssd.py").unlink()
    assert scan_code(tmp_path, (3, 7), watch).uses == {}
    (tmp_path / "k1.py").write_text("import keras\nx = keras.layers.merge([1, 2])\n"
                                    "from keras.layers import Merge\n")
    assert scan_code(tmp_path, (3, 7), watch).uses == {"keras.layers.merge()": "k1.py:2",
                                                       "keras.layers.Merge": "k1.py:3"}


def test_a_watched_module_is_found_through_its_members_and_in_python_2_files(
        tmp_path: Path) -> None:
    """``from sklearn.cross_validation import train_test_split`` uses the removed module
    (it went unseen: only the imported name itself was compared); a Python 2 file's import
    lines, read line by line, are what its port will use (mnielsen's network3.py:
    ``print "..."`` beside ``from theano.tensor.signal import downsample``)."""
    (tmp_path / "split.py").write_text(
        "from sklearn.cross_validation import train_test_split as tts\nimport sklearn\n"
        "f = sklearn.cross_validation.KFold\n")
    (tmp_path / "network3.py").write_text(
        "import cPickle\nfrom theano.tensor.signal import downsample  # pooling\n"
        "from scipy.misc import (imread,\n    imresize)\nprint \"GPU\"\n")
    watch = frozenset({"sklearn.cross_validation", "theano.tensor.signal.downsample",
                       "scipy.misc.imread", "scipy.misc.imresize"})
    found = scan_code(tmp_path, (3, 7), watch)
    assert found.uses == {"sklearn.cross_validation": "split.py:1",
                          "theano.tensor.signal.downsample": "network3.py:2",
                          "scipy.misc.imread": "network3.py:3"}  # a line's names only
    assert found.imports == {"sklearn": "split.py:1", "cPickle": "network3.py:1",
                             "theano": "network3.py:2", "scipy": "network3.py:3"}


def test_a_file_that_does_not_parse_still_tells_what_it_imports_line_by_line(
        tmp_path: Path) -> None:
    """Lasagne/Recipes' Python 2 examples (``print x`` beside ``import lasagne``): what they
    need installed is still what they import."""
    (tmp_path / "train.py").write_text(
        '"""Trains."""\nimport cPickle as pickle, numpy.random\n'
        "from lasagne.layers import DenseLayer\nfrom . import sibling\n"
        "  from theano import tensor as T\nprint 'epoch', 1\n")
    found = scan_code(tmp_path, (3, 7))
    assert [p for p, _, _ in found.failing] == ["train.py"]
    assert dict(found.imports) == {"cPickle": "train.py:2", "numpy": "train.py:2",
                                   "lasagne": "train.py:3", "theano": "train.py:5"}


def test_a_parenthesized_expression_in_a_with_is_python_37s_and_39s_form_is_not(
        tmp_path: Path) -> None:
    """google/dopamine's rainbow_agent_test.py: ``with (self.assertRaises(E)):`` nested in a
    block, which CPython before 3.12.3 refuses under feature_version (3, 7) (gh-115881) though
    Python 3.7 parses it; ``with (open(a) as f, ...):`` is 3.9's, named whatever this CPython's
    ast says of it (Windows' CPython 3.11.0 accepts it for 3.7: gh-94949 came after)."""
    (tmp_path / "ok.py").write_text(
        "import mock\nclass T:\n  def test(self):\n    with self.s() as s:\n"
        "      with (self.assertRaises(ValueError)):\n        s.run(\n          1)\n\n"
        "  def other(self):\n    pass\n")
    (tmp_path / "new.py").write_text("with (open('a') as f, open('b') as g):\n    pass\n")
    # columns count bytes: a non-ASCII name before the target must not hide its ``)``
    (tmp_path / "utf8.py").write_text("with (open('\u00fc\u00fc\u00fc') as f):\n    pass\n",
                                      encoding="utf-8")
    scan = scan_code(tmp_path, (3, 7))
    assert sorted(where for where, _, _ in scan.failing) == ["new.py", "utf8.py"]
    assert "mock" in scan.imports


def test_a_stop_iteration_a_generator_raises_or_reaches_is_found() -> None:
    """PEP 479: allenai/bilm-tf's data.py raises StopIteration in ``_load_random_shard``,
    which its generator ``get_sentence`` calls (four of its tests fail on Python 3.7); one in
    a generator's own body too; not an iterator's ``__next__``, one under ``try``, one in a
    nested function or a function no generator calls, nor a module importing
    ``generator_stop``."""
    from envforge.importers.pycode import generator_stops

    source = (
        "class Reader:\n"
        "    def _load_random_shard(self):\n"
        "        if not self._all_shards:\n"
        "            raise StopIteration\n"                     # 4: reached from a generator
        "        return self._all_shards.pop()\n"
        "    def get_sentence(self):\n"
        "        while True:\n"
        "            self._ids = self._load_random_shard()\n"
        "            yield self._ids\n"
        "    def __next__(self):\n"
        "        raise StopIteration\n"                         # 11: the protocol
        "def own(items):\n"
        "    for item in items:\n"
        "        if item is None:\n"
        "            raise StopIteration()\n"                   # 15: its own body
        "        try:\n"
        "            raise StopIteration\n"                     # 17: under try
        "        except StopIteration:\n"
        "            pass\n"
        "        def inner():\n"
        "            raise StopIteration\n"                     # 21: another function's
        "        yield item\n"
        "def helper():\n"
        "    raise StopIteration\n")                            # 24: no generator calls it
    assert list(generator_stops(ast.parse(source))) == [4, 15]
    future = "from __future__ import generator_stop\n" + source
    assert list(generator_stops(ast.parse(future))) == []


def test_a_module_imported_only_in_functions_nothing_names_is_uncalled(tmp_path: Path) -> None:
    """lanpa/tensorboardX v1.6: x2num.py's ``prepare_theano`` imports theano and nothing calls
    it; ``prepare_chainer`` is called, a string may name a function (a registry), and an
    import at module level, in a dunder method (``Logger.__init__``: Python calls it) or in a
    Python 2 file (read line by line) is never uncalled."""
    (tmp_path / "x2num.py").write_text(
        "import numpy as np\n\ndef make_np(x):\n    return prepare_chainer(x)\n\n"
        "def prepare_theano(x):\n    import theano\n    pass\n\n"
        "def prepare_chainer(x):\n    import chainer\n    return x\n\n"
        "def prepare_mxnet(x):\n    import mxnet\n\nHOOKS = {'mx': 'prepare_mxnet'}\n\n"
        "def prepare_caffe2(x):\n    def inner():\n        from caffe2.python import workspace\n"
        "    return x\n\nclass Logger:\n    def __init__(self):\n        import tensorboard\n")
    (tmp_path / "legacy.py").write_text(
        "import cPickle\nprint 'old'\ndef f():\n    import lasagne\n")
    scan = scan_code(tmp_path, (3, 7))
    assert scan.uncalled == {"theano": "x2num.py:7, in prepare_theano",
                             "caffe2": "x2num.py:21, in prepare_caffe2"}
    assert {"numpy", "chainer", "mxnet", "lasagne", "cPickle", "tensorboard"} <= set(scan.imports)


def test_a_module_imported_only_under_an_if_in_functions_is_optional(tmp_path: Path) -> None:
    """NVlabs/SPADE (2019-10-17): util/visualizer.py imports tensorflow only under ``if
    self.tf_log:`` in ``Visualizer.__init__``, its opt-in TensorBoard logging. An import at
    module level (even under an ``if``), in a function outside any ``if``, or in an ``if``
    at one site and outside it at another is not optional; an ``else`` branch is."""
    (tmp_path / "visualizer.py").write_text(
        "import os\nif os.name == 'nt':\n    import winreg\n\n"
        "class Visualizer:\n    def __init__(self, opt):\n        self.tf_log = opt.tf_log\n"
        "        if self.tf_log:\n            import tensorflow as tf\n            self.tf = tf\n"
        "        if opt.html:\n            pass\n        else:\n            import dominate\n\n"
        "def plot():\n    import matplotlib\n\n"
        "def save(fast):\n    if fast:\n        import ujson\n    import ujson\n")
    scan = scan_code(tmp_path, (3, 7))
    assert scan.optional == {"tensorflow": "visualizer.py:9, under `if self.tf_log:`",
                             "dominate": "visualizer.py:14, under `if opt.html:`"}
    assert {"winreg", "matplotlib", "ujson", "tensorflow"} <= set(scan.imports)


def test_a_module_of_its_own_packages_the_repository_lacks_is_absent(tmp_path: Path) -> None:
    """NVlabs/SPADE (2019-10-17): models/networks/normalization.py imports
    ``models.networks.sync_batchnorm``, which its README copies in from another repository.
    A module held as a file, a folder, a source not built yet (``.pyx``) or beside the
    importing script counts as held; a name under a module that is a file (``os.path``),
    another distribution's package and ``from a.b import c`` (maybe a name) do not count."""
    (tmp_path / "models" / "networks").mkdir(parents=True)
    for name in ("models/__init__.py", "models/networks/__init__.py",
                 "models/networks/loss.py", "models/networks/box.pyx"):
        (tmp_path / name).write_text("")
    (tmp_path / "models" / "networks" / "normalization.py").write_text(
        "import os.path\nimport numpy.linalg\nfrom models.networks.loss import x\n"
        "from models.networks.sync_batchnorm import SynchronizedBatchNorm2d\n"
        "import models.networks.box\nfrom models.networks import replicate\n"
        "from models.gone.deeper import y\n")
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "run.py").write_text("import helpers.io\n")
    (tmp_path / "tools" / "helpers").mkdir()
    (tmp_path / "tools" / "helpers" / "io.py").write_text("")
    scan = scan_code(tmp_path, (3, 7))
    assert scan.absent == {
        "models.networks.sync_batchnorm": "models/networks/normalization.py:4",
        "models.gone.deeper": "models/networks/normalization.py:7"}


@pytest.mark.posix_only("makes a symbolic link, which Windows lets only some users make")
def test_a_linked_folder_is_not_followed_to_judge_a_module_absent(tmp_path: Path) -> None:
    """A folder of the repository's own package that is a link (perhaps out of the
    repository) is not read: a module under it is not judged absent."""
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "__init__.py").write_text("")
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    outside.mkdir()
    (tmp_path / "models" / "vendor").symlink_to(outside, target_is_directory=True)
    (tmp_path / "models" / "run.py").write_text("import models.vendor.anything\n")
    assert scan_code(tmp_path, (3, 7)).absent == {}
