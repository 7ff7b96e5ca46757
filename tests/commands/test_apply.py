"""apply, for real: Python 3.7, PyPI and Debian packages, Theano compiling in the result.

These run the CLI in-process against the committed spec and lock, with envforge's folders,
the home folder and the prefix in temporary places. The kill tests run apply in a child
process and SIGKILL it while a given step is under way.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from envforge.app.locking import lock_spec
from envforge.cli import main
from envforge.lockfile import write_lock
from envforge.spec import load_spec
from tests.testing.homes import enter_home, home_sharing
from tests.testing.packs import REGISTRY

REPO = Path(__file__).resolve().parents[2]
SPEC = REPO / "specs" / "theano-cpu.toml"

pytestmark = [pytest.mark.slow, pytest.mark.network]


@pytest.fixture(scope="module")
def envforge_home(tmp_path_factory: pytest.TempPathFactory, shared_cache: Path) -> Path:
    """The run's one cache: packages download once, each test gets its own prefix."""
    return home_sharing(tmp_path_factory.mktemp("envforge-home"), shared_cache)


@pytest.fixture
def host(envforge_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A home folder of its own; the real pyenv stays findable."""
    yield enter_home(tmp_path, envforge_home, monkeypatch)


def snapshot(root: Path) -> dict[str, str]:
    """Every path under root with its content hash (or link target): 'no trace' made checkable."""
    found: dict[str, str] = {}
    if not root.exists():
        return found
    for path in sorted(root.rglob("*")):
        rel = str(path.relative_to(root))
        if path.is_symlink():
            found[rel] = "link:" + str(path.readlink())
        elif path.is_file():
            found[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
        else:
            found[rel] = "dir"
    return found


def run_in_env(prefix: Path, code: str) -> str:
    env_file = json.loads((prefix / "envforge-env.json").read_text())
    env = dict(os.environ)
    for edit in env_file:
        if edit["op"] == "set":
            env[edit["name"]] = edit["value"]
        else:
            env[edit["name"]] = edit["value"] + os.pathsep + env.get(edit["name"], "")
    done = subprocess.run([str(prefix / "bin" / "python"), "-c", code], env=env,
                          capture_output=True, text=True, check=True, timeout=600)
    return done.stdout


def test_plan_apply_noop_rollback(host: Path, tmp_path: Path,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    prefix = tmp_path / "envs" / "cpu"
    before_home = snapshot(host)

    assert main(["apply", str(SPEC), "--dry-run", "--prefix", str(prefix)]) == 3
    assert not prefix.exists() and not prefix.parent.exists()

    capsys.readouterr()
    assert main(["apply", str(SPEC), "--yes", "--prefix", str(prefix)]) == 0
    assert capsys.readouterr().err.splitlines()[-1] == \
        f"next: envforge verify {SPEC} --prefix {prefix}"
    out = run_in_env(prefix, (
        "import numpy, theano, theano.tensor as T\n"
        "x = T.dmatrix('x')\n"
        "f = theano.function([x], T.dot(x, x.T).sum())\n"
        "print(theano.__version__, numpy.__version__, theano.config.device,"
        " f(numpy.ones((3, 4))))\n"))
    assert out.split() == ["1.0.5", "1.19.5", "cpu", "36.0"]
    rc = (prefix / "etc" / "theanorc").read_text()
    assert "[blas]" in rc and f"-L{prefix}/deb/usr/lib/x86_64-linux-gnu/openblas-pthread" in rc

    capsys.readouterr()
    assert main(["apply", str(SPEC), "--yes", "--prefix", str(prefix), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["changed"] is False

    assert main(["rollback", str(SPEC), "--prefix", str(prefix)]) == 0
    assert not prefix.parent.exists()
    assert snapshot(host) == before_home


def test_home_theanorc_is_restored_byte_for_byte(host: Path, tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "specs").mkdir(parents=True)
    spec_path = project / "specs" / "cpu-home.toml"
    spec_path.write_text(SPEC.read_text().replace('theanorc = "env"', 'theanorc = "home"')
                         .replace('name = "theano-cpu"', 'name = "cpu-home"'))
    spec = load_spec(spec_path, REGISTRY)
    write_lock(lock_spec(spec, REGISTRY, platforms=["linux-64"]),
               project / "locks" / "cpu-home.lock")
    mine = b"[global]\n# my own settings, with odd bytes \xe2\x82\xac\r\nfloatX = float32\n"
    (host / ".theanorc").write_bytes(mine)
    (host / ".theanorc").chmod(0o600)
    prefix = tmp_path / "env"

    assert main(["apply", str(spec_path), "--yes", "--prefix", str(prefix)]) == 0
    written = (host / ".theanorc").read_text()
    assert "device = cpu" in written and "floatX = float64" in written

    assert main(["rollback", str(spec_path), "--prefix", str(prefix)]) == 0
    assert (host / ".theanorc").read_bytes() == mine
    assert (host / ".theanorc").stat().st_mode & 0o777 == 0o600
    assert not prefix.exists()


def _journal_steps(state: Path) -> list[str]:
    journal = next(state.glob("*/journal.jsonl"), None)
    if journal is None:
        return []
    steps = []
    for line in journal.read_text().splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if entry.get("op") == "step-begin":
            steps.append(entry["step"])
    return steps


@pytest.mark.parametrize("step", ["prefix", "debian-packages", "environment", "pypi-packages",
                                  "theanorc"])
def test_killed_apply_converges_and_rolls_back(step: str, host: Path, envforge_home: Path,
                                               tmp_path: Path) -> None:
    prefix = tmp_path / "envs" / "cpu"
    state = envforge_home / "state"
    before_home = snapshot(host)
    cmd = [sys.executable, "-m", "envforge", "apply", str(SPEC), "--yes", "--prefix",
           str(prefix)]
    child = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True)
    deadline = time.monotonic() + 300
    while step not in _journal_steps(state) and child.poll() is None:
        assert time.monotonic() < deadline, f"apply never reached {step}"
        time.sleep(0.005)
    os.killpg(child.pid, signal.SIGKILL)
    child.wait()

    assert main(["apply", str(SPEC), "--yes", "--prefix", str(prefix)]) == 0
    assert main(["apply", str(SPEC), "--dry-run", "--prefix", str(prefix)]) == 0
    assert run_in_env(prefix, "import theano; print(theano.__version__)").strip() == "1.0.5"

    assert main(["rollback", str(SPEC), "--prefix", str(prefix)]) == 0
    assert not prefix.parent.exists()
    assert snapshot(host) == before_home
    shutil.rmtree(state, ignore_errors=True)


def test_run_and_status(host: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prefix = tmp_path / "env"
    assert main(["apply", str(SPEC), "--yes", "--prefix", str(prefix), "-q"]) == 0
    code = ("import os, sys, theano; "
            "sys.exit(0 if theano.config.base_compiledir.startswith(sys.prefix) "
            "and os.environ['THEANORC'].endswith('etc/theanorc') else 3)")
    assert main(["run", str(SPEC), "--prefix", str(prefix), "--", "python", "-c", code]) == 0
    assert main(["run", str(SPEC), "--prefix", str(prefix), "--", "python", "-c",
                 "raise SystemExit(7)"]) == 7
    capsys.readouterr()
    assert main(["status", "--json"]) == 0
    applied = json.loads(capsys.readouterr().out)["environments"]
    assert [(e["prefix"], e["complete"]) for e in applied] == [(str(prefix), True)]
    assert main(["rollback", str(SPEC), "--prefix", str(prefix), "-q"]) == 0
    capsys.readouterr()
    assert main(["status", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["environments"] == []


def test_a_second_apply_of_a_lock_takes_its_passed_check_from_the_cache(
        host: Path, envforge_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """apply remembers that the lock passed its check once it has performed
    (host/lockmemo.py); the next apply of the same spec and lock, into another prefix, does
    not judge it again, and one whose lock was edited since is judged, and refused."""
    (tmp_path / "project" / "specs").mkdir(parents=True)
    (tmp_path / "project" / "locks").mkdir()
    spec = tmp_path / "project" / "specs" / SPEC.name
    shutil.copy(SPEC, spec)
    lock = tmp_path / "project" / "locks" / "theano-cpu.lock"
    shutil.copy(REPO / "locks" / "theano-cpu.lock", lock)
    checked: list[Path] = []
    from envforge.app import project as project_module

    real = project_module.check_lock

    def counting(*args: object, **kwargs: object) -> None:
        checked.append(Path(str(args[2])))
        real(*args, **kwargs)  # type: ignore[arg-type]
    monkeypatch.setattr(project_module, "check_lock", counting)

    words = ["apply", str(spec), "--yes", "--quiet", "--prefix"]
    assert main([*words, str(tmp_path / "first")]) == 0
    assert checked == [lock]
    assert list((envforge_home / "cache" / "lock-checked").glob("*.txt"))
    assert main([*words, str(tmp_path / "second")]) == 0
    assert checked == [lock]  # answered from the record
    numpy = "numpy-1.19.5-cp37-cp37m-manylinux2010_x86_64.whl"
    text = lock.read_text(encoding="utf-8")
    assert numpy in text
    lock.write_text(text.replace(numpy, numpy.replace("cp37-cp37m", "cp311-cp311"), 1),
                    encoding="utf-8")
    assert main([*words, str(tmp_path / "third")]) == 2  # edited since: judged and refused
    assert checked == [lock, lock] and not (tmp_path / "third").exists()
