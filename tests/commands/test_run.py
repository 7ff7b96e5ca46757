"""envforge run: signals reach the child once, envforge waits and exits with its status;
clear errors for an unapplied spec or a missing command; ``--`` in the help."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from envforge.cli import main
from envforge.host.proc import exit_status, terminal_sends_sigint
from tests.testing.specs import venv_spec_text

SPEC = venv_spec_text("runner", 'packages = ["pytest==7.4.4"]\n')

SLOW_TEST = """\
import pathlib, time

def test_waits():
    pathlib.Path({marker!r}).write_text("started")
    time.sleep(120)
"""


def test_exit_status_follows_the_shell() -> None:
    assert exit_status(0) == 0 and exit_status(7) == 7
    assert exit_status(-signal.SIGTERM) == 128 + signal.SIGTERM


def test_no_terminal_means_signals_are_forwarded(tmp_path: Path) -> None:
    with (tmp_path / "f").open("w") as handle:
        assert not terminal_sends_sigint(handle.fileno())


def test_help_shows_the_double_dash(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    out = capsys.readouterr().out
    assert "envforge run SPEC [--prefix P] [--locks-dir D] -- COMMAND [ARGS...]" in out
    assert "`--`" in out


@pytest.fixture(scope="module")
def applied(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, str]]:
    """The spec locked and applied once: (spec, prefix, environment for envforge)."""
    root = tmp_path_factory.mktemp("run")
    (root / "specs").mkdir()
    spec = root / "specs" / "runner.toml"
    spec.write_text(SPEC)
    env = {**os.environ, "ENVFORGE_HOME": str(root / "home")}
    prefix = root / "env"
    for args in (["lock", str(spec)], ["apply", str(spec), "--yes", "--prefix", str(prefix)]):
        subprocess.run([sys.executable, "-m", "envforge", *args, "-q"], env=env, check=True,
                       timeout=600)
    return spec, prefix, env


def _envforge_run(applied: tuple[Path, Path, dict[str, str]], *command: str,
                  cwd: Path) -> subprocess.Popen[str]:
    spec, prefix, env = applied
    return subprocess.Popen([sys.executable, "-m", "envforge", "run", str(spec), "--prefix",
                             str(prefix), "--", *command], env=env, cwd=cwd,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def _wait_for(marker: Path, process: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 120
    while not marker.exists():
        assert process.poll() is None, process.communicate()[0]
        assert time.monotonic() < deadline
        time.sleep(0.1)


@pytest.mark.network
@pytest.mark.slow
def test_sigint_to_envforge_lets_pytest_write_its_summary(
        applied: tuple[Path, Path, dict[str, str]], tmp_path: Path) -> None:
    marker = tmp_path / "started"
    (tmp_path / "test_slow.py").write_text(SLOW_TEST.format(marker=str(marker)))
    process = _envforge_run(applied, "python", "-m", "pytest", "test_slow.py",
                            "--junitxml", "junit.xml", "-p", "no:cacheprovider", cwd=tmp_path)
    _wait_for(marker, process)
    started = time.monotonic()
    process.send_signal(signal.SIGINT)  # to envforge only, as a CI runner or `kill -INT` does
    output, _ = process.communicate(timeout=60)
    assert time.monotonic() - started < 30  # pytest stopped at once, not after its sleep
    assert "KeyboardInterrupt" in output
    assert "no tests ran in" in output or "interrupted" in output  # pytest's summary line
    assert (tmp_path / "junit.xml").is_file()
    assert process.returncode == 2  # pytest's own status for an interrupted run
    assert "apply` again resumes" not in output


@pytest.mark.network
@pytest.mark.slow
def test_sigterm_is_forwarded_and_the_childs_status_returned(
        applied: tuple[Path, Path, dict[str, str]], tmp_path: Path) -> None:
    marker = tmp_path / "started"
    code = ("import pathlib, signal, sys, time\n"
            "signal.signal(signal.SIGTERM, lambda *a: sys.exit(5))\n"
            f"pathlib.Path({str(marker)!r}).write_text('x')\n"
            "time.sleep(120)\n")
    process = _envforge_run(applied, "python", "-c", code, cwd=tmp_path)
    _wait_for(marker, process)
    process.send_signal(signal.SIGTERM)
    process.communicate(timeout=60)
    assert process.returncode == 5


@pytest.mark.network
@pytest.mark.slow
def test_unapplied_spec_and_missing_command_are_one_line_errors(
        applied: tuple[Path, Path, dict[str, str]], tmp_path: Path) -> None:
    spec, prefix, env = applied
    for extra, expected in (
            (["--prefix", str(tmp_path / "nowhere"), "--", "python", "-V"],
             "not applied at"),
            (["--prefix", str(prefix), "--", "no-such-command-here"],
             "no-such-command-here: command not found")):
        done = subprocess.run([sys.executable, "-m", "envforge", "run", str(spec), *extra],
                              env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 2
        assert len(done.stderr.strip().splitlines()) == 1 and expected in done.stderr
        assert "Traceback" not in done.stderr


def test_plan_and_run_find_a_lock_in_another_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    import shutil

    monkeypatch.setenv("ENVFORGE_HOME", str(tmp_path / "home"))
    repo = Path(__file__).resolve().parents[2]
    (tmp_path / "specs").mkdir()
    (tmp_path / "elsewhere").mkdir()
    spec = tmp_path / "specs" / "theano-cpu.toml"
    shutil.copy(repo / "specs" / "theano-cpu.toml", spec)
    shutil.copy(repo / "locks" / "theano-cpu.lock", tmp_path / "elsewhere")
    prefix = str(tmp_path / "env")
    assert main(["plan", str(spec), "--prefix", prefix]) == 2  # locks/ beside specs/: none
    assert main(["plan", str(spec), "--prefix", prefix, "--locks-dir",
                 str(tmp_path / "elsewhere")]) == 3  # found: changes pending
    assert main(["run", str(spec), "--prefix", prefix, "--locks-dir",
                 str(tmp_path / "elsewhere"), "--", "true"]) == 2
    assert "not applied at" in capsys.readouterr().err  # the lock was found


@pytest.mark.network
@pytest.mark.slow
def test_pip_is_refused_rather_than_the_hosts_used(
        applied: tuple[Path, Path, dict[str, str]], tmp_path: Path) -> None:
    """The environment has no pip; the host's pip on PATH would install outside it."""
    spec, prefix, env = applied
    assert not (prefix / "bin" / "pip").exists()
    for command in ("pip", "pip3", "pip3.7"):
        done = subprocess.run([sys.executable, "-m", "envforge", "run", str(spec), "--prefix",
                               str(prefix), "--", command, "install", "toml"], env=env,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 2 and f"the environment has no {command}" in done.stderr
    assert not list(prefix.glob("lib/python3.7/site-packages/toml-*.dist-info"))


@pytest.mark.network
def test_a_projects_script_imports_its_own_package_from_its_folder(tmp_path: Path) -> None:
    """tkipf/pygcn (2019-02-25): its README runs ``cd pygcn; python train.py``, whose
    ``from pygcn.utils import load_data`` finds the package only once ``python setup.py
    install`` put it on sys.path (ModuleNotFoundError before): init's spec puts the
    repository on the environment's PYTHONPATH, relative to the spec's folder."""
    repo = tmp_path / "pygcn"
    (repo / "pygcn").mkdir(parents=True)
    (repo / "setup.py").write_text("from setuptools import setup, find_packages\n"
                                   "setup(name='pygcn', install_requires=['six==1.12.0'],\n"
                                   "      packages=find_packages())\n")
    (repo / "pygcn" / "__init__.py").write_text("")
    (repo / "pygcn" / "utils.py").write_text("import six\nLOADED = 'ok'\n")
    (repo / "pygcn" / "train.py").write_text("from pygcn.utils import LOADED\nprint(LOADED)\n")
    spec = tmp_path / "specs" / "pygcn.toml"
    env = {**os.environ, "ENVFORGE_HOME": str(tmp_path / "home")}
    prefix = tmp_path / "env"
    for args in (["init", str(repo), "-o", str(spec), "--offline"], ["lock", str(spec)],
                 ["apply", str(spec), "--yes", "--prefix", str(prefix)]):
        subprocess.run([sys.executable, "-m", "envforge", *args, "-q"], env=env, check=True,
                       timeout=600)
    assert 'pythonpath = ["../pygcn"]' in spec.read_text()
    done = subprocess.run([sys.executable, "-m", "envforge", "run", str(spec), "--prefix",
                           str(prefix), "--", "python", "train.py"], env=env,
                          cwd=repo / "pygcn", capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout) == (0, "ok\n"), done.stderr
