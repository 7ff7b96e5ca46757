"""Two applies on one prefix: the environment is its prefix, whoever's spec it is.

The second apply is refused — with the holder's pid while the first runs, with the owning
spec once it has a record — and neither that apply nor its rollback touches anything of
the first's. Also the issue's exact case: two specs started together on one prefix.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from envforge.cli import main
from tests.faults.conftest import World, count
from tests.faults.harness import USER_RC, faulty, resume, snapshot, wait_stopped

pytestmark = [pytest.mark.slow, pytest.mark.network]


def _copy(world: World, name: str) -> Path:
    """A copy of spec ``a`` that keeps ``[project] name = "a"`` (as a new user would)."""
    shutil.copy(world.spec("a"), world.spec(name))
    shutil.copy(world.project / "locks" / "a.lock", world.project / "locks" / f"{name}.lock")
    return world.spec(name)


def _err(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    return err


def test_a_running_apply_holds_the_prefix(world: World, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    prefix = tmp_path / "envs" / "p"
    spec, copy = str(world.spec("a")), str(_copy(world, "a-copy"))
    holder = faulty(["apply", spec, "--yes", "--prefix", str(prefix)], env=world.env, at=8,
                    action="stop")
    wait_stopped(holder)
    held = snapshot(world.home, prefix.parent, world.state)

    assert main(["apply", spec, "--yes", "--prefix", str(prefix)]) == 1
    assert f"(pid {holder.pid})" in _err(capsys)
    count("second apply while one runs: refused with the holder's pid")
    assert main(["rollback", spec, "--prefix", str(prefix)]) == 1
    assert f"(pid {holder.pid})" in _err(capsys)
    count("rollback while an apply runs: refused with the holder's pid")
    assert main(["apply", copy, "--yes", "--prefix", str(prefix)]) == 2
    assert f"holds the environment applied from {spec}" in _err(capsys)
    assert main(["rollback", copy, "--prefix", str(prefix)]) == 2
    assert f"holds the environment applied from {spec}" in _err(capsys)
    count("another spec's apply and rollback: refused, naming the owner", n=2)
    assert snapshot(world.home, prefix.parent, world.state) == held

    rc, err = resume(holder)
    assert rc == 0, err
    assert main(["rollback", spec, "--prefix", str(prefix), "-q"]) == 0
    assert (world.home / ".theanorc").read_bytes() == USER_RC and not prefix.parent.exists()


def test_a_copied_spec_keeping_the_name_is_refused_at_the_demo_env(
        world: World, capsys: pytest.CaptureFixture[str]) -> None:
    """The default prefix follows ``[project] name``: a copy lands on the same folder."""
    spec, copy = str(world.spec("a")), str(_copy(world, "mine"))
    assert main(["apply", spec, "--yes", "-q"]) == 0
    demo = world.efhome / "data" / "envs" / "a"
    before = snapshot(world.home, demo)
    assert main(["apply", copy, "--yes"]) == 2
    assert _err(capsys) == (
        f"error: {demo} holds the environment applied from {spec}, not {copy}: roll that "
        f"back first (`envforge rollback {spec} --prefix {demo}`), or choose another --prefix")
    assert main(["rollback", copy]) == 2
    _err(capsys)
    assert snapshot(world.home, demo) == before
    count("a copied spec with the same name: apply and rollback refused", n=2)
    assert main(["rollback", spec, "-q"]) == 0 and not demo.exists()


@pytest.mark.parametrize("round_", [1, 2])
def test_two_specs_started_together(round_: int, world: World, tmp_path: Path) -> None:
    """``apply A --prefix P & apply B --prefix P``: one wins, the loser leaves no claim."""
    prefix = tmp_path / "envs" / "p"
    home_before = snapshot(world.home)
    argv = {name: [sys.executable, "-m", "envforge", "apply", str(world.spec(name)), "--yes",
                   "--prefix", str(prefix)] for name in ("a", "b")}
    runs = {name: subprocess.Popen(cmd, env=world.env, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.PIPE, text=True)
            for name, cmd in argv.items()}
    done = {name: (p.wait(timeout=300), p.stderr.read() if p.stderr else "")
            for name, p in runs.items()}
    winners = [name for name, (rc, _) in done.items() if rc == 0]
    assert len(winners) == 1, done
    (winner,) = winners
    loser = "b" if winner == "a" else "a"
    rc, err = done[loser]
    # one error line; before it only download progress, when both started before either
    # held the prefix's lock (the loser fetched into the shared cache, then was refused)
    lines = err.strip().splitlines()
    progress = [line for line in lines[:-1] if not line.startswith("error:")]
    assert rc in (1, 2) and "Traceback" not in err and lines[-1].startswith("error:"), err
    shown = re.compile(r"(downloading|downloaded|building|  \S+: [\d.]+ \w+ of) ")
    assert progress == lines[:-1] and all(shown.match(line) for line in progress), err

    env_before = snapshot(prefix, world.home)
    assert main(["rollback", str(world.spec(loser)), "--prefix", str(prefix), "-q"]) == 2
    assert snapshot(prefix, world.home) == env_before
    count("two specs on one prefix at once: one wins, the loser's rollback touches nothing")
    assert main(["rollback", str(world.spec(winner)), "--prefix", str(prefix), "-q"]) == 0
    assert snapshot(world.home) == home_before and not prefix.parent.exists()


def test_two_specs_applied_together_on_a_fresh_home_then_rolled_back_leave_nothing(
        world: World) -> None:
    """Issue 29 #8: both made ENVFORGE_HOME's data/ at once (one died, FileExistsError), and
    an empty data/envs stayed after both rollbacks."""
    home_before = snapshot(world.home)
    runs = {name: subprocess.Popen([sys.executable, "-m", "envforge", "apply",
                                    str(world.spec(name)), "--yes", "-q"], env=world.env,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            for name in ("a", "env")}
    done = {name: (p.wait(timeout=300), p.stderr.read() if p.stderr else "")
            for name, p in runs.items()}
    assert all(rc == 0 for rc, _ in done.values()), done
    for name in ("a", "env"):
        assert main(["rollback", str(world.spec(name)), "-q"]) == 0
    assert snapshot(world.home) == home_before
    assert not (world.efhome / "data").exists()
    count("two specs applied at once on a fresh home: both apply, both roll back to nothing")
