"""Each dependency file format read into requirements with file:line, and what is left out."""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.requirements import Requirement

from envforge.cli import main
from envforge.importers.condafiles import is_conda_list, read_conda_list, read_environment_yml
from envforge.importers.legacy_names import (
    conda_to_pypi,
    framework_sections,
    map_requirement,
)
from envforge.importers.pyfiles import (
    read_pipfile,
    read_pipfile_lock,
    read_requirements,
    read_setup_cfg,
    read_setup_py,
)
from envforge.importers.repository import read_repository
from envforge.spec import load_spec
from tests.testing.packs import REGISTRY

DATA = Path(__file__).parent / "data"
LASAGNE = "a61b76fd991f84c50d9fd2ccdc01a9ed1a9f0c5b"  # the commit DeepSurv's line names


def _text(relative: str) -> str:
    return (DATA / relative).read_text()


def _pins(imported: object) -> list[tuple[str, str]]:
    return [(f.requirement, f.origin) for f in imported.requirements]  # type: ignore[attr-defined]


def test_requirements_txt_with_a_git_line() -> None:
    got = read_requirements("requirements.txt", _text("deepsurv/requirements.txt"),
                            lambda _: None)
    assert _pins(got) == [
        (f"lasagne @ git+https://github.com/Lasagne/Lasagne.git@{LASAGNE}", "requirements.txt:2"),
        ("theano>=0.8.2", "requirements.txt:3"), ("h5py", "requirements.txt:4"),
        ("lifelines", "requirements.txt:5"), ("Optunity", "requirements.txt:6"),
        ("tensorboard_logger", "requirements.txt:7")]
    assert got.skipped == []



def test_archive_urls_are_kept_and_git_protocol_becomes_https() -> None:
    """pip installs (and locks by --hash) a direct wheel or sdist URL: init keeps it as
    ``name @ URL``; a page that is no archive is still reported; git:// moves to https://."""
    text = ("https://example.org/x-1.0.tar.gz#egg=x\n"
            "https://download.pytorch.org/whl/cpu/torch-1.0.0-cp37-cp37m-linux_x86_64.whl\n"
            "y @ https://example.org/archive/master.zip\n"
            "https://example.org/project/page\n"
            "git+git://github.com/Lasagne/Lasagne.git@abc#egg=Lasagne\n")
    got = read_requirements("r.txt", text, lambda _: None)
    assert _pins(got) == [
        ("x @ https://example.org/x-1.0.tar.gz", "r.txt:1"),
        ("torch @ https://download.pytorch.org/whl/cpu/torch-1.0.0-cp37-cp37m-linux_x86_64.whl",
         "r.txt:2"),
        ("y @ https://example.org/archive/master.zip", "r.txt:3"),
        ("Lasagne @ git+https://github.com/Lasagne/Lasagne.git@abc", "r.txt:5")]
    assert "sha256" in got.requirements[0].note
    assert "git:// protocol is no longer served" in got.requirements[3].note
    assert [s.origin for s in got.skipped] == ["r.txt:4"]
    assert "wheel or sdist archives" in got.skipped[0].reason


def test_requirements_includes_options_continuations_and_hashes() -> None:
    files = {"base.txt": "six==1.12.0\n"}
    text = ("-r base.txt\n-i https://mirror.example/simple\nnumpy==1.16.2 \\\n"
            "    --hash=sha256:abc\n-e .\n--trusted-host x\nscipy ; python_version < '3.8'\n")
    got = read_requirements("requirements.txt", text, files.get)
    assert _pins(got) == [("six==1.12.0", "base.txt:1"), ("numpy==1.16.2", "requirements.txt:3"),
                          ('scipy; python_version < "3.8"', "requirements.txt:7")]
    assert got.index == [("https://mirror.example/simple", "requirements.txt:2")]
    reasons = [s.reason for s in got.skipped]
    assert "the repository itself (editable): not a dependency" in reasons
    assert any("--trusted-host" in r for r in reasons)


def test_a_mirror_of_pypi_is_reported_and_pypi_kept() -> None:
    """``-i https://pypi.tuna.tsinghua.edu.cn/simple`` (the first line of many repositories'
    requirements): a public mirror of PyPI ([[pypi_mirror]]), unreachable from most places the
    spec will be used; so is pypi.python.org, PyPI's address until 2018."""
    text = ("-i https://pypi.tuna.tsinghua.edu.cn/simple\n"
            "--index-url=http://PyPI.Python.org/simple/\nsix==1.12.0\n")
    got = read_requirements("requirements.txt", text, {}.get)
    assert got.index == []
    assert [(s.what, s.origin) for s in got.skipped] == [
        ("-i https://pypi.tuna.tsinghua.edu.cn/simple", "requirements.txt:1"),
        ("--index-url=http://PyPI.Python.org/simple/", "requirements.txt:2")]
    assert "(TUNA, Tsinghua University; knowledge/legacy_names.toml): the spec resolves from " \
        "PyPI itself" in got.skipped[0].reason
    assert _pins(got) == [("six==1.12.0", "requirements.txt:3")]


def test_an_index_that_is_no_http_url_is_reported_not_taken() -> None:
    """``-i http://[::1/simple`` (a bracket left open) stopped init with a traceback where
    the mirror table read it; a local folder is no index a spec can name either."""
    text = ("-i http://[::1/simple\n--index-url=./wheels\n-f http://[::1/whl.html\n"
            "--extra-index-url http://pypi:port/simple\nsix==1.12.0\n")
    got = read_requirements("requirements.txt", text, {}.get)
    assert (got.index, got.find_links, got.extra_indexes) == ([], [], [])
    assert [(s.what, s.reason.split(":")[0]) for s in got.skipped] == [
        ("-i http://[::1/simple", "not an http(s) URL of an index"),
        ("--index-url=./wheels", "not an http(s) URL of an index"),
        ("-f http://[::1/whl.html", "not an http(s) URL"),
        # a port that is no number: the spec would refuse it (the one check, url_problem)
        ("--extra-index-url http://pypi:port/simple", "not an http(s) URL")]
    assert _pins(got) == [("six==1.12.0", "requirements.txt:5")]


def test_find_links_and_extra_indexes_are_kept_for_the_spec(tmp_path: Path) -> None:
    """PyTorch 1.x repositories pin ``torch==1.5.0+cu101`` beside ``-f`` PyTorch's page: init
    dropped the line ("pip option -f: not imported") and the pin could not lock."""
    page = "https://download.pytorch.org/whl/torch_stable.html"
    text = (f"-f {page}\n--find-links={page}\n--extra-index-url https://x.example/simple\n"
            "-f ./wheels\ntorch==1.5.0+cu101\n")
    got = read_requirements("requirements.txt", text, lambda _: None)
    assert got.find_links == [(page, "requirements.txt:1"), (page, "requirements.txt:2")]
    assert got.extra_indexes == [("https://x.example/simple", "requirements.txt:3")]
    assert [(s.origin, s.reason) for s in got.skipped] == [(
        "requirements.txt:4", "a local folder: give its absolute path in [pypi] find_links if "
        "the project needs it")]
    (tmp_path / "requirements.txt").write_text(text)
    assert main(["init", str(tmp_path), "-o", str(tmp_path / "t.toml"), "--offline"]) == 0
    pypi = load_spec(tmp_path / "t.toml", REGISTRY).for_platform("linux-64").pypi
    assert (pypi.find_links, pypi.extra_indexes, pypi.packages) == (
        (page,), ("https://x.example/simple",), ("torch==1.5.0+cu101",))
    assert "# pip's -f at requirements.txt:1, requirements.txt:2\n" in (
        tmp_path / "t.toml").read_text()


def test_setup_py_literal_and_computed() -> None:
    got = read_setup_py("setup.py", _text("deepsurv/setup.py"))
    assert _pins(got) == [("theano", "setup.py:8"), ("lasagne", "setup.py:9"),
                          ("lifelines", "setup.py:10")]
    computed = read_setup_py("setup.py", _text("computed/setup.py"))
    assert computed.requirements == [] and computed.python == [(">=3.5", "setup.py:10")]
    [skipped] = computed.skipped
    assert skipped.what == "install_requires=requirements()" and "not executed" in skipped.reason


def test_setup_py_is_never_executed(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    text = (f"open({str(marker)!r}, 'w').close()\nfrom setuptools import setup\n"
            "setup(install_requires=['six'])\n")
    assert _pins(read_setup_py("setup.py", text)) == [("six", "setup.py:3")]
    assert not marker.exists()


def test_setup_py_extensions_are_named_with_their_lines() -> None:
    """fizyr/keras-retinanet 0.5.0's setup.py (an ``extensions`` list, then
    ``ext_modules=extensions``); a ``cythonize`` of a list, and a module computed at run
    time, counted by its line."""
    retinanet = ("import setuptools\nfrom setuptools.extension import Extension\n"
                 "import numpy as np\n\nextensions = [\n    Extension(\n"
                 "        'keras_retinanet.utils.compute_overlap',\n"
                 "        ['keras_retinanet/utils/compute_overlap.pyx'],\n"
                 "        include_dirs=[np.get_include()]\n    ),\n]\n\n"
                 "setuptools.setup(\n    name='keras-retinanet',\n"
                 "    install_requires=['keras', 'cython'],\n    ext_modules=extensions,\n)\n")
    got = read_setup_py("setup.py", retinanet)
    assert got.extensions == [("keras_retinanet.utils.compute_overlap", "setup.py:6")]
    assert _pins(got) == [("keras", "setup.py:15"), ("cython", "setup.py:15")]
    cythonized = ("from setuptools import setup, Extension\nfrom Cython.Build import cythonize\n"
                  "setup(ext_modules=cythonize([Extension(name='a.b', sources=['a/b.pyx']),\n"
                  "                             Extension(NAME, ['c.c'])]))\n")
    assert read_setup_py("setup.py", cythonized).extensions == [
        ("a.b", "setup.py:3"), ("an extension", "setup.py:4")]
    assert read_setup_py("setup.py", "from setuptools import setup\nsetup(name='x')\n"
                         ).extensions == []
    assert read_setup_py("setup.py", "from setuptools import setup\n"
                         "setup(ext_modules=None)\n").extensions == []
    globbed = "from Cython.Build import cythonize\nsetup(ext_modules=cythonize('a/*.pyx'))\n"
    assert read_setup_py("setup.py", globbed).extensions == [("an extension", "setup.py:2")]


def test_setup_py_extras_are_read_apart_noted_with_their_extra() -> None:
    """keras-rl's ``extras_require={'gym': ['gym']}``: optional, so not a requirement; init
    adds the ones the code imports (tests/app/test_drafting.py)."""
    text = ("from setuptools import setup\nTESTS = ['pytest>=3.6', 'mock']\n"
            "setup(install_requires=['keras>=2.0.7'],\n"
            "      extras_require={'gym': ['gym'],\n"
            "                      'tests': TESTS, 'docs': 'sphinx',\n"
            "                      'computed': make_list()})\n")
    got = read_setup_py("setup.py", text)
    assert _pins(got) == [("keras>=2.0.7", "setup.py:3")]
    assert [(f.requirement, f.origin, f.note) for f in got.extras] == [
        ("gym", "setup.py:4", "extra [gym]"), ("pytest>=3.6", "setup.py:2", "extra [tests]"),
        ("mock", "setup.py:2", "extra [tests]"), ("sphinx", "setup.py:5", "extra [docs]")]
    cfg = read_setup_cfg("setup.cfg", "[options]\ninstall_requires =\n    six\n"
                         "[options.extras_require]\ngym =\n    gym>=0.10\n")
    assert [(f.requirement, f.origin, f.note) for f in cfg.extras] == [
        ("gym>=0.10", "setup.cfg:6", "extra [gym]")]


def test_tests_require_is_read_apart_as_an_extra_is() -> None:
    """google/dopamine's ``tests_require`` (setuptools' keyword): its tests import mock, which
    install_requires leaves out; init adds what the code imports (tests/app/test_drafting.py)."""
    text = ("from setuptools import setup\nTESTS = ['gin-config >= 0.1.1',\n"
            "         'mock >= 1.0.0']\n"
            "setup(install_requires=['gin-config >= 0.1.1'], tests_require=TESTS)\n")
    got = read_setup_py("setup.py", text)
    assert _pins(got) == [("gin-config>=0.1.1", "setup.py:4")]
    assert [(f.requirement, f.origin, f.note) for f in got.extras] == [
        ("gin-config>=0.1.1", "setup.py:2", "tests_require"),
        ("mock>=1.0.0", "setup.py:3", "tests_require")]
    cfg = read_setup_cfg("setup.cfg", "[options]\ntests_require =\n    mock\n")
    assert [(f.requirement, f.note) for f in cfg.extras] == [("mock", "tests_require")]


def test_setup_cfg() -> None:
    got = read_setup_cfg("setup.cfg", _text("cfgpkg/setup.cfg"))
    assert _pins(got) == [("numpy<1.20,>=1.16", "setup.cfg:8"),
                          ("tensorflow-gpu==1.15.0", "setup.cfg:9"),
                          ("scikit-learn", "setup.cfg:10")]
    assert got.python == [(">=3.6, <3.9", "setup.cfg:6")]


def test_pipfile_and_its_lock() -> None:
    pipfile = read_pipfile("Pipfile", _text("pipenv/Pipfile"))
    assert _pins(pipfile) == [
        ("numpy==1.16.2", "Pipfile:7"), ("six", "Pipfile:8"),
        ("lasagne @ git+https://github.com/Lasagne/Lasagne.git@master", "Pipfile:9")]
    assert pipfile.python == [("==3.7", "Pipfile:15")]
    lock = read_pipfile_lock("Pipfile.lock", _text("pipenv/Pipfile.lock"))
    assert _pins(lock) == [
        (f"lasagne @ git+https://github.com/Lasagne/Lasagne.git@{LASAGNE}", "Pipfile.lock:11"),
        ("numpy==1.16.2", "Pipfile.lock:15"), ("six==1.12.0", "Pipfile.lock:20")]
    assert lock.skipped == []  # pytest is development only


def test_environment_yml_maps_conda_names_and_reports_native_ones() -> None:
    got = read_environment_yml("environment.yml", _text("condaenv/environment.yml"))
    assert _pins(got) == [
        ("numpy==1.19.*", "environment.yml:7"), ("scipy==1.7.3", "environment.yml:8"),
        ("theano>=1.0.4", "environment.yml:10"), ("six", "environment.yml:14"),
        ("lifelines==0.25.0", "environment.yml:17"), ("h5py>=2.9", "environment.yml:18")]
    assert got.python == [("==3.7", "environment.yml:6")]
    assert sorted(s.what for s in got.skipped) == ["libpython", "m2w64-toolchain", "mkl",
                                                   "pip", "pygpu"]


def test_explicit_and_export_lists() -> None:
    explicit = _text("condaenv/explicit.txt")
    export = _text("condaenv/conda-export.txt")
    assert is_conda_list(explicit) and is_conda_list(export)
    assert not is_conda_list(_text("deepsurv/requirements.txt"))
    got = read_conda_list("explicit.txt", explicit)
    assert _pins(got) == [("numpy==1.19.5", "explicit.txt:7"), ("six==1.16.0", "explicit.txt:8"),
                          ("torch==1.4.0", "explicit.txt:9")]
    assert got.python == [("==3.7.12", "explicit.txt:6")]
    assert got.requirements[2].note == "conda's pytorch is torch on PyPI"
    exported = read_conda_list("conda-export.txt", export)
    assert _pins(exported) == [("numpy==1.19.5", "conda-export.txt:6"),
                               ("scipy==1.7.3", "conda-export.txt:7"),
                               ("theano==1.0.4", "conda-export.txt:8")]
    assert {s.what for s in exported.skipped} == {"libgcc-ng==9.3.0", "mkl==2020.2"}


def test_a_pip_files_python_line_is_the_interpreter_and_conda_names_are_mapped() -> None:
    """jadore801120/attention-is-all-you-need-pytorch 3c3c190: a requirements.txt written from
    a conda environment: `python==3.6.12` is the interpreter (PyPI has no project python),
    `pytorch` and `msgpack-python==1.0.2` are conda's names (PyPI's msgpack-python ended at
    0.5.6; later releases are msgpack's)."""
    text = "dill==0.3.3\nmsgpack-python==1.0.2\npython==3.6.12\npytorch==1.3.1\n"
    got = read_requirements("requirements.txt", text, lambda _: None)
    assert got.python == [("==3.6.12", "requirements.txt:3")]
    assert [(s.what, s.origin) for s in got.skipped] == [("python==3.6.12",
                                                          "requirements.txt:3")]
    assert "the interpreter" in got.skipped[0].reason
    assert [f.requirement for f in got.requirements] == [
        "dill==0.3.3", "msgpack-python==1.0.2", "pytorch==1.3.1"]
    mapped, why = map_requirement("msgpack-python==1.0.2", REGISTRY)
    assert mapped == "msgpack==1.0.2" and "ended at 0.5.6" in why
    for kept in ("msgpack-python==0.5.6", "msgpack-python>=0.4", "msgpack-python"):
        assert map_requirement(kept, REGISTRY)[0] == kept  # PyPI's own releases


def test_legacy_names_follow_the_knowledge_rows() -> None:
    assert map_requirement("theano>=0.8.2", REGISTRY)[0] == "Theano-PyMC==1.0.5"
    assert map_requirement("Theano", REGISTRY)[0] == "Theano-PyMC==1.0.5"
    # lock refuses the original: always mapped
    mapped, why = map_requirement("theano==0.8.2", REGISTRY)
    assert mapped == "Theano-PyMC==1.0.5" and "packs/theano/theano.toml" in why
    # tensorflow-gpu is kept for 1.x (tensorflow 1.15.2+ is CPU-only); 2.12.0 refuses to install
    for pinned in ("tensorflow-gpu==1.15.0", "tensorflow-gpu~=1.15", "tensorflow-gpu<2"):
        kept, why = map_requirement(pinned, REGISTRY)
        assert kept == pinned and "does not admit 2.12.0" in why
    assert map_requirement("tensorflow-gpu>=2.1", REGISTRY)[0] == "tensorflow>=2.1"
    assert map_requirement("tensorflow-gpu", REGISTRY)[0] == "tensorflow"
    assert conda_to_pypi("tensorflow-gpu") == ("tensorflow-gpu", "")  # same name on PyPI
    for name in ("mkl", "mkl-service", "intel-openmp"):
        pypi, why = conda_to_pypi(name)
        assert pypi is None and "on PyPI as well" in why and "OpenBLAS" in why
    assert map_requirement('theano; python_version < "3.8"', REGISTRY)[0] == \
        'Theano-PyMC==1.0.5; python_version < "3.8"'
    assert conda_to_pypi("cudatoolkit")[0] is None and conda_to_pypi("numpy") == ("numpy", "")


def test_conda_names_in_pip_files_are_mapped() -> None:
    assert map_requirement("pytorch==0.4.1", REGISTRY)[0] == "torch==0.4.1"
    # the placeholder's version
    assert map_requirement("sklearn==0.0", REGISTRY)[0] == "scikit-learn"
    mapped, why = map_requirement("opencv3==3.1.0", REGISTRY)
    assert mapped == "opencv-python" and "was opencv3==3.1.0" in why
    # richzhang/PerceptualSimilarity's requirements.txt: PyPI has no project "opencv"
    mapped, why = map_requirement("opencv>=2.4.11", REGISTRY)
    assert mapped == "opencv-python" and "was opencv>=2.4.11" in why
    # basveeling/wavenet's tensorflow-gpu==1.8.0: before 1.14 the GPU build does not import
    # where its CUDA is missing, and init's [tensorflow] runs on the CPU
    mapped, why = map_requirement("tensorflow-gpu==1.8.0", REGISTRY)
    assert mapped == "tensorflow==1.8.0" and "libcublas.so.10.0" in why
    assert map_requirement("tensorflow-gpu==1.14.0", REGISTRY)[0] == "tensorflow-gpu==1.14.0"
    assert map_requirement("tensorflow-gpu>=1.4,<1.14", REGISTRY)[0] == \
        "tensorflow-gpu>=1.4,<1.14"  # a range: kept (the admits-2.12.0 row does not apply)
    # oarriaga/face_classification's REQUIREMENTS.txt: PyPI has no project "opencv2-python"
    mapped, why = map_requirement("opencv2-python==3.2.0", REGISTRY)
    assert mapped == "opencv-python" and "was opencv2-python==3.2.0" in why
    assert conda_to_pypi("librosa") == ("librosa", "")  # a Python package, not a lib*
    assert conda_to_pypi("libpysal") == ("libpysal", "")
    assert conda_to_pypi("libgcc-ng")[0] is None
    assert conda_to_pypi("py-xgboost")[0] == "xgboost"  # handson-ml's environment.yml
    assert conda_to_pypi("python-graphviz")[0] == "graphviz"
    assert conda_to_pypi("graphviz")[0] is None and conda_to_pypi("tensorflow-base")[0] is None


def test_python2_backports_and_one_platforms_packages_get_markers() -> None:
    assert map_requirement("functools32==3.2.3.post2", REGISTRY)[0] == \
        'functools32==3.2.3.post2; python_version < "3"'
    assert map_requirement("backports.weakref==1.0.post1", REGISTRY)[0] == \
        'backports.weakref==1.0.post1; python_version < "3.4"'
    assert map_requirement("enum34", REGISTRY)[0] == 'enum34; python_version < "3.4"'
    appnope, why = map_requirement("appnope==0.1.0", REGISTRY)
    assert appnope == 'appnope==0.1.0; sys_platform == "darwin"' and "macOS only" in why
    assert map_requirement('futures; os_name == "posix"', REGISTRY)[0] == \
        'futures; (os_name == "posix") and python_version < "3"'
    assert map_requirement('futures; python_version < "3"', REGISTRY) == (
        'futures; python_version < "3"', "")  # the file's own marker already says so
    assert map_requirement("configparser==3.5.0", REGISTRY) == ("configparser==3.5.0",
                                                                "")  # also py3


def test_framework_sections_follow_the_requirements() -> None:
    def sections(*requirements: str) -> dict[str, dict[str, str]]:
        return {row.section: row.keys for row in framework_sections(requirements, REGISTRY)}

    assert sections("tensorflow-gpu", "Keras", "h5py") == {
        "tensorflow": {}, "keras": {"backend": "tensorflow"}}
    assert sections("keras", "Theano-PyMC") == {"keras": {"backend": "theano"},
                                                "theano": {}}
    assert sections("keras", "Theano-PyMC", "tensorflow") == {
        "tensorflow": {}, "keras": {"backend": "tensorflow"}, "theano": {}}
    assert sections("numpy", "torch", "torchvision") == {"torch": {}}  # not Theano's probe
    assert sections("numpy", "scipy") == {}
    # the TensorFlow 1.x pack and multi-back-end Keras only for requirements that admit them
    assert sections("tensorflow>=2.2", "keras>=2.4") == {}


def test_a_release_line_caps_what_it_mounts_for_and_the_python() -> None:
    """bert's ``tensorflow >= 1.11.0`` of 2020 resolved to TensorFlow 2 on Python 3.8, which
    the TensorFlow 1.x pack refuses: the pack's row caps it below 2 and the Python at 3.7."""
    from envforge.app.drafting import _release_lines
    from envforge.importers import Found, Imported
    from envforge.importers.legacy_names import capped
    from envforge.importers.propose import Proposal
    from envforge.importers.repository import Repository

    rows = {row.section: row
            for row in framework_sections(["tensorflow>=1.11.0", "keras"], REGISTRY)}
    assert capped("tensorflow>=1.11.0", rows["tensorflow"]) == "tensorflow<2,>=1.11.0"
    assert capped("tensorflow<2", rows["tensorflow"]) is None
    assert capped("tensorflow==1.15.5", rows["tensorflow"]) is None
    assert capped("keras", rows["keras"]) == "keras<2.4"
    repo = Repository(("requirements.txt",), Imported(requirements=[
        Found("tensorflow>=1.11.0", "requirements.txt:1"), Found("numpy", "requirements.txt:2")]))
    moved, python = _release_lines(repo, Proposal("3.8", "the newest Python released by 2020"))
    assert [f.requirement for f in moved.imported.requirements] == [
        "tensorflow<2,>=1.11.0", "numpy"]
    assert "was tensorflow>=1.11.0" in (moved.imported.requirements[0].note or "")
    assert python.value == "3.7" and "at most 3.7 for [tensorflow]" in python.why


def test_a_repository_is_merged_exact_pins_first() -> None:
    repo = read_repository(DATA / "deepsurv", REGISTRY)
    assert repo.files == ("requirements.txt", "setup.py")
    by_name = {Requirement(f.requirement).name: f for f in repo.imported.requirements}
    theano = by_name["Theano-PyMC"]
    assert theano.origin == "requirements.txt:3, also setup.py:8" and theano.mapped
    lasagne = by_name["lasagne"]
    assert lasagne.requirement.startswith("lasagne @ git+https://github.com/Lasagne/")
    assert lasagne.origin == "requirements.txt:2, also setup.py:9"  # git, not PyPI's 0.1
    cfg = read_repository(DATA / "cfgpkg", REGISTRY)
    assert [s.what for s in cfg.imported.skipped] == ["requirements-dev.txt"]
    pipenv = read_repository(DATA / "pipenv", REGISTRY)
    assert pipenv.files == ("Pipfile.lock",)


def test_dependency_files_are_found_whatever_their_case(tmp_path: Path) -> None:
    (tmp_path / "REQUIREMENTS.txt").write_text("six==1.12.0\n")
    (tmp_path / "Requirements-Dev.txt").write_text("pytest\n")
    (tmp_path / "Setup.py").write_text("from setuptools import setup\n"
                                       "setup(install_requires=['numpy'])\n")
    repo = read_repository(tmp_path, REGISTRY)
    assert repo.files == ("REQUIREMENTS.txt", "Setup.py")
    assert _pins(repo.imported) == [("six==1.12.0", "REQUIREMENTS.txt:1"),
                                    ("numpy", "Setup.py:2")]
    assert [s.what for s in repo.imported.skipped] == ["Requirements-Dev.txt"]


def test_a_conda_environment_file_is_found_under_any_name(tmp_path: Path) -> None:
    """BAP's ``bap.yml`` (``conda env create -f bap.yml``); a CI file is not one."""
    (tmp_path / "bap.yml").write_text("name: bap\nchannels:\n  - conda-forge\n"
                                      "dependencies:\n  - python=3.6\n  - numpy=1.14.2\n")
    (tmp_path / ".travis.yml").write_text("language: python\ninstall:\n  - pip install .\n")
    repo = read_repository(tmp_path, REGISTRY)
    assert repo.files == ("bap.yml",)
    assert _pins(repo.imported) == [("numpy==1.14.2", "bap.yml:6")]


def test_every_legacy_names_row_names_a_source() -> None:
    import tomllib
    from importlib import resources

    data = tomllib.loads(resources.files("envforge.knowledge").joinpath("legacy_names.toml")
                         .read_text(encoding="utf-8"))
    rows = [row for table in data.values() for row in table]
    assert len(rows) >= 11 and all(str(row.get("source", "")).strip() for row in rows)


def test_one_package_pinned_per_platform_keeps_both_pins(tmp_path: Path) -> None:
    """Real-Time-Voice-Cloning's requirements: numpy pinned for Windows and for the rest;
    its GPU file's tensorflow-gpu==1.15 is an alternative to the main file's tensorflow==1.15
    (one module: knowledge/legacy_names.toml [[same_module]]), the first file's kept."""
    (tmp_path / "requirements.txt").write_text(
        "tensorflow==1.15\nnumpy==1.19.3; platform_system == \"Windows\"\n"
        "numpy==1.17.4; platform_system != \"Windows\"\n")
    (tmp_path / "requirements_gpu.txt").write_text("tensorflow-gpu==1.15\n")
    repo = read_repository(tmp_path, REGISTRY)
    assert _pins(repo.imported) == [
        ("tensorflow==1.15", "requirements.txt:1, also requirements_gpu.txt:1"),
        ('numpy==1.19.3; platform_system == "Windows"', "requirements.txt:2"),
        ('numpy==1.17.4; platform_system != "Windows"', "requirements.txt:3")]


def test_keras_before_2_2_gets_its_keras_json_in_the_home_it_reads() -> None:
    """CarND's keras==2.0.9: Keras before 2.2 reads no KERAS_HOME, so the section says
    keras_json = "home" (the lock's rule refuses "env" for it)."""
    def keys(*requirements: str) -> dict[str, str]:
        return next(r.keys for r in framework_sections(requirements, REGISTRY)
                    if r.section == "keras")

    assert keys("keras==2.0.9", "tensorflow==1.3") == {"backend": "tensorflow",
                                                       "keras_json": "home"}
    assert keys("keras==2.1.6", "theano") == {"backend": "theano", "keras_json": "home"}
    assert keys("keras==2.2.4", "tensorflow==1.13.1") == {"backend": "tensorflow"}
    assert keys("keras", "tensorflow") == {"backend": "tensorflow"}


def test_a_keras_range_on_a_day_before_2_2_gets_the_home_it_will_read() -> None:
    """fchollet/deep-learning-with-python-notebooks (2017-11-19) imports keras, unpinned:
    on its day that is Keras 2.1.1, which reads no KERAS_HOME, and the lock refused the
    section's "env" on every day init tried. Before 2.2.0's upload (2018-06-06) a range
    that admits 2.1 counts as below it; on or after it, or a range past 2.1, it does not."""
    from datetime import date

    def keys(day: date, *requirements: str) -> dict[str, str]:
        return next(r.keys for r in framework_sections(requirements, REGISTRY, day=day)
                    if r.section == "keras")

    assert keys(date(2017, 11, 19), "keras<2.4") == {"backend": "tensorflow",
                                                      "keras_json": "home"}
    assert keys(date(2017, 11, 19), "keras", "theano") == {"backend": "theano",
                                                           "keras_json": "home"}
    assert keys(date(2018, 6, 6), "keras<2.4") == {"backend": "tensorflow"}
    assert keys(date(2017, 11, 19), "keras>=2.2") == {"backend": "tensorflow"}


def test_condas_pyqt_is_reported_not_pinned_on_pypi() -> None:
    """CarND's environment.yml holds pyqt=4.11.4: PyQt4 was never on PyPI."""
    from envforge.importers.legacy_names import conda_to_pypi

    name, why = conda_to_pypi("pyqt")
    assert name is None and "PyQt4, which PyPI never held" in why


def test_a_tests_requirements_file_is_read_a_development_one_is_not(tmp_path: Path) -> None:
    """ibab/tensorflow-wavenet (3c973c0): requirements_test.txt includes requirements.txt and
    adds nose and pep8, which its ci/test.sh runs; requirements-dev.txt stays out."""
    (tmp_path / "requirements.txt").write_text("librosa>=0.5\n")
    (tmp_path / "requirements_test.txt").write_text(
        "# Pull in the packages required to run the project\n-r requirements.txt\n\n"
        "pep8>=1.7.0\nnose>=1.3.7\n")
    (tmp_path / "requirements-dev.txt").write_text("ipython\n")
    repo = read_repository(tmp_path, REGISTRY)
    assert repo.files == ("requirements.txt", "requirements_test.txt")
    assert _pins(repo.imported) == [("librosa>=0.5", "requirements.txt:1"),
                                    ("pep8>=1.7.0", "requirements_test.txt:4"),
                                    ("nose>=1.3.7", "requirements_test.txt:5")]
    assert [s.what for s in repo.imported.skipped] == ["requirements-dev.txt"]


def test_setup_with_a_dict_of_keywords_is_read() -> None:
    """pytorch/text 0.4.0: ``setup_info = dict(install_requires=[...])`` then
    ``setup(**setup_info)``: read (numpy was dropped, torch only found in a docs import);
    a dict literal too; a ``**`` envforge cannot see through is reported."""
    text = ("from setuptools import setup\n\nsetup_info = dict(\n    name='torchtext',\n"
            "    install_requires=[\n        'tqdm', 'torch', 'numpy'\n    ],\n)\n\n"
            "extra = {'python_requires': '>=3.5', 'tests_require': ['pytest']}\n"
            "setup(**setup_info, **extra, **compute())\n")
    found = read_setup_py("setup.py", text)
    assert [(f.requirement, f.origin) for f in found.requirements] == [
        ("tqdm", "setup.py:6"), ("torch", "setup.py:6"), ("numpy", "setup.py:6")]
    assert found.python == [(">=3.5", "setup.py:10")]
    assert [(s.what, s.origin) for s in found.skipped] == [("**compute()", "setup.py:11")]


def test_pip_tools_input_is_read_as_a_requirements_file(tmp_path: Path) -> None:
    """allenai/citeomatic (2019) keeps its requirements in ``requirements.in`` (pip-tools'
    input, pip's syntax), which its env.sh installs with ``pip install -r``; a compiled
    ``requirements.txt`` beside it pins what it leaves open; a dev input is left out."""
    (tmp_path / "requirements.in").write_text("Keras==2.0.8\nnumpy\n")
    (tmp_path / "requirements.txt").write_text("numpy==1.16.2\n")
    (tmp_path / "requirements-dev.in").write_text("pytest\n")
    repo = read_repository(tmp_path, REGISTRY)
    assert repo.files == ("requirements.in", "requirements.txt")
    assert [f.requirement for f in repo.imported.requirements] == ["Keras==2.0.8",
                                                                   "numpy==1.16.2"]


@pytest.mark.parametrize(("text", "line"), [("torch==1.0.*", "1.0.*"), ("torch==1.*", "1.*"),
                                            ("torch==1.0.1", None), ("torch>=1.0,==1.*", None),
                                            ("torch", None)])
def test_release_line_is_one_wildcard_pin(text: str, line: str | None) -> None:
    from envforge.importers import release_line

    assert release_line(Requirement(text)) == line


def test_a_line_commenting_out_one_requirement_is_kept_aside() -> None:
    from envforge.importers.pyfiles import read_requirements

    text = ("keras\n# mxnet\n#torch==0.4.1\n# sklearn  \n# install these first:\n"
            "# see https://example.org\n#\nnumpy  # pinned below\n")
    imported = read_requirements("requirements.txt", text, lambda _: None)
    assert [f.requirement for f in imported.requirements] == ["keras", "numpy"]
    assert [(f.requirement, f.origin) for f in imported.commented] == [
        ("mxnet", "requirements.txt:2"), ("torch==0.4.1", "requirements.txt:3"),
        ("sklearn", "requirements.txt:4")]
