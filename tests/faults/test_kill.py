"""kill -9 at every line of the journal: apply again converges, rollback restores exactly.

A first apply runs to the end to learn the journal's lines; then, for each line N, a fresh
apply is SIGKILLed (its whole process group) right after line N reached the disk, and

- ``apply`` again completes, and a plan afterwards has nothing left to do;
- the environment works (its Python imports the locked wheel);
- ``rollback`` leaves the home folder and the prefix's parent exactly as they were.
"""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

import pytest

from envforge.cli import main
from envforge.errors import ExitCode
from tests.faults.conftest import World, count
from tests.faults.harness import faulty, journal_lines, snapshot

pytestmark = [pytest.mark.slow, pytest.mark.network]

STEPS = ["prefix", "debian-packages", "environment", "pypi-packages", "theanorc", "activation"]


_LINES: list[dict[str, object]] = []


def _full_journal(world: World, prefix: Path) -> list[dict[str, object]]:
    """The journal of a whole apply (learnt once: every world starts alike)."""
    if not _LINES:
        assert main(["apply", str(world.spec("a")), "--yes", "--prefix", str(prefix), "-q"]) == 0
        _LINES.extend(journal_lines(world.state))
        assert main(["rollback", str(world.spec("a")), "--prefix", str(prefix), "-q"]) == 0
    return _LINES


@pytest.mark.parametrize("step", STEPS)
def test_kill_at_every_journal_line_of_a_step(step: str, world: World, tmp_path: Path) -> None:
    prefix = tmp_path / "envs" / "p"
    spec = str(world.spec("a"))
    lines = _full_journal(world, prefix)
    milestones = [n for n, line in enumerate(lines, start=1) if line["step"] == step]
    assert milestones, f"the journal has no line of step {step}"
    before = snapshot(world.home, prefix.parent)
    for n in milestones:
        child = faulty(["apply", spec, "--yes", "--prefix", str(prefix)], env=world.env, at=n,
                       action="kill")
        child.communicate(timeout=300)
        assert child.returncode == -signal.SIGKILL, f"line {n}: apply was not killed"
        assert len(journal_lines(world.state)) == n

        assert main(["apply", spec, "--yes", "--prefix", str(prefix), "-q"]) == 0, f"line {n}"
        assert main(["plan", spec, "--prefix", str(prefix), "-q"]) == 0, f"line {n}: pending"
        imported = subprocess.run([str(prefix / "bin" / "python"), "-c",
                                   "import six; print(six.__version__)"],
                                  capture_output=True, text=True, check=False)
        assert imported.stdout.strip() == "1.16.0", f"line {n}: {imported.stderr}"

        assert main(["rollback", spec, "--prefix", str(prefix), "-q"]) == 0, f"line {n}"
        assert snapshot(world.home, prefix.parent) == before, f"line {n}: not restored"
        count("kill -9 at a journal line, re-apply, rollback")


@pytest.mark.parametrize("how", ["spec", "saved plan"])
def test_apply_after_a_kill_past_the_last_line_records_the_environment_complete(
        how: str, world: World, tmp_path: Path) -> None:
    """Killed after its last journal line, before it recorded the environment complete: apply
    again (of the spec, or of a plan saved by ``plan -o``) has nothing left to change, and
    records it complete, so run takes it. (It said "nothing to do" and left it unfinished,
    which run and verify refuse naming `apply`: a loop a failed `apply --sync` also led
    into.)"""
    prefix = tmp_path / "envs" / "p"
    spec = str(world.spec("a"))
    lines = _full_journal(world, prefix)
    child = faulty(["apply", spec, "--yes", "--prefix", str(prefix)], env=world.env,
                   at=len(lines), action="kill")
    child.communicate(timeout=300)
    assert child.returncode == -signal.SIGKILL
    run = ["run", spec, "--prefix", str(prefix), "--", "python", "-c", "import six"]
    assert main(run) == 2
    plan = ["plan", spec, "--prefix", str(prefix), "-q"]
    assert main(plan) == ExitCode.PENDING  # not "nothing to do": apply has the record to write
    if how == "spec":
        assert main(["apply", spec, "--yes", "--prefix", str(prefix), "-q"]) == 0
    else:
        saved = tmp_path / "plan.json"
        assert main([*plan, "-o", str(saved)]) == ExitCode.PENDING
        assert main(["apply", str(saved), "--yes", "-q"]) == 0
    assert main(run) == 0
    assert main(plan) == ExitCode.OK
    assert main(["apply", spec, "--yes", "--prefix", str(prefix), "-q"]) == 0
    assert main(["rollback", spec, "--prefix", str(prefix), "-q"]) == 0


@pytest.mark.parametrize("step", ["prefix", "theanorc"])
def test_rollback_right_after_kill(step: str, world: World, tmp_path: Path) -> None:
    """No re-apply in between: rollback alone undoes a killed apply exactly."""
    prefix = tmp_path / "envs" / "p"
    spec = str(world.spec("a"))
    lines = _full_journal(world, prefix)
    before = snapshot(world.home, prefix.parent)
    for n in [n for n, line in enumerate(lines, start=1) if line["step"] == step]:
        child = faulty(["apply", spec, "--yes", "--prefix", str(prefix)], env=world.env, at=n,
                       action="kill")
        child.communicate(timeout=300)
        assert main(["rollback", spec, "--prefix", str(prefix), "-q"]) == 0, f"line {n}"
        assert snapshot(world.home, prefix.parent) == before, f"line {n}: not restored"
        count("kill -9 at a journal line, rollback")


@pytest.mark.parametrize("step", ["environment", "pypi-packages"])
def test_verify_and_run_on_a_killed_apply_say_what_to_run_in_one_line(
        step: str, world: World, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A half-applied environment (its Python there, its activation not) is an exit 2 with the
    next command, never a traceback (issue 25: FileNotFoundError on envforge-env.json)."""
    prefix = tmp_path / "envs" / "p"
    spec = str(world.spec("a"))
    lines = _full_journal(world, prefix)
    n = max(n for n, line in enumerate(lines, start=1) if line["step"] == step)
    child = faulty(["apply", spec, "--yes", "--prefix", str(prefix)], env=world.env, at=n,
                   action="kill")
    child.communicate(timeout=300)
    assert (prefix / "bin" / "python").exists()
    capsys.readouterr()
    for command in (["verify", spec, "--prefix", str(prefix)],
                    ["run", spec, "--prefix", str(prefix), "--", "python", "-c", "1"]):
        assert main(command) == 2, command
        err = capsys.readouterr().err
        assert err.count("\n") == 1, err
        assert f"incomplete (an apply did not finish): run `envforge apply {spec} --prefix " \
               f"{prefix}` to resume it, or `envforge rollback {spec} --prefix {prefix}`" in err
    assert main(["rollback", spec, "--prefix", str(prefix), "-q"]) == 0
