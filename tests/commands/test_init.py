"""envforge init: a legacy repository's files -> a spec that parses, says where every pin came
from, reports what it left out, and (network) locks and applies."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from envforge.cli import main
from envforge.lockfile import load_lock
from envforge.spec import load_spec

DATA = Path(__file__).resolve().parents[1] / "importers" / "data"


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
    spec = load_spec(out)
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
    pspec = load_spec(out).for_platform("linux-64")
    assert "Theano-PyMC==1.0.5" in pspec.pypi.packages  # theano==1.0.4 won, then was mapped
    assert not any(p.lower().startswith("theano=") for p in pspec.pypi.packages)
    from envforge.compat import ensure_compatible

    ensure_compatible(load_spec(out))  # lock would not refuse it (no original Theano)
    assert "numpy==1.19.5" in pspec.pypi.packages and "torch==1.4.0" in pspec.pypi.packages
    assert pspec.python.version == host_python("3.7")  # environment.yml's python=3.7 comes first
    assert "cudatoolkit" not in out.read_text() and "m2w64-toolchain: a native library" \
        in out.read_text()


def test_no_git_installed_is_no_history(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    """A machine without git (Windows, a project downloaded as a zip): nothing to date the
    project by, not a failure."""
    (tmp_path / "bin").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    out = tmp_path / "env.toml"
    assert main(["init", str(DATA / "condaenv"), "-o", str(out), "--offline"]) == 0, \
        capsys.readouterr().err
    assert "numpy==1.19.5" in load_spec(out).for_platform("linux-64").pypi.packages


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
    pspec = load_spec(out).for_platform("linux-64")
    assert str(pspec.pypi.as_of) == "2019-02-26"  # numpy 1.16.2's upload day
    assert pspec.python.version == host_python("3.7")
    text = out.read_text()
    assert '"numpy==1.16.2",  # Pipfile.lock:15' in text
    # GitHub is unreachable from here: the git dependency stays in the spec, commented out
    assert '    # "lasagne @ git+https://github.com/Lasagne/Lasagne.git@a61b76f' in text
    assert "left out: it does not resolve:" in text


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
    packages = load_spec(out).for_platform("linux-64").pypi.packages
    assert packages == (f"envforge-tinypkg-fixture @ git+{src.as_uri()}@{rev}", "six")


@pytest.mark.network
def test_a_day_that_does_not_resolve_is_left_commented_with_the_reason(tmp_path: Path) -> None:
    root = tmp_path / "newer"
    root.mkdir()
    (root / "requirements.txt").write_text("six>=1.16\n")  # six 1.16.0: 2021-05-05
    stamp = "2019-08-15T12:00:00+00:00"
    env = {**os.environ, "GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp}
    for args in (["init", "-q"], ["add", "."],
                 ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init"]):
        subprocess.run(["git", "-C", str(root), *args], check=True, env=env)
    out = tmp_path / "newer.toml"
    assert main(["init", str(root), "-o", str(out)]) == 0
    text = out.read_text()
    assert "# as_of = 2019-08-15" in text and "\nas_of" not in text
    assert "# left out: it does not resolve: six>=1.16 cannot be installed" in text
    assert load_spec(out).for_platform("linux-64").pypi.as_of is None


@pytest.mark.network
@pytest.mark.slow
def test_deepsurv_init_locks_in_its_era_and_applies(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENVFORGE_HOME", str(tmp_path / "envforge-home"))
    root = repo_copy(tmp_path, "deepsurv", commit_day="2019-08-15")
    (tmp_path / "specs").mkdir()
    out = tmp_path / "specs" / "deepsurv.toml"
    assert main(["init", str(root), "-o", str(out)]) == 0
    pspec = load_spec(out).for_platform("linux-64")
    assert str(pspec.pypi.as_of) == "2019-08-15" and pspec.python.version == host_python("3.7")
    assert main(["lock", str(out)]) == 0
    lock = load_lock(tmp_path / "locks" / "deepsurv.lock")
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
