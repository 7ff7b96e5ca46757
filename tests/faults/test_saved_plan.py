"""``envforge plan SPEC -o FILE`` then ``envforge apply FILE``: exactly the saved plan is
applied, and a plan made stale by a change on disk (the ~/.theanorc it would overwrite, the
lock, the spec) is refused with exit 2, naming what changed, before anything is written."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from envforge.cli import main
from tests.faults.conftest import World, count
from tests.faults.harness import USER_RC, faulty, journal_lines, snapshot

pytestmark = [pytest.mark.slow, pytest.mark.network]


def test_a_saved_plan_round_trips_and_a_stale_one_is_refused(
        world: World, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec, prefix, saved = world.spec("a"), tmp_path / "a", tmp_path / "a-plan.json"
    rc = world.home / ".theanorc"
    assert main(["plan", str(spec), "--prefix", str(prefix), "-o", str(saved), "-q"]) == 3
    document = json.loads(saved.read_text())
    assert document["format"] == 1 and document["options"]["prefix"] == str(prefix)
    assert [s["step"] for s in document["plan"]["steps"]][:3] == [
        "prefix", "debian-packages", "environment"]

    rc.write_bytes(USER_RC + b"mode = FAST_RUN\n")  # the user edits what the plan replaces
    untouched = snapshot(world.home, world.state)
    capsys.readouterr()
    assert main(["apply", str(saved), "--yes"]) == 2
    err = capsys.readouterr().err
    assert f"{saved}: the plan is stale: {rc} was sha256:" in err and err.count("\n") == 1
    assert snapshot(world.home, world.state) == untouched and not prefix.exists()
    count("saved plan: stale ~/.theanorc refused")

    rc.write_bytes(USER_RC)  # as it was when planned
    assert main(["apply", str(saved), "--yes", "-q"]) == 0
    assert (prefix / "bin" / "python").is_file() and rc.read_bytes() != USER_RC
    assert main(["plan", str(spec), "--prefix", str(prefix), "-q"]) == 0  # nothing left
    assert main(["apply", str(saved), "--yes"]) == 2  # its before-states are gone now
    assert main(["rollback", str(spec), "--prefix", str(prefix), "-q"]) == 0
    assert rc.read_bytes() == USER_RC and rc.stat().st_mode & 0o777 == 0o600
    count("saved plan: round trip and rollback")


def test_a_plan_whose_lock_or_spec_changed_is_refused(world: World, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    spec, prefix, saved = world.spec("a"), tmp_path / "a", tmp_path / "a-plan.json"
    assert main(["plan", str(spec), "--prefix", str(prefix), "-o", str(saved), "-q"]) == 3
    lock = world.project / "locks" / "a.lock"
    lock.write_text(lock.read_text() + "\n# edited after the plan\n")
    capsys.readouterr()
    assert main(["apply", str(saved), "--yes"]) == 2
    err = capsys.readouterr().err
    assert f"{saved}: the plan is stale: {lock} changed since the plan was made" in err
    assert not prefix.exists()
    assert main(["apply", str(saved), "--prefix", str(prefix)]) == 2  # options are the plan's
    lock.write_text(lock.read_text().removesuffix("\n# edited after the plan\n"))
    spec.write_text(spec.read_text() + "# edited after the plan\n")
    assert main(["apply", str(saved), "--yes"]) == 2
    assert f"{saved}: the plan is stale: {spec} changed since the plan was made" in \
        capsys.readouterr().err
    count("saved plan: changed lock, changed spec refused")


def test_a_damaged_plan_file_is_one_line_naming_it(world: World, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    spec, saved = world.spec("a"), tmp_path / "a-plan.json"
    assert main(["plan", str(spec), "--prefix", str(tmp_path / "a"), "-o", str(saved),
                 "-q"]) == 3
    document = json.loads(saved.read_text())
    document["plan"]["steps"][0]["bogus"] = 1
    saved.write_text(json.dumps(document))
    capsys.readouterr()
    assert main(["apply", str(saved), "--yes"]) == 2
    assert f"{saved}: plan.steps.0.bogus: Extra inputs are not permitted" in \
        capsys.readouterr().err
    saved.write_text("{\n  \"format\": 1,\n  oops\n}\n")
    assert main(["apply", str(saved), "--yes"]) == 2
    assert f"{saved}:3: not a plan (JSON)" in capsys.readouterr().err
    count("saved plan: damaged file refused")


def test_a_killed_apply_of_a_saved_plan_resumes_while_it_holds_and_is_refused_after(
        world: World, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """kill -9 right after ``apply FILE``'s first journal line: nothing changed yet, so the
    same plan still holds and applying it again completes. Killed at the theanorc step (the
    prefix made, packages in): that plan no longer describes the host and is refused;
    ``apply SPEC`` resumes. Rollback restores the home folder exactly, both times."""
    spec, prefix, saved = world.spec("a"), tmp_path / "envs" / "a", tmp_path / "a-plan.json"
    before = snapshot(world.home, prefix.parent)
    kill_at = [1]
    for round_ in ("resumed", "refused"):
        assert main(["plan", str(spec), "--prefix", str(prefix), "-o", str(saved), "-q"]) == 3
        child = faulty(["apply", str(saved), "--yes"], env=world.env, at=kill_at[-1],
                       action="kill")
        child.communicate(timeout=300)
        assert child.returncode == -signal.SIGKILL, round_
        capsys.readouterr()
        if round_ == "resumed":
            assert main(["apply", str(saved), "--yes", "-q"]) == 0
            lines = journal_lines(world.state)
            kill_at.append(next(n for n, line in enumerate(lines, start=1)
                                if line["step"] == "theanorc"))
        else:
            assert main(["apply", str(saved), "--yes"]) == 2
            assert f"{saved}: the plan is stale: " in capsys.readouterr().err
            assert main(["apply", str(spec), "--yes", "--prefix", str(prefix), "-q"]) == 0
        assert main(["plan", str(spec), "--prefix", str(prefix), "-q"]) == 0, round_
        assert main(["rollback", str(spec), "--prefix", str(prefix), "-q"]) == 0, round_
        assert snapshot(world.home, prefix.parent) == before, round_
        count(f"saved plan: killed, {round_}, rolled back exactly")
