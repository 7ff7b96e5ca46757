"""``envforge plan SPEC -o FILE`` then ``envforge apply FILE``: exactly the saved plan is
applied, and a plan made stale by a change on disk (the ~/.theanorc it would overwrite, the
lock) is refused with exit 2, naming what changed, before anything is written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envforge.cli import main
from tests.faults.conftest import World, count
from tests.faults.harness import USER_RC, snapshot

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


def test_a_plan_whose_lock_changed_is_refused(world: World, tmp_path: Path,
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
    count("saved plan: changed lock refused")


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
