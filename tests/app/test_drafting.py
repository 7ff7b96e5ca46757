"""init's draft, offline (no index queries): the back-end a mounted framework needs is added
only where no requirement mounts one."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from envforge.app import drafting
from envforge.app.drafting import draft_spec
from envforge.app.packs import installed_packs
from envforge.errors import InputError
from envforge.importers.render import Draft, render_spec


def _draft(root: Path, commit_day: date) -> Draft:
    return draft_spec(root, source=str(root), name="r", platform="linux-64", lookup=None,
                      commit_day=commit_day)


def _requirements(tmp_path: Path, text: str) -> tuple[str, ...]:
    (tmp_path / "requirements.txt").write_text(text)
    draft = _draft(tmp_path, date(2018, 9, 9))
    return tuple(f.requirement for f in draft.repository.imported.requirements)


def test_keras_alone_gets_tensorflow_1x_and_python_3_7_at_most(tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_text("Keras==2.2.4\nnumpy\n")
    draft = _draft(tmp_path, date(2018, 9, 9))
    added = draft.repository.imported.requirements[-1]
    assert (added.requirement, added.origin, added.mapped) == (
        "tensorflow<2", "requirements.txt:1", True)
    assert draft.python.value is not None and draft.python.value.startswith("3.7")


@pytest.mark.parametrize("text", [
    "Keras==2.0.9\ntensorflow-gpu==1.4.0\n",  # the GPU build names the back-end
    "keras==2.1.6\nTheano==1.0.4\n",  # Theano mounts: backend = "theano"
    "keras==2.4.3\n",  # past multi-back-end Keras: no [keras] section, nothing to add
    "keras==2.3.1\ntensorflow>=2.0\n",  # TensorFlow 2 mounts no [tensorflow]: it is named
    "torch==1.4.0\n",  # a framework with no back-end key
])
def test_nothing_is_added_where_the_back_end_is_named_or_none_is_needed(
        tmp_path: Path, text: str) -> None:
    assert not any(r.startswith("tensorflow<2") for r in _requirements(tmp_path, text))


def _tests_importing(tmp_path: Path, line: str) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "model_test.py").write_text(f"import unittest\n{line}\n")


def test_the_test_runner_the_tests_import_is_added_from_the_line_that_imports_it(
        tmp_path: Path) -> None:
    """pytorch-pretrained-BERT (2019-04-30): its tests import pytest, its requirements do
    not name it, and its CI installed it by hand."""
    _tests_importing(tmp_path, "import pytest")
    (tmp_path / "requirements.txt").write_text("torch>=0.4.1\ntqdm\n")
    draft = _draft(tmp_path, date(2019, 4, 30))
    added = draft.repository.imported.requirements[-1]
    assert (added.requirement, added.origin, added.mapped) == (
        "pytest", "tests/model_test.py:2", True)
    assert "tests run under pytest" in added.note


def test_a_runner_added_from_the_code_is_not_also_reported_unknown(tmp_path: Path) -> None:
    """lisa-lab/DeepLearningTutorials has no dependency file and its code/test.py imports
    nose: init drafted nose from that line and warned, from the same line, that it knew no
    distribution of that name. The module a runner answers is no longer reported."""
    (tmp_path / "code").mkdir()
    (tmp_path / "code" / "test.py").write_text("import numpy\nimport nose\nimport midi\n")
    imported = _draft(tmp_path, date(2018, 6, 15)).repository.imported
    assert [f.requirement for f in imported.requirements] == ["numpy", "nose"]
    assert [s.what for s in imported.skipped] == ["midi"]


def test_a_test_helper_the_tests_import_is_added_by_its_module(tmp_path: Path) -> None:
    """pytorch/ignite v0.2.0: its tests' ``from mock import call, MagicMock`` (its CI
    installed mock by hand; six test modules failed to collect without it)."""
    _tests_importing(tmp_path, "from mock import MagicMock")
    assert "mock" in _requirements(tmp_path, "torch\n")


def test_a_conftest_alone_shows_pytest(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text("")
    assert _requirements(tmp_path, "six\n")[-1] == "pytest"


@pytest.mark.parametrize(("line", "text"), [
    ("import pytest", "six\npytest==3.6.0\n"),  # named already: kept as the project pins it
    ("import PyTest_helpers", "six\n"),  # not the runner's module
    ("from . import pytest", "six\n"),  # a relative import is the repository's own module
])
def test_no_runner_is_added_where_one_is_named_or_none_is_imported(
        tmp_path: Path, line: str, text: str) -> None:
    _tests_importing(tmp_path, line)
    requirements = _requirements(tmp_path, text)
    assert requirements.count("pytest") == 0 and "nose" not in requirements


def test_a_plugin_the_pytest_configuration_needs_is_added_with_its_line(
        tmp_path: Path) -> None:
    """keras-rl (2018-12-08): pytest.ini's addopts pass ``-n 2``; without pytest-xdist
    pytest exits with "unrecognized arguments: -n" before a test runs."""
    _tests_importing(tmp_path, "import pytest")
    (tmp_path / "pytest.ini").write_text("[pytest]\naddopts=-v\n        -n 2\n")
    requirements = _requirements(tmp_path, "keras>=2.0.7\n")
    assert requirements[-2:] == ("pytest", "pytest-xdist")
    draft = _draft(tmp_path, date(2018, 12, 8))
    plugin = draft.repository.imported.requirements[-1]
    assert plugin.origin == "pytest.ini:3" and "pass -n" in plugin.note


def test_no_plugin_is_added_without_pytest_or_where_it_is_named(tmp_path: Path) -> None:
    (tmp_path / "setup.cfg").write_text("[tool:pytest]\naddopts = -n 2\n")
    assert "pytest-xdist" not in _requirements(tmp_path, "six\n")  # nothing runs pytest
    (tmp_path / "conftest.py").write_text("")
    assert _requirements(tmp_path, "six\npytest-xdist==1.28.0\n").count("pytest-xdist") == 0


def _face_classification(tmp_path: Path, requirements: str) -> tuple[str, ...]:
    """oarriaga/face_classification (2017): its code reads images with scipy.misc and plots
    with matplotlib; its REQUIREMENTS.txt names neither, nor Pillow."""
    (tmp_path / "src" / "utils").mkdir(parents=True)
    (tmp_path / "src" / "utils" / "preprocessor.py").write_text(
        "import numpy as np\nfrom scipy.misc import imread, imresize\n")
    (tmp_path / "src" / "utils" / "inference.py").write_text(
        "import cv2\nimport matplotlib.pyplot as plt\nfrom utils import preprocessor\n")
    return _requirements(tmp_path, requirements)


def test_an_api_the_code_uses_caps_its_distribution_below_the_release_that_removed_it(
        tmp_path: Path) -> None:
    requirements = _face_classification(tmp_path, "keras==2.0.5\nopencv-python\n")
    assert requirements[-3:] == ("scipy<1.3", "Pillow", "matplotlib")
    assert "utils" not in requirements  # the repository's own package


@pytest.mark.parametrize(("named", "kept"), [
    ("scipy>=0.19", "scipy<1.3,>=0.19"),  # capped where it admits 1.3
    ("scipy==1.1.0", "scipy==1.1.0"),  # an exact pin stays
    ("scipy<1.2", "scipy<1.2"),  # already below
])
def test_a_named_requirement_is_capped_only_where_it_admits_the_removing_release(
        tmp_path: Path, named: str, kept: str) -> None:
    requirements = _face_classification(tmp_path, f"{named}\nopencv-python\nmatplotlib\n")
    assert requirements[0] == kept and requirements.count("matplotlib") == 1


def test_an_extra_whose_module_the_code_imports_is_added_from_its_line(
        tmp_path: Path) -> None:
    """keras-rl (2018-12-08): ``extras_require={'gym': ['gym']}``, and its integration tests
    import gym; its own ``utils/gym`` package is ``utils.gym``, not the module gym."""
    (tmp_path / "setup.py").write_text(
        "from setuptools import setup\nsetup(install_requires=['six'],\n"
        "      extras_require={'gym': ['gym'], 'plots': ['matplotlib>=2'], 'x': ['sphinx']})\n")
    (tmp_path / "utils" / "gym").mkdir(parents=True)
    for folder in ("utils", "utils/gym"):
        (tmp_path / folder / "__init__.py").write_text("")
    draft = _draft(tmp_path, date(2018, 12, 8))
    assert [f.requirement for f in draft.repository.imported.requirements] == ["six"]
    _tests_importing(tmp_path, "import gym\nimport matplotlib.pyplot as plt")
    draft = _draft(tmp_path, date(2018, 12, 8))
    added = draft.repository.imported.requirements[1:]
    assert [(f.requirement, f.origin) for f in added] == [
        ("gym", "setup.py:3"), ("matplotlib>=2", "setup.py:3")]  # the extra's, not a bare one
    assert "the project's extra [gym]; tests/model_test.py:2 imports gym" in added[0].note


def test_what_tests_require_names_and_the_tests_import_is_added(tmp_path: Path) -> None:
    """google/dopamine (2019-09-26): its tests import mock, which only ``tests_require``
    names (its README: "you will need to pip install mock")."""
    (tmp_path / "setup.py").write_text(
        "from setuptools import setup\nsetup(install_requires=['six'],\n"
        "      tests_require=['six', 'mock >= 1.0.0'])\n")
    _tests_importing(tmp_path, "import mock")
    added = _draft(tmp_path, date(2019, 9, 26)).repository.imported.requirements[1:]
    assert [(f.requirement, f.origin) for f in added] == [("mock>=1.0.0", "setup.py:3")]
    assert "the project's tests_require; tests/model_test.py:2 imports mock" in added[0].note


def test_a_test_extra_comes_whole_once_the_tests_import_one_of_its_requirements(
        tmp_path: Path) -> None:
    """openai/baselines (2020-01-31): its ``[test]`` extra names atari-py, which no file
    imports (gym does, for the Atari games its tests make: without it 29 of them failed at
    ``gym.make('PongNoFrameskip-v4')``), beside pytest and pandas, which its files import;
    its ``[mpi]`` extra stays out."""
    (tmp_path / "setup.py").write_text(
        "from setuptools import setup\nextras = {\n    'test': ['filelock', 'pytest',\n"
        "             'atari-py', 'pandas'],\n    'mpi': ['mpi4py'],\n}\n"
        "setup(install_requires=['gym'], extras_require=extras)\n")
    _tests_importing(tmp_path, "import gym")
    assert [f.requirement for f in
            _draft(tmp_path, date(2020, 1, 31)).repository.imported.requirements] == ["gym"]
    (tmp_path / "tests" / "conftest_test.py").write_text("import pytest\n")
    added = _draft(tmp_path, date(2020, 1, 31)).repository.imported.requirements[1:]
    assert [(f.requirement, f.origin) for f in added] == [
        ("pytest", "setup.py:3"), ("filelock", "setup.py:3"), ("atari-py", "setup.py:4"),
        ("pandas", "setup.py:4")]
    assert "the project's extra [test], which names what its tests need (the code imports " \
        "pytest of it)" in added[2].note


def test_an_api_no_release_has_is_reported_with_what_replaced_it(tmp_path: Path) -> None:
    """mnielsen/neural-networks-and-deep-learning (2018-03-12): network3.py, Python 2,
    imports Theano 0.7's downsample, which Theano-PyMC lacks (ImportError after 2to3): no
    pin brings it back, so init names the line and the port ([[gone_api]])."""
    (tmp_path / "requirements.txt").write_text("numpy==1.13.3\nTheano==0.7.0\n")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "network3.py").write_text(
        "import cPickle\nimport theano\nfrom theano.tensor.signal import downsample\n"
        "print \"Trying to run under a GPU\"\n")
    draft = _draft(tmp_path, date(2018, 3, 12))
    assert draft.to_port == (
        "src/network3.py:3 uses theano.tensor.signal.downsample, which no release of "
        "Theano-PyMC has: port it to theano.tensor.signal.pool (downsample.max_pool_2d: "
        "pool.pool_2d)",)
    assert f"# {draft.to_port[0]}\n" in render_spec(draft, installed_packs())
    (tmp_path / "src" / "network3.py").write_text("from theano.tensor.signal import pool\n")
    assert _draft(tmp_path, date(2018, 3, 12)).to_port == ()


def _code(tmp_path: Path, text: str) -> tuple[str, ...]:
    (tmp_path / "main.py").write_text(text)
    draft = _draft(tmp_path, date(2018, 8, 12))
    return tuple(f.requirement for f in draft.repository.imported.requirements)


def test_with_no_dependency_file_the_imports_are_the_requirements_each_on_its_line(
        tmp_path: Path) -> None:
    """carpedm20/DCGAN-tensorflow (2018-08-12): no dependency file, its README says
    "Tensorflow 0.12.1"; the framework's own rows apply as to a named requirement."""
    (tmp_path / "ops.py").write_text("import math\n")
    (tmp_path / "main.py").write_text(
        "import os\nimport scipy.misc\nimport numpy as np\nfrom ops import *\n"
        "import tensorflow as tf\nx = scipy.misc.imread\n")
    draft = _draft(tmp_path, date(2018, 8, 12))
    found = draft.repository.imported.requirements
    assert [(f.requirement, f.origin) for f in found] == [
        ("scipy<1.3", "main.py:2"), ("numpy", "main.py:3"), ("tensorflow<2", "main.py:5"),
        ("Pillow", "main.py:6")]
    assert draft.repository.files == () and draft.as_of.value == "2018-08-12"
    assert all("nothing pinned it" in f.note for f in found[:3])


def test_theano_imported_is_mapped_as_a_named_theano_is(tmp_path: Path) -> None:
    assert _code(tmp_path, "import theano\nimport lasagne\n") == (
        "Theano-PyMC==1.0.5", "Lasagne")


def test_keras_imported_alone_gets_its_back_end(tmp_path: Path) -> None:
    assert _code(tmp_path, "from keras.models import Sequential\n") == (
        "Keras<2.4", "tensorflow<2")  # multi-back-end Keras, on TensorFlow 1.x


def test_a_framework_a_dependency_file_leaves_out_is_added_before_its_pack_mounts(
        tmp_path: Path) -> None:
    """keithito/tacotron's requirements.txt leaves TensorFlow to its user ("It is assumed you
    have already installed tensorflow"), openai/gpt-2's too: the environment needs it to run
    that code, added before the packs mount (the TensorFlow 1.x line caps it); numpy comes
    with what a file names."""
    (tmp_path / "requirements.txt").write_text("tqdm\n")
    assert _code(tmp_path, "import tensorflow as tf\nimport numpy\nimport tqdm\n") == (
        "tqdm", "tensorflow<2")
    (tmp_path / "requirements.txt").write_text("tensorflow-gpu==1.15.0\n")
    assert _code(tmp_path, "import tensorflow as tf\n") == ("tensorflow-gpu==1.15.0",)


def test_theano_a_dependency_file_leaves_out_is_added_as_theano_pymc(tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_text("scipy\n")
    assert _code(tmp_path, "import theano.tensor as T\n") == ("scipy", "Theano-PyMC==1.0.5")


def test_code_importing_only_itself_and_the_standard_library_is_refused(
        tmp_path: Path) -> None:
    (tmp_path / "util.py").write_text("import os\n")
    with pytest.raises(InputError, match=r"no \.py file of it imports a distribution"):
        _code(tmp_path, "import sys, util\nfrom . import x\n")


def _video(tmp_path: Path, code: str, requirements: str = "gym==0.15.4\n") -> str:
    (tmp_path / "requirements.txt").write_text(requirements)
    (tmp_path / "train.py").write_text(code)
    return render_spec(_draft(tmp_path, date(2020, 1, 31)), installed_packs())


def test_code_using_gyms_monitor_gets_debians_ffmpeg_with_its_closure(tmp_path: Path) -> None:
    """gym's video recorder runs an ffmpeg executable from PATH (openai/baselines: 24 tests
    fail without one); the spec says which line needs it."""
    text = _video(tmp_path, "import gym\nfrom gym import wrappers\n"
                  "env = wrappers.Monitor(gym.make('CartPole-v0'), 'videos')\n")
    assert "\n[debian]\n# for gym.wrappers.Monitor (train.py:3) on linux-64: gym's video " \
        "recorder" in text
    assert '\nsuite = "bookworm"\npackages = ["ffmpeg"]\ndependencies = "closure"\n' in text


def test_code_using_gym_without_recording_video_gets_no_debian(tmp_path: Path) -> None:
    text = _video(tmp_path, "import gym\nenv = gym.make('CartPole-v0')\n"
                  "from gym.wrappers.monitoring import stats_recorder\n")
    assert "\n[debian]\n" not in text and "ffmpeg" not in text


def test_theano_and_gyms_video_recorder_share_one_debian_section(tmp_path: Path) -> None:
    text = _video(tmp_path, "import theano\n"
                  "from gym.wrappers.monitoring.video_recorder import VideoRecorder\n",
                  "gym==0.15.4\nTheano==1.0.4\n")
    assert text.count("\n[debian]\n") == 1 and text.count("\nsuite = ") == 1
    assert "\n# for [theano] on linux-64: " in text
    assert "\n# for gym.wrappers.monitoring.video_recorder (train.py:2) on linux-64: " in text
    assert '\npackages = ["libopenblas0-pthread", "libgfortran5", "libquadmath0", "ffmpeg"]\n' \
        'dependencies = "closure"\n' in text


def test_win_64_gets_no_debian_and_a_note_to_install_ffmpeg(tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_text("scikit-video\n")
    (tmp_path / "clip.py").write_text("import skvideo.io\nskvideo.io.vread('a.mp4')\n")
    draft = draft_spec(tmp_path, source=str(tmp_path), name="r", platform="win-64",
                       lookup=None, commit_day=date(2020, 1, 31))
    text = render_spec(draft, installed_packs())
    assert "\n[debian]\n" not in text
    assert "\n# skvideo.io (clip.py:1) runs `ffmpeg` from PATH: no [debian] on win-64" in text


@pytest.mark.posix_only("pyenv's Python 3.7 on this host")
def test_a_stated_patch_this_host_lacks_takes_the_hosts_of_that_minor() -> None:
    """A conda environment's `python==3.6.12` where pyenv has 3.6.15: the spec names the host's
    (patch releases share the ABI and wheels), else verify's version row fails against the
    Python apply found; the stated one is said."""
    from envforge.app.drafting import _full_python
    from envforge.host.interpreters import find_interpreter
    from envforge.importers.propose import Proposal

    host = find_interpreter("3.7").version
    assert _full_python(Proposal(host, "stated in r.txt:1")).value == host
    stated = "3.7.0" if host != "3.7.0" else "3.7.1"
    moved = _full_python(Proposal(stated, "stated in r.txt:1"))
    assert moved.value == host
    assert moved.why.startswith(f"stated in r.txt:1 as {stated}; {host} is the Python 3.7 on "
                                "this host (a patch release of the same minor")
    assert _full_python(Proposal("3.7", "x")).value == host


def test_theanos_old_gpu_back_end_and_sandbox_neighbours_are_named_to_port(
        tmp_path: Path) -> None:
    """Newmu/dcgan_code imports theano.sandbox.cuda.dnn (Theano-PyMC's module only calls
    pytest.skip), keras-contrib theano.sandbox.neighbours (an empty file there): both named
    with what replaced them, and the removed private Keras helper caps Keras below 2.2.1."""
    (tmp_path / "ops.py").write_text(
        "import theano\nfrom theano.sandbox.cuda.dnn import dnn_conv\n"
        "from theano.sandbox.neighbours import images2neibs\n"
        "from keras.applications.imagenet_utils import _obtain_input_shape\n")
    draft = _draft(tmp_path, date(2017, 9, 8))
    assert [line.split(",", 1)[0] for line in draft.to_port] == [
        "ops.py:2 uses theano.sandbox.cuda", "ops.py:3 uses theano.sandbox.neighbours"]
    assert "port it to the gpuarray back-end, theano.gpuarray" in draft.to_port[0]
    assert draft.to_port[1].endswith("port it to theano.tensor.nnet.neighbours (images2neibs, "
                                     "neibs2images)")
    assert [f.requirement for f in draft.repository.imported.requirements] == [
        "Theano-PyMC==1.0.5", "Keras<2.2.1"]  # Theano imported: its back-end


def _bilm_like(root: Path, requirements: str = "h5py\n") -> None:
    root.mkdir(exist_ok=True)
    (root / "requirements.txt").write_text(requirements)
    (root / "bilm").mkdir()
    (root / "bilm" / "data.py").write_text(
        "class LMDataset:\n    def _load_random_shard(self):\n        raise StopIteration\n"
        "    def get_sentence(self):\n        while True:\n"
        "            yield self._load_random_shard()\n")


def test_a_stop_iteration_pep_479_turns_into_runtime_error_is_named_to_port(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """allenai/bilm-tf (2018-10-16), on a host without Python 3.6: its generator reaches a
    ``raise StopIteration``, which Python 3.7, the Python proposed, turns into RuntimeError:
    named with its line."""
    monkeypatch.setattr(drafting, "_host_older", lambda: ())
    _bilm_like(tmp_path)
    draft = _draft(tmp_path, date(2018, 10, 16))
    assert draft.python.minor == "3.7"
    assert draft.to_port == (
        "bilm/data.py:3 raises StopIteration into a generator, which Python 3.7 turns into "
        "RuntimeError (PEP 479): port it to `return`, or set [python] version to 3.6",)
    assert f"# {draft.to_port[0]}\n" in render_spec(draft, installed_packs())


def test_code_a_stop_iteration_breaks_on_3_7_takes_the_python_3_6_this_host_has(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same code where this host has Python 3.6, which runs it as written (bilm-tf's 24
    tests pass there; four fail on 3.7): proposed with the line, nothing left to port; a
    repository whose stated range leaves 3.6 out keeps 3.7 and the port."""
    monkeypatch.setattr(drafting, "_host_older", lambda: ("3.6",))
    _bilm_like(tmp_path / "kept")
    draft = _draft(tmp_path / "kept", date(2018, 10, 16))
    assert draft.python.minor == "3.6" and draft.to_port == ()
    assert draft.python.why.startswith(
        "bilm/data.py:3 raises StopIteration into a generator, which Python 3.7 and later "
        "turn into RuntimeError (PEP 479): Python 3.6, which this host has, runs it as written "
        "(proposed before: 3.7, the newest Python released by 2018-10-16")
    _bilm_like(tmp_path / "stated")
    (tmp_path / "stated" / "setup.py").write_text(
        "from setuptools import setup\nsetup(name='bilm', python_requires='>=3.7')\n")
    stated = _draft(tmp_path / "stated", date(2018, 10, 16))
    assert stated.python.minor == "3.7" and len(stated.to_port) == 1


def test_a_framework_imported_only_in_an_uncalled_function_is_not_added(
        tmp_path: Path) -> None:
    """lanpa/tensorboardX v1.6 (setup.py names no framework): x2num.py imports theano only in
    ``prepare_theano``, which nothing calls; init had added Theano-PyMC, mounted the Theano
    pack and Debian's OpenBLAS, and built it. torch, imported at module level, is added."""
    (tmp_path / "setup.py").write_text(
        "from setuptools import setup\nsetup(name='tensorboardX', install_requires=['numpy'])\n")
    (tmp_path / "x2num.py").write_text(
        "import torch\n\ndef prepare_theano(x):\n    import theano\n    pass\n")
    draft = _draft(tmp_path, date(2019, 1, 2))
    assert [f.requirement for f in draft.repository.imported.requirements] == [
        "numpy", "torch"]
    assert [(s.what, s.origin) for s in draft.repository.imported.skipped] == [
        ("theano", "x2num.py:4, in prepare_theano")]
    assert "[theano]" not in render_spec(draft, installed_packs())


def test_a_second_framework_imported_only_under_an_if_is_reported_not_added(
        tmp_path: Path) -> None:
    """NVlabs/SPADE (2019-10-17): requirements.txt names torch; util/visualizer.py imports
    tensorflow only under ``if self.tf_log:`` (its TensorBoard logging, off unless asked).
    init had added ``tensorflow<2`` and mounted TensorFlow 1.15's pack beside PyTorch. With no
    framework named, the same import is added: the code has no other."""
    (tmp_path / "requirements.txt").write_text("torch>=1.0.0\ntorchvision\ndill\n")
    (tmp_path / "util").mkdir()
    (tmp_path / "util" / "__init__.py").write_text("")
    (tmp_path / "util" / "visualizer.py").write_text(
        "import os\n\nclass Visualizer:\n    def __init__(self, opt):\n"
        "        self.tf_log = opt.tf_log\n        if self.tf_log:\n"
        "            import tensorflow as tf\n            self.tf = tf\n")
    (tmp_path / "train.py").write_text("from util.visualizer import Visualizer\nVisualizer(1)\n")
    draft = _draft(tmp_path, date(2019, 10, 17))
    found = draft.repository.imported.requirements
    assert not any(f.requirement.startswith("tensorflow") for f in found)
    assert [(s.what, s.origin) for s in draft.repository.imported.skipped] == [
        ("tensorflow", "util/visualizer.py:7, under `if self.tf_log:`")]
    assert "add tensorflow to use that feature" in draft.repository.imported.skipped[0].reason
    assert "[tensorflow]" not in render_spec(draft, installed_packs())
    (tmp_path / "requirements.txt").write_text("dill\n")
    alone = _draft(tmp_path, date(2019, 10, 17))
    assert any(f.requirement.startswith("tensorflow")
               for f in alone.repository.imported.requirements)


def test_a_module_the_repository_lacks_is_reported_with_the_readme_step_that_gives_it(
        tmp_path: Path) -> None:
    """NVlabs/SPADE (2019-10-17): its code imports models.networks.sync_batchnorm, which its
    README copies in from another repository; the draft names the import and the README
    line (its run failed at `No module named 'models.networks.sync_batchnorm'` with nothing
    said before). Without the README, a .gitmodules points at a submodule."""
    (tmp_path / "requirements.txt").write_text("torch>=1.0.0\n")
    (tmp_path / "models" / "networks").mkdir(parents=True)
    (tmp_path / "models" / "__init__.py").write_text("")
    (tmp_path / "models" / "networks" / "__init__.py").write_text("")
    (tmp_path / "models" / "networks" / "normalization.py").write_text(
        "import torch\nfrom models.networks.sync_batchnorm import SynchronizedBatchNorm2d\n")
    (tmp_path / "README.md").write_text(
        "```\ncd models/networks/\ngit clone https://github.com/vacancy/Synchronized-BatchNorm"
        "-PyTorch\ncp -rf Synchronized-BatchNorm-PyTorch/sync_batchnorm .\n```\n")
    skipped = _draft(tmp_path, date(2019, 10, 17)).repository.imported.skipped
    [absent] = [s for s in skipped if s.what == "models.networks.sync_batchnorm"]
    assert absent.origin == "models/networks/normalization.py:2"
    assert "README's line 3 clones https://github.com/vacancy/Synchronized-BatchNorm-PyTorch" \
        in absent.reason
    (tmp_path / "README.md").unlink()
    (tmp_path / ".gitmodules").write_text("[submodule \"sbn\"]\n")
    skipped = _draft(tmp_path, date(2019, 10, 17)).repository.imported.skipped
    assert "git submodule update --init" in next(
        s.reason for s in skipped if s.what == "models.networks.sync_batchnorm")


def test_kerass_load_img_gets_pillow(tmp_path: Path) -> None:
    """fchollet/deep-learning-models: resnet50.py calls ``image.load_img``, which imports PIL
    only where installed; no Keras metadata requires Pillow: init adds it from that line."""
    (tmp_path / "resnet50.py").write_text(
        "from keras.preprocessing import image\n\nimg = image.load_img('e.jpg')\n")
    found = _draft(tmp_path, date(2017, 9, 8)).repository.imported.requirements
    assert [(f.requirement, f.origin) for f in found][-1] == ("Pillow", "resnet50.py:3")
    (tmp_path / "resnet50.py").write_text("from keras.preprocessing import image\n")
    found = _draft(tmp_path, date(2017, 9, 8)).repository.imported.requirements
    assert "Pillow" not in [f.requirement for f in found]


def test_absl_is_absl_py(tmp_path: Path) -> None:
    """deepmind/sonnet v1.23 imports absl (its tests' parameterized), PyPI's absl-py."""
    assert _code(tmp_path, "from absl.testing import parameterized\n") == ("absl-py",)


def test_the_day_s_older_python_is_3_6_for_3_7_only_where_this_host_has_it() -> None:
    """fizyr/keras-retinanet 0.5.0 (2018-10-17): Python 3.7 was the newest of the day, and no
    TensorFlow had a cp37 wheel until 2019-02; 3.6 resolves on the day (TensorFlow 1.11, the
    3.6 its CI ran), where this host has it. 3.8's older one stays 3.7."""
    from envforge.importers.propose import Proposal

    day = Proposal("2018-10-17", "the repository's last commit")
    newest = Proposal("3.7", "the newest Python released by 2018-10-17")
    fallback = drafting._older(newest, day, ("3.6",))
    assert fallback is not None and fallback.value is not None
    assert fallback.value.startswith("3.6") and fallback.why.startswith(
        "Python 3.7, the newest released by 2018-10-17, did not resolve on that day; 3.6 did")
    assert drafting._older(newest, day) is None
    later = drafting._older(Proposal("3.8", "the newest Python released by 2019-12-31"),
                            Proposal("2019-12-31", "x"), ("3.6",))
    assert later is not None and later.value is not None and later.value.startswith("3.7")
    assert drafting._older(Proposal("3.7", "stated in setup.py:9"), day, ("3.6",)) is None
    late = Proposal("2022-03-01", "x")  # 3.7 proposed for pins (tensorflow==1.15.0), 3.6 over
    assert drafting._older(Proposal("3.7", "the newest Python released by 2022-03-01"), late,
                           ("3.6",)) is None


def test_a_local_build_pin_with_no_page_to_serve_it_takes_its_public_release(
        tmp_path: Path) -> None:
    """siqueira-hc's facial-expression README (2020): ``torch==1.5.0+cpu`` in requirements.txt
    and the ``-f`` page on pip's command line only. PyPI holds no local builds (PEP 440), so
    init said "the index has no such release" and moved the pin to the next release: now it
    takes the release the build was made from, its marker kept."""
    found = {f.requirement: f for f in _draft_of(tmp_path, (
        "torch==1.5.0+cpu\ntorchvision==0.6.0+cpu; sys_platform != 'darwin'\nsix==1.14.0\n"
    )).repository.imported.requirements}
    assert list(found) == ["torch==1.5.0", 'torchvision==0.6.0; sys_platform != "darwin"',
                           "six==1.14.0"]
    assert found["torch==1.5.0"].note.startswith(
        "was torch==1.5.0+cpu: a local build (+cpu), and the requirements name no find-links "
        "page or index that serves it; PyPI holds none (PEP 440")
    assert found["torch==1.5.0"].note.endswith("1.5.0 is the release it was built from")
    assert not found["torch==1.5.0"].mapped  # the project's pin still dates it


@pytest.mark.parametrize("source", ["-f https://download.pytorch.org/whl/torch_stable.html",
                                    "--extra-index-url https://download.pytorch.org/whl/cpu",
                                    "-i https://mirror.example/simple"])
def test_a_local_build_pin_beside_a_page_that_may_serve_it_is_kept_unchecked(
        tmp_path: Path, source: str) -> None:
    """With a page or index named beside it, the pin stays as written: the index's file list
    cannot judge it (it was moved to 1.5.0 as "no such release"), and Python is proposed from
    the files of the release it was built from."""
    listing = [{"filename": "torch-1.4.0-cp37-cp37m-manylinux1_x86_64.whl",
                "upload-time": "2020-01-16T00:00:00Z"},
               {"filename": "torch-1.5.0-cp37-cp37m-manylinux1_x86_64.whl",
                "upload-time": "2020-04-21T00:00:00Z"}]
    (tmp_path / "requirements.txt").write_text(f"{source}\ntorch==1.4.0+cpu\n")
    draft = draft_spec(tmp_path, source=str(tmp_path), name="r", platform="linux-64",
                       lookup=lambda index, name: listing, commit_day=date(2020, 3, 1))
    (kept,) = draft.repository.imported.requirements
    assert (kept.requirement, kept.note) == ("torch==1.4.0+cpu", "")
    assert draft.python.minor == "3.7" and "torch==1.4.0+cpu" in draft.python.why


def _draft_of(tmp_path: Path, requirements: str) -> Draft:
    (tmp_path / "requirements.txt").write_text(requirements)
    return _draft(tmp_path, date(2020, 4, 27))


def test_a_repository_of_notebooks_gets_their_imports_and_jupyters_notebook(
        tmp_path: Path) -> None:
    """A tutorial repository whose code is its notebooks: what their cells import, each from
    its cell and line, and Jupyter's notebook to run them where no requirement names a front
    end; none where one does (Hvass-Labs/TensorFlow-Tutorials names jupyter)."""
    import json

    cells = [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": 1,
              "source": ["%matplotlib inline\n", "import matplotlib.pyplot as plt\n",
                         "import gym"]}]
    notebook = json.dumps({"nbformat": 4, "nbformat_minor": 2, "metadata": {}, "cells": cells})
    (tmp_path / "alone").mkdir()
    (tmp_path / "alone" / "16_RL.ipynb").write_text(notebook)
    found = {f.requirement: f for f in _draft(tmp_path / "alone", date(2019, 8, 26))
             .repository.imported.requirements}
    assert list(found) == ["matplotlib", "gym", "notebook"]
    assert found["gym"].origin == "16_RL.ipynb:cell 1, line 3"
    assert (found["notebook"].origin, found["notebook"].mapped) == ("16_RL.ipynb", True)
    assert found["notebook"].note.startswith(
        "added: the repository's notebooks run under Jupyter (`jupyter notebook`, or headless "
        "`jupyter nbconvert --to notebook --execute`); 1 notebook, and no requirement names")
    (tmp_path / "named").mkdir()
    (tmp_path / "named" / "16_RL.ipynb").write_text(notebook)
    (tmp_path / "named" / "requirements.txt").write_text("jupyter\nmatplotlib\n")
    named = [f.requirement for f in _draft(tmp_path / "named", date(2019, 8, 26))
             .repository.imported.requirements]
    assert named == ["jupyter", "matplotlib", "gym"]


def test_what_a_notebook_pip_installs_is_required_from_its_cell_and_line(
        tmp_path: Path) -> None:
    """A Colab-era notebook's first cell, ``!pip install tensorflow==1.14.0 keras==2.2.4``,
    is its only record of its stack: those pins, from their cell and line, merged as a
    dependency file's (a requirements file's exact pin first), the notebook among the files."""
    import json

    cells = [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": 1,
              "source": ["!pip install -q tensorflow==1.14.0 keras==2.2.4\n",
                         "%pip install numpy\n", "import keras\n"]}]
    (tmp_path / "nb").mkdir()
    (tmp_path / "nb" / "train.ipynb").write_text(json.dumps(
        {"nbformat": 4, "nbformat_minor": 2, "metadata": {}, "cells": cells}))
    (tmp_path / "requirements.txt").write_text("numpy==1.16.4\n")
    draft = _draft(tmp_path, date(2019, 8, 1))
    found = {f.requirement: f.origin for f in draft.repository.imported.requirements}
    assert draft.repository.files == ("requirements.txt", "nb/train.ipynb")
    assert found["numpy==1.16.4"] == "requirements.txt:1, also nb/train.ipynb:cell 1, line 2"
    assert found["tensorflow==1.14.0"] == found["keras==2.2.4"] == \
        "nb/train.ipynb:cell 1, line 1"


def test_a_release_lines_pin_bounds_the_python_as_an_exact_pin_does(tmp_path: Path) -> None:
    """jiesutd/NCRFpp's README states "PyTorch: 1.0" (torch==1.0.*), whose wheels stop at
    cp37: init had proposed Python 3.9, the newest of the repository's day, which the pin
    cannot resolve on (its day widened four times for nothing); the line's releases' files
    bound the Python as an exact pin's do, and its legacy name is the index's."""
    listing = [{"filename": f"torch-{version}-cp{py}-cp{py}m-manylinux1_x86_64.whl",
                "upload-time": day} for version, day in (("1.0.0", "2018-12-07T00:00:00Z"),
                                                          ("1.0.1", "2019-02-07T00:00:00Z"))
               for py in ("36", "37")]
    listing += [{"filename": "torch-1.7.0-cp39-cp39-manylinux1_x86_64.whl",
                 "upload-time": "2020-10-27T00:00:00Z"}]
    asked: list[str] = []

    def lookup(index: str, name: str) -> list[dict[str, str]]:
        asked.append(name)
        return listing

    (tmp_path / "requirements.txt").write_text("PyTorch==1.0.*\n")
    draft = draft_spec(tmp_path, source=str(tmp_path), name="r", platform="linux-64",
                       lookup=lookup, commit_day=date(2020, 11, 10))
    assert "torch" in asked and draft.python.minor == "3.7", draft.python.why
    assert "torch==1.0.*" in draft.python.why
    (tmp_path / "requirements.txt").write_text("torch\n")
    unpinned = draft_spec(tmp_path, source=str(tmp_path), name="r", platform="linux-64",
                          lookup=lookup, commit_day=date(2020, 11, 10))
    assert unpinned.python.minor == "3.9"  # nothing bounds it: the newest of the day


@pytest.mark.parametrize(("code", "cause"), [
    ("import pygraphviz as pgv\ng = pgv.AGraph(directed=True)\n", "pygraphviz.AGraph"),
    ("from keras.utils import plot_model\n", "keras.utils.plot_model"),
    ("import pydot\npydot.graph_from_dot_data('digraph{}')\n", "pydot.graph_from_dot_data"),
    ("from graphviz import Digraph\nDigraph().render('g')\n", "graphviz.Digraph"),
])
def test_code_that_draws_with_graphviz_gets_debians_graphviz(tmp_path: Path, code: str,
                                                             cause: str) -> None:
    """pygraphviz's layout, pydot (Keras' plot_model) and the graphviz package run `dot` from
    PATH (carpedm20/ENAS-pytorch's trainer: 'Program dot not found in path.'): Debian's
    graphviz with its closure, whose plugins apply configures (debian.toml's [[configure]])."""
    text = _video(tmp_path, code)
    assert f"\n# for {cause} (train.py:" in text
    assert '\npackages = ["graphviz"]\ndependencies = "closure"\n' in text


def test_a_commented_out_requirement_the_code_imports_is_reported_not_added(
        tmp_path: Path) -> None:
    """hunkim/DeepLearningZeroToAll's requirements.txt comments out mxnet and chainer, whose
    labs import them: init had said nothing; a commented line another requirement gives the
    module of (`# sklearn` beside scikit_learn) or that nothing imports is not reported."""
    (tmp_path / "requirements.txt").write_text("numpy\nscikit_learn\n# mxnet\n# sklearn\n"
                                               "# chainer\n")
    (tmp_path / "lab.py").write_text("import mxnet as mx\nimport sklearn\nimport numpy\n")
    draft = _draft(tmp_path, date(2020, 5, 7))
    assert [(s.what, s.origin) for s in draft.repository.imported.skipped] == [
        ("# mxnet", "requirements.txt:3")]
    (reported,) = draft.repository.imported.skipped
    assert reported.reason.startswith("commented out, and lab.py:1 imports mxnet: not added")
    assert "mxnet" not in {f.requirement for f in draft.repository.imported.requirements}
