"""envforge init: a legacy repository's files -> a spec that parses, says where every pin came
from, reports what it left out, and (network) locks and applies."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from datetime import date
from pathlib import Path

import pytest

from envforge.app import drafting
from envforge.cli import main
from envforge.commands.init import run_init
from envforge.errors import EnvforgeError
from envforge.host.interpreters import find_interpreter
from envforge.lockfile import load_lock
from envforge.spec import load_spec
from envforge.ui import UI
from tests.packs.conftest import verify_json
from tests.testing.homes import enter_home, home_sharing
from tests.testing.packs import REGISTRY

DATA = Path(__file__).resolve().parents[1] / "importers" / "data"
CORPUS = Path(__file__).resolve().parents[1] / "corpus"
REFERENCE = Path(__file__).resolve().parents[2] / "specs" / "theano-cpu.toml"


def host_python(minor: str) -> str:
    """What init writes for ``minor``: this host's full version (lock resolves for it), or
    the minor where the host has none."""
    from envforge.errors import StepError
    from envforge.host.interpreters import find_interpreter

    try:
        return find_interpreter(minor).version
    except StepError:
        return minor


def repo_copy(tmp_path: Path, name: str, *, commit_day: str | None = None) -> Path:
    root = tmp_path / name
    shutil.copytree(DATA / name, root)
    if commit_day is not None:
        stamp = f"{commit_day}T12:00:00+00:00"
        env = {**os.environ, "GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp}
        for args in (["init", "-q"], ["add", "."],
                     ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init"]):
            subprocess.run(["git", "-C", str(root), *args], check=True, env=env)
    return root


def test_offline_init_writes_a_spec_with_origins_and_reports(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = repo_copy(tmp_path, "deepsurv")
    out = tmp_path / "specs" / "deepsurv.toml"
    assert main(["init", str(root), "-o", str(out), "--offline"]) == 0
    spec = load_spec(out, REGISTRY)
    pspec = spec.for_platform("linux-64")
    assert spec.name == "deepsurv" and pspec.python.version == host_python("3.7")
    assert pspec.pypi.packages == (
        "lasagne @ git+https://github.com/Lasagne/Lasagne.git@"
        "a61b76fd991f84c50d9fd2ccdc01a9ed1a9f0c5b",
        "Theano-PyMC==1.0.5", "h5py", "lifelines", "Optunity", "tensorboard_logger")
    assert pspec.compiler is not None and pspec.compiler.kind == "gcc"
    text = out.read_text()
    assert '"Theano-PyMC==1.0.5",  # requirements.txt:3, also setup.py:8; was theano>=0.8.2' \
        in text
    assert "requirements.txt:2, also setup.py:9; a git dependency, locked by its commit" in text
    assert "not imported" not in capsys.readouterr().err
    assert main(["init", str(root), "-o", str(out), "--offline"]) == 2  # exists: --force
    assert main(["init", str(root), "-o", str(out), "--offline", "--force"]) == 0


def test_conda_files_become_a_pypi_spec(tmp_path: Path) -> None:
    out = tmp_path / "env.toml"
    assert main(["init", str(DATA / "condaenv"), "-o", str(out), "--offline"]) == 0
    pspec = load_spec(out, REGISTRY).for_platform("linux-64")
    assert "Theano-PyMC==1.0.5" in pspec.pypi.packages  # theano==1.0.4 won, then was mapped
    assert not any(p.lower().startswith("theano=") for p in pspec.pypi.packages)
    from envforge.compat import ensure_compatible

    ensure_compatible(load_spec(out, REGISTRY),
                      REGISTRY)  # lock would not refuse it (no original Theano)
    assert "numpy==1.19.5" in pspec.pypi.packages and "torch==1.4.0" in pspec.pypi.packages
    assert pspec.python.version == host_python("3.7")  # environment.yml's python=3.7 comes first
    assert "cudatoolkit" not in out.read_text() and "m2w64-toolchain: a native library" \
        in out.read_text()


def corpus_copy(tmp_path: Path, name: str) -> Path:
    """A corpus repository's dependency files (tests/corpus), without its SOURCE.toml."""
    root = tmp_path / name
    shutil.copytree(CORPUS / name, root, ignore=shutil.ignore_patterns("SOURCE.toml"))
    return root


def test_a_project_s_own_extension_is_named_with_the_command_that_builds_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """fizyr/keras-retinanet: its code imports ``compute_overlap``, built from a .pyx by its
    setup.py (its CI runs ``python setup.py build_ext --inplace``); no lock gives it, and
    init, which writes nothing into the repository, names it and that command."""
    root = tmp_path / "retinanet"
    root.mkdir()
    (root / "setup.py").write_text(
        "from setuptools import setup, Extension\nsetup(install_requires=['cython'],\n"
        "      ext_modules=[Extension('pkg.overlap', ['pkg/overlap.pyx'])])\n")
    out = tmp_path / "specs" / "retinanet.toml"
    assert main(["init", str(root), "-o", str(out), "--offline", "--json"]) == 0
    [line] = json.loads(capsys.readouterr().out)["code"]["build_in_place"]
    assert line.startswith("setup.py:3 builds pkg.overlap, the project's own compiled "
                           "extension, which no wheel gives") and line.endswith(
        f"`envforge run {out} -- python setup.py build_ext --inplace`")
    assert "# setup.py:3 builds pkg.overlap" in out.read_text()
    assert sorted(p.name for p in root.iterdir()) == ["setup.py"]


def test_a_theano_repository_gets_debians_openblas_on_linux(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """pm-prophet (PyMC3 on Theano): on Linux Theano finds no BLAS in NumPy's wheels, so the
    spec init writes unpacks Debian's OpenBLAS and links it, as specs/theano-cpu.toml (whose
    verify's blas row passes) does; the spec says why, and so does the report."""
    root = corpus_copy(tmp_path, "luke14free__pm-prophet")
    out = tmp_path / "pm-prophet.toml"
    assert main(["init", str(root), "-o", str(out), "--offline", "--json"]) == 0
    pspec = load_spec(out, REGISTRY).for_platform("linux-64")
    reference = load_spec(REFERENCE, REGISTRY).for_platform("linux-64")
    assert pspec.debian is not None and reference.debian is not None
    assert (pspec.debian.suite, pspec.debian.packages) == (reference.debian.suite,
                                                           reference.debian.packages)
    blas_ldflags = reference.packs["theano"].model_dump()["blas_ldflags"]
    assert pspec.packs["theano"].model_dump()["blas_ldflags"] == blas_ldflags
    text = out.read_text()
    assert "\n[debian]\n# for [theano] on linux-64: Theano finds no BLAS in NumPy's wheels" in text
    assert "\n[theano.platform.linux-64]\n# links [debian]'s OpenBLAS" in text
    (added,) = json.loads(capsys.readouterr().out)["debian"]
    assert added["section"] == "theano" and added["platform"] == "linux-64"
    assert added["keys"] == {"blas_ldflags": blas_ldflags}
    assert "NumPy's C API" in added["why"] and "packages.debian.org" in added["source"]
    assert main(["init", str(root), "-o", str(out), "--offline", "--force"]) == 0
    assert "[debian] bookworm libopenblas0-pthread, libgfortran5, libquadmath0 and " \
           "[theano.platform.linux-64] blas_ldflags added: " in capsys.readouterr().err


def test_no_openblas_where_the_platform_is_not_linux_or_theano_is_not_mounted(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The Debian row is linux-64's: a win-64 spec of the same repository gets neither
    [debian] nor blas_ldflags (NumPy <= 1.21's blas_opt_info serves Theano there), and a
    TensorFlow repository mounts no [theano] to add them for."""
    root = corpus_copy(tmp_path, "luke14free__pm-prophet")
    out = tmp_path / "win.toml"
    assert run_init(root, output=out, name=None, force=False, offline=True,
                    ui=UI(quiet=True), platform="win-64") == 0
    pspec = load_spec(out, REGISTRY).for_platform("win-64")
    assert "theano" in pspec.packs and pspec.debian is None
    assert pspec.packs["theano"].model_dump()["blas_ldflags"] is None
    assert "[debian]" not in out.read_text() and "blas_ldflags" not in out.read_text()
    tf_out = tmp_path / "gcn.toml"
    assert main(["init", str(corpus_copy(tmp_path, "tkipf__gcn")), "-o", str(tf_out),
                 "--offline", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["debian"] == []
    assert load_spec(tf_out, REGISTRY).for_platform("linux-64").debian is None


def test_no_git_installed_is_no_history(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    """A machine without git (Windows, a project downloaded as a zip): nothing to date the
    project by, not a failure."""
    (tmp_path / "bin").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    out = tmp_path / "env.toml"
    assert main(["init", str(DATA / "condaenv"), "-o", str(out), "--offline"]) == 0, \
        capsys.readouterr().err
    assert "numpy==1.19.5" in load_spec(out, REGISTRY).for_platform("linux-64").pypi.packages


@pytest.mark.parametrize("target", ["missing", "empty"])
def test_bad_input_is_exit_2(tmp_path: Path, target: str,
                             capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "empty").mkdir()
    assert main(["init", str(tmp_path / target), "-o", str(tmp_path / "x.toml")]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    assert not (tmp_path / "x.toml").exists()


@pytest.mark.network
def test_pipenv_pins_date_the_project(tmp_path: Path) -> None:
    out = tmp_path / "specs" / "pipenv.toml"
    assert main(["init", str(repo_copy(tmp_path, "pipenv")), "-o", str(out), "--json"]) == 0
    pspec = load_spec(out, REGISTRY).for_platform("linux-64")
    assert str(pspec.pypi.as_of) == "2019-02-26"  # numpy 1.16.2's upload day
    assert pspec.python.version == host_python("3.7")
    text = out.read_text()
    assert '"numpy==1.16.2",  # Pipfile.lock:15' in text
    # GitHub is unreachable from here: the git dependency stays in the spec, commented out
    assert '    # "lasagne @ git+https://github.com/Lasagne/Lasagne.git@a61b76f' in text
    assert "left out: the resolver cannot fetch it: PyPI resolution for linux-64" in text
    assert "exited" not in text and "uv pip compile" not in text  # its words, not its command


@pytest.mark.network
def test_a_reachable_git_line_is_imported_and_locks(tmp_path: Path) -> None:
    src = tmp_path / "src"
    (src / "tinypkg").mkdir(parents=True)
    (src / "tinypkg" / "__init__.py").write_text("")
    (src / "setup.py").write_text("from setuptools import setup\nsetup(name="
                                  "'envforge-tinypkg-fixture', version='0.1', "
                                  "packages=['tinypkg'])\n")
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    for args in (["init", "-q"], ["add", "."], ["commit", "-qm", "one"]):
        subprocess.run(["git", "-C", str(src), *args], check=True, env=env)
    rev = subprocess.run(["git", "-C", str(src), "rev-parse", "HEAD"], check=True,
                         capture_output=True, text=True).stdout.strip()
    repo = tmp_path / "project"
    repo.mkdir()
    (repo / "requirements.txt").write_text(
        f"git+{src.as_uri()}@{rev}#egg=envforge-tinypkg-fixture\nsix\n")
    out = tmp_path / "project.toml"
    assert main(["init", str(repo), "-o", str(out)]) == 0
    packages = load_spec(out, REGISTRY).for_platform("linux-64").pypi.packages
    assert packages == (f"envforge-tinypkg-fixture @ git+{src.as_uri()}@{rev}", "six")


def git_repo(root: Path, requirements: str, day: str, name: str = "requirements.txt") -> Path:
    root.mkdir()
    (root / name).write_text(requirements)
    stamp = f"{day}T12:00:00+00:00"
    env = {**os.environ, "GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp}
    for args in (["init", "-q"], ["add", "."],
                 ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init"]):
        subprocess.run(["git", "-C", str(root), *args], check=True, env=env)
    return root


@pytest.mark.network
def test_a_project_with_no_release_by_the_day_gets_its_own_day_not_a_widened_one(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """six>=1.16 (2021-05-05) in a repository last committed 2019-08-15: lock's fix names
    six's own day, and init takes it at once (it widened four times, then narrowed to the
    same day): every other package keeps the repository's day, and each step is said
    (tests/app/test_settling.py has pytorch/text's codecov; the widening and narrowing of a
    conflict: the 2018 TensorFlow repository below)."""
    root = git_repo(tmp_path / "newer", "six>=1.16\n", "2019-08-15")
    out = tmp_path / "newer.toml"
    assert main(["init", str(root), "-o", str(out)]) == 0
    text = out.read_text()
    assert "\nas_of = 2019-08-15\nas_of_packages = { \"six\" = 2021-05-06 }\n" in text
    assert "did not resolve" not in text
    assert "as_of_packages gives six a day of its own: the index has no release of it for " \
        "Python 3.7 uploaded by as_of, its first came 2021-05-05" in text
    pypi = load_spec(out, REGISTRY).for_platform("linux-64").pypi
    assert (str(pypi.as_of), pypi.as_of_packages) == ("2019-08-15", {"six": date(2021, 5, 6)})
    err = " ".join(capsys.readouterr().err.split())
    assert "resolving as of 2019-08-15 (try 1 of 5)…" in err
    assert "resolving as of 2019-08-15 (try 2 of 6)…" in err
    assert "as_of_packages six 2021-05-06: no release of these for the Python came by " \
        "2019-08-15" in err
    assert "next: envforge lock" in err
    assert main(["init", str(root), "-o", str(out), "--force", "--json"]) == 0
    as_of = json.loads(capsys.readouterr().out)["as_of"]
    assert (as_of["value"], as_of["packages"], as_of["widened"]) == \
        ("2019-08-15", {"six": "2021-05-06"}, None)


@pytest.mark.network
def test_no_day_resolves_the_proposed_one_is_kept_with_every_day_tried(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = git_repo(tmp_path / "never", "six>=99\n", "2019-08-15")
    out = tmp_path / "never.toml"
    assert main(["init", str(root), "-o", str(out)]) == 1
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last == f"next: edit {out} as the reason above says, then envforge lock {out}"
    text = out.read_text()
    assert "\nas_of = 2019-08-15\n" in text
    assert "# does not resolve as of 2019-08-15, 2020-02-15, 2020-08-15, 2021-02-15, " \
           "2021-08-15 (widened six months a step from the proposed day): " in text


@pytest.mark.network
def test_a_2018_tensorflow_repository_locks_tf1_in_a_widened_era(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The issue's repository, on a host without Python 3.6 (which would keep numpy 1.13.3's
    era): TF 1.x and Keras, last committed before any TensorFlow had a
    Python 3.7 wheel. init once dropped the day and TF 2.11 resolved; now the day moves to
    Python 3.7's release, then a year on, and that later day is narrowed to what needs it
    (TensorFlow, what it needs, what Python 3.7's release day had only as sdists, each from
    its first release that installs: TF 1.13.1; six keeps the first day); numpy 1.13.3 (no
    cp37 wheel) moves to 1.14.5, the Python 2 and macOS pins get markers, sklearn is
    scikit-learn, and [tensorflow] and [keras] are mounted."""
    monkeypatch.setattr(drafting, "_host_older", lambda: ())
    root = git_repo(tmp_path / "tf1", "tensorflow>=1.4,<2\nkeras\nh5py\nnumpy==1.13.3\n"
                    "functools32==3.2.3-2\nappnope==0.1.0\nsklearn\n", "2018-03-15",
                    name="REQUIREMENTS.txt")
    (tmp_path / "specs").mkdir()
    out = tmp_path / "specs" / "tf1.toml"
    # a bound far over its usual 30-60 s: on a loaded machine a narrowing try that runs out
    # of its share keeps the widened day (TensorFlow 1.14), which is not what this tests
    assert main(["init", str(root), "-o", str(out), "--timeout", "600"]) == 0
    spec = load_spec(out, REGISTRY)
    pspec = spec.for_platform("linux-64")
    assert str(pspec.pypi.as_of) == "2018-06-27"
    assert date(2019, 2, 26) < pspec.pypi.as_of_packages["tensorflow"] <= date(2019, 6, 27)
    assert "six" not in pspec.pypi.as_of_packages
    assert "# 2018-06-27, 2018-12-27 did not resolve (" in out.read_text()
    assert "numpy==1.14.5" in pspec.pypi.packages and "scikit-learn" in pspec.pypi.packages
    assert set(pspec.packs) == {"tensorflow", "keras"}  # no [theano], no .theanorc
    text = out.read_text()
    assert "was numpy==1.13.3: its compiled wheels are for cp27, cp34, cp35, cp36, none for " \
           "cp37 on linux-64; 1.14.5 is the nearest release with a wheel for Python 3.7" in text
    assert main(["lock", str(out)]) == 0
    versions = {f.name: f.version for f in
                load_lock(tmp_path / "locks" / "tf1.lock", REGISTRY).platforms["linux-64"].pypi}
    assert versions["tensorflow"] == "1.13.1" and versions["keras"] == "2.2.4"
    assert versions["six"] == "1.11.0"  # of 2017-09: the widened day had 1.12.0
    assert "functools32" not in versions and "appnope" not in versions


@pytest.mark.network
def test_a_pin_moved_to_a_later_release_brings_its_era(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """facenet's tensorflow==1.7 (no cp37 wheel), on a host without Python 3.6, moves to
    1.13.1, whose tensorboard 1.13 is of 2019-02-26: the day follows it, and the first try
    resolves."""
    monkeypatch.setattr(drafting, "_host_older", lambda: ())
    root = git_repo(tmp_path / "facenet", "tensorflow==1.7\nscipy\nh5py\n", "2018-04-16")
    out = tmp_path / "facenet.toml"
    assert main(["init", str(root), "-o", str(out)]) == 0
    pspec = load_spec(out, REGISTRY).for_platform("linux-64")
    assert "tensorflow==1.13.1" in pspec.pypi.packages
    assert str(pspec.pypi.as_of) == "2019-02-26"
    text = out.read_text()
    assert "then tensorflow==1.13.1's day (2019-02-26)" in text and "did not resolve" not in text


def init_spec(tmp_path: Path, root: Path) -> Path:
    """``envforge init ROOT`` into ``specs/NAME.toml`` (so its lock goes to ``locks/``)."""
    (tmp_path / "specs").mkdir(exist_ok=True)
    out = tmp_path / "specs" / f"{root.name}.toml"
    assert main(["init", str(root), "-o", str(out)]) == 0
    return out


def locked_versions(spec: Path) -> dict[str, str]:
    """``envforge lock SPEC``, then linux-64's PyPI versions by name."""
    assert main(["lock", str(spec)]) == 0
    lock = spec.parent.parent / "locks" / f"{spec.stem}.lock"
    return {f.name: f.version for f in load_lock(lock, REGISTRY).platforms["linux-64"].pypi}


@pytest.mark.network
def test_a_pin_only_an_older_python_has_files_for_keeps_its_release_on_a_host_with_it(
        tmp_path: Path) -> None:
    """davidsandberg/facenet (2018-04-16): tensorflow==1.7's wheels stop at cp36. With a
    Python 3.6 here the pin and the repository's day are kept (its MTCNN alignment and its
    tests ran so), and the lock resolves TensorFlow 1.7.0 for it."""
    try:
        find_interpreter("3.6")
    except EnvforgeError as exc:
        pytest.skip(f"needs a Python 3.6 on this host (pyenv install 3.6): {exc}")
    out = init_spec(tmp_path, git_repo(tmp_path / "facenet", "tensorflow==1.7\nscipy\nh5py\n",
                                       "2018-04-16"))
    pspec = load_spec(out, REGISTRY).for_platform("linux-64")
    assert pspec.python.version.startswith("3.6.") and str(pspec.pypi.as_of) == "2018-04-16"
    assert "tensorflow==1.7" in pspec.pypi.packages
    assert "none of 3.7-3.11 suits tensorflow==1.7, and this host has Python 3.6" \
        in out.read_text()
    assert locked_versions(out)["tensorflow"] == "1.7.0"


@pytest.mark.network
def test_an_exact_pin_of_a_release_yanked_for_newer_pythons_is_kept(tmp_path: Path) -> None:
    """torch 1.0.1 and its torchvision, 0.2.2.post3, pinned on 2019-03-08: PyPI yanked every
    torchvision before 0.3.0 "So that users won't accidentally install this when using python
    3.11", and init said "the index has no such release" and moved the pair to torch 1.1.0
    and torchvision 0.3.0. An exact pin installs a yanked release (PEP 592): both are kept
    and lock resolves them."""
    out = init_spec(tmp_path, git_repo(tmp_path / "tv", "torch==1.0.1\ntorchvision==0.2.2.post3\n",
                                       "2019-03-08"))
    pspec = load_spec(out, REGISTRY).for_platform("linux-64")
    assert pspec.pypi.packages == ("torch==1.0.1", "torchvision==0.2.2.post3")
    versions = locked_versions(out)
    assert (versions["torch"], versions["torchvision"]) == ("1.0.1", "0.2.2.post3")


@pytest.mark.network
def test_local_builds_from_a_page_that_cannot_be_reached_take_their_public_releases(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The era's PyTorch CPU pins: ``torch==1.4.0+cpu`` from ``-f .../torch_stable.html``.
    With that page unreachable (here a closed port; download.pytorch.org is not reachable from
    this machine either) init said "the index has no such release", moved both pins to 1.5.0
    and 0.6.0, and the draft did not resolve on any of five days (uv could not read the page).
    Now the page is left out, commented with why, and the pins take the releases the builds
    were made from, which lock resolves from PyPI; a wheel's URL there (the era's other
    spelling) takes the release its file name gives, where it was left out."""
    page = "http://127.0.0.1:9/whl/torch_stable.html"
    wheel = "http://127.0.0.1:9/whl/cpu/torchvision-0.5.0%2Bcpu-cp37-cp37m-linux_x86_64.whl"
    out = init_spec(tmp_path, git_repo(tmp_path / "cpu", f"-f {page}\ntorch==1.4.0+cpu\n{wheel}\n",
                                       "2020-03-01"))
    pspec = load_spec(out, REGISTRY).for_platform("linux-64")
    assert pspec.pypi.packages == ("torch==1.4.0", "torchvision==0.5.0")
    assert pspec.pypi.find_links == () and str(pspec.pypi.as_of) == "2020-03-01"
    text = out.read_text()
    assert f"# left out {page}: the resolver cannot reach it: " in text
    assert "was torch==1.4.0+cpu: a local build (+cpu), and the page or index that serves it " \
           "cannot be reached; PyPI holds none (PEP 440" in text
    assert f"left out {page}: the resolver cannot reach it" in capsys.readouterr().err
    assert f"was torchvision @ {wheel}: the resolver cannot fetch it: " in text
    versions = locked_versions(out)
    assert (versions["torch"], versions["torchvision"]) == ("1.4.0", "0.5.0")


@pytest.mark.network
def test_a_mirror_of_pypi_is_pypi_and_an_index_that_cannot_be_reached_is_left_out(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Bobyuan1015/KDA's way (2020): ``pip install -i https://pypi.tuna.tsinghua.edu.cn/simple
    ...`` in a requirement.sh, TUNA's mirror of PyPI, which this host cannot reach: PyPI
    itself. Another index the resolver cannot reach (a closed port here) became the spec's
    and no day resolved; now it is left out, commented with why, and PyPI resolves."""
    index = "http://127.0.0.1:9/simple"
    root = git_repo(tmp_path / "kda", "six==1.12.0\n", "2019-03-01")
    (root / "requirement.sh").write_text(
        "#!/usr/bin/env bash\npip install -i https://pypi.tuna.tsinghua.edu.cn/simple "
        "colorama==0.4.1 --user\npip install --index-url " + index + "/ six==1.12.0\n")
    out = init_spec(tmp_path, root)
    pspec = load_spec(out, REGISTRY).for_platform("linux-64")
    assert pspec.pypi.index == "https://pypi.org/simple"
    assert pspec.pypi.packages == ("six==1.12.0", "colorama==0.4.1")
    text = out.read_text()
    assert "# pip's -i at requirement.sh:3" in text
    assert f"# left out {index}/: the resolver cannot reach it: " in text
    err = capsys.readouterr().err
    assert f"{index}/ listed none of them; querying PyPI for the proposals" in err
    assert "an index that serves PyPI's releases (TUNA, Tsinghua University" in err
    versions = locked_versions(out)
    assert (versions["colorama"], versions["six"]) == ("0.4.1", "1.12.0")


@pytest.mark.network
def test_a_pin_whose_sdist_does_not_build_moves_to_a_release_with_a_wheel(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """blocks' toolz==0.8.0: an sdist only, whose code is a SyntaxError on Python 3.7 (its
    build fails); the next release with a wheel is 0.11.0."""
    root = git_repo(tmp_path / "blocks", "toolz==0.8.0\n", "2018-09-06")
    out = tmp_path / "blocks.toml"
    assert main(["init", str(root), "-o", str(out)]) == 0
    assert load_spec(out, REGISTRY).for_platform("linux-64").pypi.packages == ("toolz==0.11.0",)
    assert "was toolz==0.8.0: its sdist does not build for Python 3.7; 0.11.0 is the nearest " \
           "release with a wheel for Python 3.7" in out.read_text()
    assert "toolz==0.8.0: its sdist does not build; moved to toolz==0.11.0" in \
        capsys.readouterr().err


@pytest.mark.network
def test_a_pin_whose_setup_py_imports_undeclared_keeps_its_release_and_gets_them(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
        ) -> None:
    """pycocotools==2.0.0 (a detection repository of 2019): its setup.py imports Cython, then
    NumPy, declaring neither. The pin stays (it moved four years, to 2.0.7, before) and the
    spec gives its build both, which init's trial build then shows to work. A home of its
    own: metadata kept from another test's build would spare uv the build that names them."""
    monkeypatch.setenv("ENVFORGE_HOME", str(tmp_path / "home"))
    root = git_repo(tmp_path / "coco", "numpy==1.16.4\npycocotools==2.0.0\n", "2019-08-01")
    out = tmp_path / "coco.toml"
    assert main(["init", str(root), "-o", str(out), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["extra_build_dependencies"] == {"pycocotools": ["Cython", "numpy"]}
    assert report["built"]["sdists"] == ["pycocotools==2.0.0"]
    pspec = load_spec(out, REGISTRY).for_platform("linux-64")
    assert pspec.pypi.packages == ("numpy==1.16.4", "pycocotools==2.0.0")
    assert pspec.pypi.extra_build_dependencies == {"pycocotools": ("Cython", "numpy")}
    assert "# each sdist's setup.py imports these without declaring them" in out.read_text()


@pytest.mark.network
def test_a_numpy_distutils_build_gets_numpy_and_the_setuptools_that_kept_its_distutils(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
        ) -> None:
    """lap==0.4.0 (the tracking repositories of 2020): its setup.py refuses without NumPy in
    its own words, then numpy.distutils imports distutils.msvccompiler, which setuptools 74
    removed. Both go into the spec and the pin stays (it moved to lap 0.5.12 of 2024 before,
    pulling NumPy 1.18.1 up to 1.21.6); the trial build shows it builds."""
    monkeypatch.setenv("ENVFORGE_HOME", str(tmp_path / "home"))
    root = git_repo(tmp_path / "track", "numpy==1.18.1\nlap==0.4.0\n", "2020-04-01")
    out = tmp_path / "track.toml"
    assert main(["init", str(root), "-o", str(out), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["extra_build_dependencies"] == {"lap": ["numpy"]}
    assert list(report["build_constraints"]) == ["setuptools<74"]
    assert report["built"]["sdists"] == ["lap==0.4.0"]
    pspec = load_spec(out, REGISTRY).for_platform("linux-64")
    assert pspec.pypi.packages == ("numpy==1.18.1", "lap==0.4.0")
    assert pspec.pypi.build_constraints == ("setuptools<74",)


JDE_ASSOCIATION = """\
import numpy as np
from tracker import matching
from utils.kalman_filter import KalmanFilter
m, ua, ub = matching.linear_assignment(np.array([[0.1, 0.9], [0.8, 0.2], [0.5, 0.5]]), 0.7)
boxes = np.array([[0, 0, 10, 10], [5, 5, 15, 15]], dtype=np.float64)
mean, cov = KalmanFilter().initiate(np.array([5.0, 5.0, 1.0, 10.0]))
print(m.tolist(), ua.tolist(), ub.tolist(), matching.ious(boxes, boxes).round(3).tolist(),
      mean[:4].tolist())
"""


@pytest.mark.network
@pytest.mark.slow
@pytest.mark.posix_only("builds lap's and cython-bbox's C extensions with this Linux's gcc")
def test_jdes_tracker_with_no_dependency_file_runs_its_association_unaided(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Zhongdao/Towards-Realtime-MOT's tracker (tests/importers/data/jde: its files byte for
    byte): no dependency file, its code imports lap and cython_bbox, whose sdists' setup.py
    import NumPy (and Cython) undeclared and whose numpy.distutils needs a setuptools before
    74. init, lock and apply with no edit; its own linear assignment, IoU and Kalman filter
    then run. Before, init reported lap and cython_bbox as unknown, and given them by hand
    moved lap to 0.5.12 of 2024."""
    root = repo_copy(tmp_path, "jde", commit_day="2020-03-20")
    spec = root / "specs" / "jde.toml"
    assert main(["init", str(root), "-o", str(spec)]) == 0
    pspec = load_spec(spec, REGISTRY).for_platform("linux-64")
    assert {"lap", "cython-bbox"} <= set(pspec.pypi.packages)
    assert set(pspec.pypi.extra_build_dependencies) == {"lap", "cython-bbox"}
    assert pspec.pypi.build_constraints == ("setuptools<74",)
    assert main(["lock", str(spec)]) == 0
    prefix = tmp_path / "env"
    assert main(["apply", str(spec), "--yes", "--prefix", str(prefix)]) == 0
    done = subprocess.run([str(prefix / "bin" / "python"), "-c", JDE_ASSOCIATION], cwd=root,
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["[[0,", "0],", "[1,", "1]]", "[2]", "[]", "[[1.0,", "0.175],",
                                   "[0.175,", "1.0]]", "[5.0,", "5.0,", "1.0,", "10.0]"]


@pytest.mark.network
def test_a_pure_wheel_the_python_does_not_parse_moves_to_the_release_that_parses(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """facebookresearch/DrQA's pexpect==4.2.1: a py2.py3 wheel whose spawnbase.py names a
    parameter ``async``, a keyword since Python 3.7, so ``import pexpect`` fails there; its
    tags and Requires-Python say nothing. init's trial compile finds it and moves the pin to
    4.3.0, which renamed it."""
    root = git_repo(tmp_path / "drqa", "numpy\npexpect==4.2.1\n", "2020-04-22")
    out = tmp_path / "drqa.toml"
    assert main(["init", str(root), "-o", str(out)]) == 0
    assert "pexpect==4.3.0" in load_spec(out, REGISTRY).for_platform("linux-64").pypi.packages
    text = out.read_text()
    assert "was pexpect==4.2.1: its code does not parse on Python 3." in text
    assert "(pexpect/spawnbase.py:224: invalid syntax)" in text
    assert "pexpect==4.2.1: its code does not parse on Python 3." in capsys.readouterr().err


@pytest.mark.network
def test_a_pin_another_pins_dependency_rules_out_moves_into_its_range(tmp_path: Path) -> None:
    """gcn pins numpy==1.15.4 beside tensorflow==1.15.4, which needs numpy>=1.16.0,<1.19.0
    (pip before 20.3 installed both); the numpy pin moves to 1.16.0."""
    root = git_repo(tmp_path / "gcn", "numpy==1.15.4\ntensorflow==1.15.4\n", "2020-09-26")
    out = tmp_path / "gcn.toml"
    assert main(["init", str(root), "-o", str(out)]) == 0
    packages = load_spec(out, REGISTRY).for_platform("linux-64").pypi.packages
    assert packages == ("numpy==1.16.0", "tensorflow==1.15.4")
    assert "was numpy==1.15.4: tensorflow==1.15.4 depends on numpy>=1.16.0,<1.19.0; 1.16.0 " \
           "is the nearest release it admits with a wheel for Python 3.7" in out.read_text()


def test_python_2_code_is_named_in_the_report_and_the_spec(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """DeepMoji's tokenizer.py holds ``ur'[0-9]+'``: its spec locked and applied, and the
    code failed only at its first import."""
    root = tmp_path / "py2"
    root.mkdir()
    (root / "requirements.txt").write_text("six\n")
    (root / "tokenizer.py").write_text("RE_NUM = ur'[0-9]+'\n")
    out = tmp_path / "py2.toml"
    assert main(["init", str(root), "-o", str(out), "--offline"]) == 0
    note = "1 of 1 .py files do not parse as Python 3.7 (first: tokenizer.py:1: "
    assert f"warning: {note}" in capsys.readouterr().err
    assert f"\n# {note}" in out.read_text()
    assert main(["init", str(root), "-o", str(out), "--offline", "--force", "--json"]) == 0
    code = json.loads(capsys.readouterr().out)["code"]
    assert code["files"] == 1 and code["not_parsed"][0]["path"] == "tokenizer.py"


@pytest.mark.network
def test_a_project_the_index_lacks_stops_the_widening_at_once(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """keras-contrib 2.0.8 was never on PyPI: init tried five days before saying so; no day
    makes a project appear."""
    root = git_repo(tmp_path / "contrib", "six==1.16.0\nkeras-contrib==2.0.8\n", "2019-08-15")
    out = tmp_path / "contrib.toml"
    assert main(["init", str(root), "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert "(try 1 of 5)" in err and "(try 2 of 5)" not in err
    assert "the index lists no release of keras-contrib at all" in err
    assert "did not resolve" not in out.read_text()  # no day tried past the proposed one


@pytest.mark.network
def test_keras_named_alone_gets_its_back_end_tensorflow_1x(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """DeepMoji pins Keras==2.0.9 and leaves TensorFlow to its README ("install one of its
    backend engines"): init adds tensorflow<2 on Keras's line and mounts [tensorflow], the
    day widens to TensorFlow's first wheels for Python 3.7, and the spec locks."""
    root = git_repo(tmp_path / "deepmoji", "Keras==2.0.9\n", "2018-09-09")
    (tmp_path / "specs").mkdir()
    out = tmp_path / "specs" / "deepmoji.toml"
    assert main(["init", str(root), "-o", str(out)]) == 0
    assert "it resolves" in capsys.readouterr().err
    text = out.read_text()
    assert '"tensorflow<2",  # requirements.txt:1; added: [keras] backend = "tensorflow", ' \
           "which no requirement names" in text
    spec = load_spec(out, REGISTRY).for_platform("linux-64")
    assert {"tensorflow", "keras"} <= set(spec.packs)
    assert main(["lock", str(out)]) == 0
    locked = {f.name: f.version for f in load_lock(
        tmp_path / "locks" / "deepmoji.lock", REGISTRY).platforms["linux-64"].pypi}
    assert locked["keras"] == "2.0.9" and locked["tensorflow"].startswith("1.")


def test_a_spec_lock_would_refuse_is_refused_by_the_draft_check_before_resolving(
        tmp_path: Path) -> None:
    """init says "it resolves" only of a spec that locks: its check runs lock's offline
    compatibility rules first, as lock does ([keras] backend = "tensorflow" with no
    [tensorflow] section), and raises them, as no day changes them (settle stops)."""
    from envforge.app.settling import try_lock
    from envforge.errors import CompatibilityError

    text = ('[project]\nname = "k"\nplatforms = ["linux-64"]\n[python]\nversion = "3.7"\n'
            '[environment]\nkind = "venv"\n[pypi]\npackages = ["Keras==2.0.9"]\n'
            '[keras]\nbackend = "tensorflow"\nkeras_json = "home"\n')
    with pytest.raises(CompatibilityError, match=r"the spec has no \[tensorflow\] section"):
        try_lock(text, str(tmp_path / "k.toml"), "linux-64")


SIX_WHEEL = ("https://files.pythonhosted.org/packages/d9/5a/e7c31adbe875f2abbb91bd84cf2dc52d"
             "792b5a01506781dbcf25c91daf11/six-1.16.0-py2.py3-none-any.whl")


@pytest.mark.network
def test_a_direct_wheel_url_is_kept_and_locked_by_its_sha256(tmp_path: Path) -> None:
    """pip installs a requirements line that is a wheel's URL (and checks its --hash); init
    once dropped it ("only git URLs are locked")."""
    root = tmp_path / "direct"
    root.mkdir()
    (root / "requirements.txt").write_text(f"{SIX_WHEEL}\n")
    (tmp_path / "specs").mkdir()
    out = tmp_path / "specs" / "direct.toml"
    assert main(["init", str(root), "-o", str(out)]) == 0
    assert load_spec(out,
                     REGISTRY).for_platform("linux-64").pypi.packages == (f"six @ {SIX_WHEEL}",)
    assert main(["lock", str(out)]) == 0
    (six,) = load_lock(tmp_path / "locks" / "direct.lock", REGISTRY).platforms["linux-64"].pypi
    assert six.url == SIX_WHEEL and six.version == "1.16.0"
    assert six.sha256 == "8abb2f1d86890a2dfb989f9a77cfcfd3e47c2a354b01111771326f8aa26e0254"


@pytest.mark.network
def test_the_time_bound_stops_init_with_a_clear_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    # A home of its own (it wrote into the user's), and a bound below one try: uv now
    # refuses try 1 (as of 2018-06-27) within 0.5 s, which ran the bound out in try 2.
    monkeypatch.setenv("ENVFORGE_HOME", str(tmp_path / "envforge-home"))
    root = git_repo(tmp_path / "slow", "tensorflow>=1.4,<2\nkeras\n", "2018-03-15")
    out = tmp_path / "slow.toml"
    begun = time.monotonic()
    assert main(["init", str(root), "-o", str(out), "--timeout", "0.1"]) == 1
    assert time.monotonic() - begun < 10
    # the repository's day with this host's Python 3.6, else Python 3.7's; never dropped
    day = "2018-03-15" if host_python("3.6") != "3.6" else "2018-06-27"
    assert f"init's time bound ran out while resolving as of {day} (try 1 of 5); give " \
           "more with --timeout" in capsys.readouterr().err
    assert f"\nas_of = {day}\n" in out.read_text()
    assert main(["init", str(root), "-o", str(out), "--force", "--timeout", "0"]) == 2


@pytest.mark.network
@pytest.mark.slow
def test_deepsurv_init_locks_in_its_era_and_applies(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch,
                                                    shared_cache: Path) -> None:
    # the run's wheels and built sdists (lifelines, optunity): what is tested is the era
    # init picks and that its lock applies, not a cold download
    monkeypatch.setenv("ENVFORGE_HOME", str(home_sharing(tmp_path / "envforge-home",
                                                         shared_cache)))
    root = repo_copy(tmp_path, "deepsurv", commit_day="2019-08-15")
    (tmp_path / "specs").mkdir()
    out = tmp_path / "specs" / "deepsurv.toml"
    assert main(["init", str(root), "-o", str(out)]) == 0
    pspec = load_spec(out, REGISTRY).for_platform("linux-64")
    assert str(pspec.pypi.as_of) == "2019-08-15" and pspec.python.version == host_python("3.7")
    assert main(["lock", str(out)]) == 0
    lock = load_lock(tmp_path / "locks" / "deepsurv.lock", REGISTRY)
    versions = {f.name: f.version for f in lock.platforms["linux-64"].pypi}
    assert versions["protobuf"].startswith("3.") and versions["theano-pymc"] == "1.0.5"
    prefix = tmp_path / "env"
    assert main(["apply", str(out), "--yes", "--prefix", str(prefix)]) == 0
    done = subprocess.run([str(prefix / "bin" / "python"), "-c",
                           "import lifelines, optunity, tensorboard_logger, h5py, theano; "
                           "print(theano.__version__)"], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip() == "1.0.5"
    assert main(["rollback", str(out), "--prefix", str(prefix)]) == 0


@pytest.mark.network
@pytest.mark.slow
@pytest.mark.posix_only("applies the Linux Python 3.7 from pyenv and Debian's OpenBLAS")
def test_a_theano_repositorys_spec_links_openblas_and_verify_passes_its_blas_row(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        shared_cache: Path) -> None:
    """init -> lock -> apply -> verify of a small Theano repository (theano-cpu's pins, whose
    wheels and debs the run's cache holds): Theano's GEMMs link the Debian OpenBLAS init
    added, so the blas row passes instead of the skip a spec without it gets."""
    enter_home(tmp_path, home_sharing(tmp_path / "envforge-home", shared_cache), monkeypatch)
    root = tmp_path / "small"
    root.mkdir()
    (root / "setup.py").write_text(
        'from setuptools import setup\n\nsetup(name="small", python_requires="==3.7.*",\n'
        '      install_requires=["numpy==1.19.5", "scipy==1.7.3", "six==1.16.0",\n'
        '                        "Theano==1.0.4"])\n')
    (tmp_path / "specs").mkdir()
    out = tmp_path / "specs" / "small.toml"
    assert main(["init", str(root), "-o", str(out)]) == 0, capsys.readouterr().err
    assert load_spec(out, REGISTRY).for_platform("linux-64").debian is not None
    assert main(["lock", str(out)]) == 0
    prefix = tmp_path / "env"
    assert main(["apply", str(out), "--yes", "--prefix", str(prefix)]) == 0
    code, document = verify_json(out, prefix, capsys)
    rows = {row["name"]: row for row in document["rows"]}
    assert rows["blas"]["status"] == "pass" and "openblas" in rows["blas"]["found"], rows["blas"]
    assert code == 0, [row for row in document["rows"] if row["status"] == "fail"]
    assert main(["rollback", str(out), "--prefix", str(prefix)]) == 0



def test_the_report_and_json_say_which_use_added_ffmpeg_or_why_win_64_has_none(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "recorder"
    root.mkdir()
    (root / "requirements.txt").write_text("gym==0.15.4\n")
    (root / "record.py").write_text("from gym.wrappers.monitoring import video_recorder\n")
    out = tmp_path / "recorder.toml"
    assert main(["init", str(root), "-o", str(out), "--offline", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    (added,) = document["debian"]
    assert added["section"] is None and added["packages"] == ["ffmpeg"]
    assert added["dependencies"] == "closure" and document["no_debian"] == []
    assert added["used"] == {"name": "gym.wrappers.monitoring.video_recorder",
                             "origin": "record.py:1"}
    assert "gym-0.15.4" in added["source"]
    assert main(["init", str(root), "-o", str(out), "--offline", "--force"]) == 0
    assert "[debian] bookworm ffmpeg with its dependency closure added for " \
           "gym.wrappers.monitoring.video_recorder (record.py:1): " in capsys.readouterr().err
    assert run_init(root, output=out, name=None, force=True, offline=True,
                    ui=UI(quiet=False), platform="win-64") == 0
    assert "no [debian] on win-64 (Debian's packages are linux-64's), so install ffmpeg on " \
           "PATH yourself" in capsys.readouterr().err
    assert load_spec(out, REGISTRY).for_platform("win-64").debian is None


def test_init_o_onto_a_file_it_reads_or_a_folder_is_refused_and_nothing_changes(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 29, finding 4: ``-o`` onto the repository's own requirements.txt (with --force)
    would replace what init reads; a folder was a traceback."""
    root = repo_copy(tmp_path, "deepsurv")
    untouched = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    for output in (root / "requirements.txt", root):
        capsys.readouterr()
        assert main(["init", str(root), "-o", str(output), "--offline", "--force"]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"error: -o {output}: ") and err.count("\n") == 1, err
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == untouched


@pytest.mark.network
def test_the_newest_python_of_the_day_gives_way_to_the_one_before_not_the_day(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """OpenNMT-py (2019-12-31): Python 3.8 was the newest released by then, but no
    torchvision of that day has a wheel for it (0.5.0, of 2020-01-15, was the first); the day
    was widened six months, to torch 1.5. Python 3.7 resolves on the repository's own day."""
    root = git_repo(tmp_path / "onmt", "torch>=1.2\ntorchvision\n", "2019-12-31")
    out = tmp_path / "onmt.toml"
    assert main(["init", str(root), "-o", str(out)]) == 0
    assert "Python 3.8.18 did not resolve as of the proposed day; trying 3.7" in \
        capsys.readouterr().err.replace(host_python("3.8"), "3.8.18")
    pspec = load_spec(out, REGISTRY).for_platform("linux-64")
    assert pspec.python.version == host_python("3.7")
    assert str(pspec.pypi.as_of) == "2019-12-31"
    assert "Python 3.8, the newest released by 2019-12-31, did not resolve on that day" in \
        out.read_text()


@pytest.mark.network
def test_a_dependency_that_imports_what_its_days_numba_removed_keeps_the_numba_before(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """NVIDIA/tacotron2 at 185cd24 (2020-06-11) pins librosa==0.6.0, whose import needs
    numba.decorators; numba 0.50.0, uploaded that day, removed it, and `import librosa`
    failed in the environment init wrote. Now init caps numba below 0.50 from librosa's line
    and the day resolves numba 0.49.1."""
    root = git_repo(tmp_path / "tt2", "librosa==0.6.0\nnumpy==1.16.4\n", "2020-06-11")
    out = tmp_path / "specs" / "tt2.toml"
    (tmp_path / "specs").mkdir()
    assert main(["init", str(root), "-o", str(out), "--timeout", "600"]) == 0
    assert "added numba<0.50: librosa 0.6.0 (as resolved) uses numba.decorators, which " \
           "numba 0.50 removed" in capsys.readouterr().err
    assert '"numba<0.50",  # requirements.txt:1; added: librosa 0.6.0 (as resolved) uses ' \
           "numba.decorators" in out.read_text()
    assert main(["lock", str(out)]) == 0
    versions = {f.name: f.version for f in
                load_lock(tmp_path / "locks" / "tt2.lock", REGISTRY).platforms["linux-64"].pypi}
    assert versions["librosa"] == "0.6.0" and versions["numba"] == "0.49.1"


def applied(root: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str],
            monkeypatch: pytest.MonkeyPatch, shared_cache: Path) -> tuple[Path, Path, str]:
    """init (its report), lock and apply of ``root`` into ``tmp_path``'s ``env``, in a home
    sharing the run's cache: the spec, the prefix and the report."""
    enter_home(tmp_path, home_sharing(tmp_path / "envforge-home", shared_cache), monkeypatch)
    (tmp_path / "specs").mkdir()
    out = tmp_path / "specs" / f"{root.name}.toml"
    code = main(["init", str(root), "-o", str(out)])
    report = capfd.readouterr().err
    assert code == 0, report
    assert main(["lock", str(out)]) == 0
    prefix = tmp_path / "env"
    assert main(["apply", str(out), "--yes", "--prefix", str(prefix)]) == 0
    capfd.readouterr()
    return out, prefix, report


@pytest.mark.network
@pytest.mark.slow
@pytest.mark.posix_only("applies the Linux Python 3.7 from pyenv and Debian's libraries")
def test_audio_modules_whose_linux_wheels_lack_their_library_get_debians_and_load_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str],
        shared_cache: Path) -> None:
    """init -> lock -> apply -> run of a repository of 2019's audio modules
    (CorentinJ/Real-Time-Voice-Cloning's): sounddevice 0.3.13 and SoundFile 0.10.3.post1
    load PortAudio and libsndfile at import and their Linux wheels ship neither (`OSError:
    PortAudio library not found`). init adds Debian's with their closures, as resolved;
    both modules load them from the environment and a WAV round-trips."""
    root = tmp_path / "voice"
    root.mkdir()
    (root / "requirements.txt").write_text("sounddevice==0.3.13\nSoundFile==0.10.3.post1\n"
                                           "numpy==1.16.4\n")
    (root / "demo.py").write_text("import sounddevice as sd\nimport soundfile\n")
    out, prefix, report = applied(root, tmp_path, capfd, monkeypatch, shared_cache)
    assert "[debian] bookworm libportaudio2 with its dependency closure added for " \
        "sounddevice 0.3.13 (as resolved): " in report
    debian = load_spec(out, REGISTRY).for_platform("linux-64").debian
    assert debian is not None and debian.packages == ("libportaudio2", "libsndfile1")
    assert debian.dependencies == "closure"
    assert "# for sounddevice 0.3.13 (as resolved) on linux-64: " in out.read_text()
    wav = tmp_path / "tone.wav"
    code = ("import numpy as np, sounddevice as sd, soundfile as sf\n"
            f"sf.write({str(wav)!r}, np.linspace(-0.5, 0.5, 1600), 16000)\n"
            f"data, rate = sf.read({str(wav)!r})\n"
            "print(rate, len(data), round(float(data[-1]), 3), sd.get_portaudio_version()[1])\n")
    assert main(["run", str(out), "--prefix", str(prefix), "--", "python", "-c", code]) == 0
    assert capfd.readouterr().out.startswith("16000 1600 0.5 PortAudio V19")


@pytest.mark.network
@pytest.mark.slow
@pytest.mark.posix_only("builds PyAudio against Debian's PortAudio for the Linux Python 3.7")
def test_pyaudio_builds_against_debians_portaudio_headers_init_adds(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str],
        shared_cache: Path) -> None:
    """init -> lock -> apply -> run of a repository pinning PyAudio==0.2.11 (an sdist alone on
    Linux, whose extension includes portaudio.h; this host has none): init adds bookworm's
    portaudio19-dev with its closure, its trial build and apply's are handed them, and the
    extension built loads PortAudio from the environment."""
    root = git_repo(tmp_path / "mic", "PyAudio==0.2.11\nnumpy==1.16.4\n", "2019-06-01")
    (root / "listen.py").write_text("import pyaudio\n")
    out, prefix, report = applied(root, tmp_path, capfd, monkeypatch, shared_cache)
    assert "[debian] bookworm portaudio19-dev with its dependency closure added for PyAudio's " \
           "build (requirements.txt:1)" in report
    assert "built from their sdists, as apply will (kept in the cache for it): pyaudio==0.2.11" \
        in report
    code_text = "import pyaudio\nprint(pyaudio.get_portaudio_version_text())\n"
    assert main(["run", str(out), "--prefix", str(prefix), "--", "python", "-c",
                 code_text]) == 0
    assert capfd.readouterr().out.startswith("PortAudio V19")


@pytest.mark.network
@pytest.mark.slow
@pytest.mark.posix_only("applies the Linux Python 3.7 from pyenv and Debian's ffmpeg")
def test_a_repository_recording_gym_video_gets_an_ffmpeg_that_gyms_encoder_runs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str],
        shared_cache: Path) -> None:
    """init -> lock -> apply -> run of a small repository whose code wraps its environment in
    gym's Monitor: the [debian] ffmpeg init added (with its closure) is on the environment's
    PATH, and gym 0.15.4's own ImageEncoder, which looks for it there, encodes with it."""
    root = tmp_path / "recorder"
    root.mkdir()
    (root / "requirements.txt").write_text("gym==0.15.4\n")
    (root / "train.py").write_text("import gym\nfrom gym.wrappers import Monitor\n\n"
                                   "env = Monitor(gym.make('CartPole-v0'), 'videos')\n")
    out, prefix, _ = applied(root, tmp_path, capfd, monkeypatch, shared_cache)
    debian = load_spec(out, REGISTRY).for_platform("linux-64").debian
    assert debian is not None and debian.packages == ("ffmpeg",)
    assert debian.dependencies == "closure"
    assert main(["run", str(out), "--prefix", str(prefix), "--", "ffmpeg", "-version"]) == 0
    assert capfd.readouterr().out.startswith("ffmpeg version ")
    video = tmp_path / "out.mp4"
    encode = ("import numpy as np\nfrom gym.wrappers.monitoring.video_recorder import "
              f"ImageEncoder\ne = ImageEncoder({str(video)!r}, (64, 64, 3), 10)\n"
              "for _ in range(10):\n    e.capture_frame(np.zeros((64, 64, 3), np.uint8))\n"
              "e.close()\nprint(e.backend)\n")
    assert main(["run", str(out), "--prefix", str(prefix), "--", "python", "-c", encode]) == 0
    assert capfd.readouterr().out.strip().endswith("ffmpeg")
    assert video.stat().st_size > 0 and video.read_bytes()[4:8] == b"ftyp"
    assert main(["rollback", str(out), "--prefix", str(prefix)]) == 0


def test_a_git_theano_line_becomes_theano_pymc(tmp_path: Path) -> None:
    """mila-iqia/blocks' requirements.txt (c69c2dc, 2018-09-06) names the original Theano by
    its git tree: mapped as a PyPI pin of it is, so lock does not refuse the draft."""
    root = tmp_path / "blocks"
    root.mkdir()
    (root / "requirements.txt").write_text(
        "numpy==1.11.1\nsix==1.10.0\ngit+https://github.com/Theano/Theano.git#egg=theano\n")
    out = tmp_path / "specs" / "blocks.toml"
    assert main(["init", str(root), "-o", str(out), "--offline"]) == 0
    spec = load_spec(out, REGISTRY)
    assert "Theano-PyMC==1.0.5" in spec.for_platform("linux-64").pypi.packages
    assert '"Theano-PyMC==1.0.5",  # requirements.txt:3; was theano @ ' \
        "git+https://github.com/Theano/Theano.git: the original Theano's development tree, " \
        "last released as 1.0.5; envforge's rules are for Theano-PyMC==1.0.5" in out.read_text()
    from envforge.compat import ensure_compatible

    ensure_compatible(spec, REGISTRY)


def test_a_projects_own_day_is_reported_as_settling_gave_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A day given to a project none of whose releases came by as_of (pytorch/text's
    codecov) is reported as that, not as a narrowing of a widened day (which read "None")."""
    from envforge.app.trialbuild import Trial
    from envforge.commands.init import _report
    from envforge.importers import Found, Imported
    from envforge.importers.propose import Proposal
    from envforge.importers.render import Draft
    from envforge.importers.repository import Repository

    draft = Draft(name="text", source="text", platform="linux-64", repository=Repository(
        ("requirements.txt",), Imported(requirements=[Found("codecov", "requirements.txt:3")])),
        python=Proposal("3.7.16", "its day"), as_of=Proposal("2019-08-02", "its last commit"),
        as_of_packages={"codecov": "2023-04-17"})
    _report(draft, tmp_path / "text.toml", None, Trial(), UI(), resolved=True)
    err = " ".join(capsys.readouterr().err.split())
    assert "as_of_packages codecov 2023-04-17: no release of these for the Python came by " \
        "2019-08-02; each takes the day after its first one came, every other package keeps " \
        "2019-08-02" in err
    assert "None" not in err


@pytest.mark.network
@pytest.mark.slow
def test_a_nightly_pypi_deleted_is_overridden_and_old_torchvision_gets_its_pillow(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """AntixK/PyTorch-VAE 6d6a3f3 (2020-03-02), the pins that showed both: test-tube 0.7.0
    depends on tb-nightly==1.15.0a20190708, which PyPI no longer has (init's draft did not
    resolve), and torchvision 0.4.0 resolved Pillow 7.0.0, whose missing PILLOW_VERSION it
    imports. Real uv: init writes the override with why, lock adds pillow<7."""
    root = git_repo(tmp_path / "vae", "tensorboard==2.1.0\ntest-tube==0.7.0\ntorch==1.2.0\n"
                    "torchvision==0.4.0\n", "2020-03-02")
    (tmp_path / "specs").mkdir()
    out = tmp_path / "specs" / "vae.toml"
    assert main(["init", str(root), "-o", str(out)]) == 0
    assert "it resolves" in capsys.readouterr().err
    text = out.read_text()
    assert 'overrides = ["tb-nightly; sys_platform == \\"never\\""]' in text
    assert "test-tube==0.7.0 depends on tb-nightly==1.15.0a20190708, which the index no " \
        "longer has; tensorboard installs the same module" in text
    assert main(["lock", str(out)]) == 0
    assert "added pillow<7: torchvision/transforms/functional.py:5" in capsys.readouterr().err
    locked = {f.name: f.version for f in load_lock(
        tmp_path / "locks" / "vae.lock", REGISTRY).platforms["linux-64"].pypi}
    assert "tb-nightly" not in locked and locked["tensorboard"] == "2.1.0"
    assert int(locked["pillow"].split(".")[0]) < 7
