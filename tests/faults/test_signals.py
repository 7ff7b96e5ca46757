"""SIGINT and SIGTERM at every step, and in the middle of the PyPI install: ``apply`` again
completes, the environment imports its packages with every file its wheels' RECORDs list,
and ``rollback`` leaves the home folder and the prefix's parent exactly as they were.

Unlike ``kill -9`` (test_kill.py), SIGINT unwinds envforge (exit 130) and reaches the tools
it runs; an install cut after a wheel's ``.dist-info`` was written but before its RECORD
(installer writes that last) used to count as installed, so the resumed apply skipped it.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from envforge.cli import main
from tests.faults.conftest import World, count
from tests.faults.harness import faulty, journal_lines, snapshot

pytestmark = [pytest.mark.slow, pytest.mark.network]

SIGNALS = ["SIGINT", "SIGTERM"]
STEPS = ["prefix", "debian-packages", "environment", "pypi-packages", "theanorc", "activation"]

# Every dist-info has its RECORD and every file a RECORD names is there; then the imports.
COMPLETE = """\
import csv, glob, os, sys
site = [p for p in sys.path if p.endswith("site-packages")][0]
for info in glob.glob(os.path.join(site, "*.dist-info")):
    record = os.path.join(info, "RECORD")
    assert os.path.isfile(record), info + " has no RECORD"
    for row in csv.reader(open(record)):
        assert not row or os.path.lexists(os.path.join(site, row[0])), row[0] + " is missing"
{imports}
print("complete")
"""


def _exit_of(sig: str) -> int:
    return 130 if sig == "SIGINT" else -signal.SIGTERM


def _resume_and_check(world: World, spec: str, prefix: Path, imports: str, what: str) -> None:
    assert main(["apply", spec, "--yes", "--prefix", str(prefix), "-q"]) == 0, what
    assert main(["plan", spec, "--prefix", str(prefix), "-q"]) == 0, f"{what}: pending"
    done = subprocess.run([str(prefix / "bin" / "python"), "-c",
                           COMPLETE.format(imports=imports)],
                          capture_output=True, text=True, check=False)
    assert done.stdout.strip() == "complete", f"{what}: {done.stderr.strip()[-400:]}"


def _signalled(world: World, spec: str, prefix: Path, sig: str, at: int,
               where: str = "journal") -> str:
    child = faulty(["apply", spec, "--yes", "--prefix", str(prefix)], env=world.env, at=at,
                   action=sig, where=where)
    _, err = child.communicate(timeout=300)
    assert child.returncode == _exit_of(sig), f"{sig} at {where} {at}: {err[-400:]}"
    return err


@pytest.mark.parametrize("sig", SIGNALS)
def test_a_signal_at_each_step_then_apply_again_gives_a_working_environment(
        sig: str, world: World, tmp_path: Path) -> None:
    prefix = tmp_path / "envs" / "p"
    spec = str(world.spec("a"))
    assert main(["apply", spec, "--yes", "--prefix", str(prefix), "-q"]) == 0
    lines = journal_lines(world.state)
    assert main(["rollback", spec, "--prefix", str(prefix), "-q"]) == 0
    before = snapshot(world.home, prefix.parent)
    begins = {str(line["step"]): n for n, line in enumerate(lines, start=1)
              if line["op"] == "step-begin"}
    assert sorted(begins) == sorted(STEPS)
    for step in STEPS:  # right after the step began: its change is about to be made
        _signalled(world, spec, prefix, sig, begins[step])
        assert str(journal_lines(world.state)[-1]["step"]) == step
        _resume_and_check(world, spec, prefix, "import six", f"{sig} in {step}")
        assert main(["rollback", spec, "--prefix", str(prefix), "-q"]) == 0
        assert snapshot(world.home, prefix.parent) == before, f"{sig} in {step}: not restored"
        count(f"{sig} at each step, re-apply, rollback")


@pytest.mark.parametrize("sig", SIGNALS)
@pytest.mark.parametrize(("where", "at"), [("/", 1), ("/", 40), (".dist-info/", 1),
                                           (".dist-info/", 3)])
def test_a_signal_during_the_pypi_install_then_apply_again_repairs_it(
        sig: str, where: str, at: int, world: World, tmp_path: Path) -> None:
    prefix = tmp_path / "envs" / "p"
    spec = str(world.spec("a"))
    before = snapshot(world.home, prefix.parent)
    _signalled(world, spec, prefix, sig, at, where)
    steps = [line for line in journal_lines(world.state) if line["step"] == "pypi-packages"]
    assert [line["op"] for line in steps] == ["step-begin"], "cut short, not marked done"
    _resume_and_check(world, spec, prefix, "import six", f"{sig} at file {at} of {where}")
    assert main(["rollback", spec, "--prefix", str(prefix), "-q"]) == 0
    assert snapshot(world.home, prefix.parent) == before
    count(f"{sig} during the PyPI install, re-apply, rollback")


def test_sigint_in_numpys_install_then_apply_again_imports_theano_and_numpy(
        world: World, tmp_path: Path) -> None:
    """The issue's case, on the shipped CPU spec: NumPy's wheel holds its OpenBLAS
    (``numpy.libs/``) after its ``.dist-info``; cut there, the resumed apply skipped NumPy
    and ``import numpy`` failed."""
    repository = Path(__file__).resolve().parents[2]
    shutil.copy(repository / "specs" / "theano-cpu.toml", world.project / "specs")
    shutil.copy(repository / "locks" / "theano-cpu.lock", world.project / "locks")
    spec = str(world.project / "specs" / "theano-cpu.toml")
    prefix = tmp_path / "envs" / "cpu"
    _signalled(world, spec, prefix, "SIGINT", 1, "numpy-1.19.5.dist-info/")
    _resume_and_check(world, spec, prefix, "import numpy, scipy, theano",
                      "SIGINT in numpy's install")
    count("SIGINT during the PyPI install of theano-cpu, re-apply")
