"""``envforge plan SPEC -o FILE`` then ``envforge apply FILE``: exactly the saved plan is
applied, and a plan made stale by a change on disk (the ~/.theanorc it would overwrite, the
lock, the spec) is refused with exit 2, naming what changed, before anything is written."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any, cast

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


def _write(document: dict[str, Any], step: str, kind: str) -> dict[str, Any]:
    """The one ``kind`` action of ``step`` in a saved plan's JSON, to tamper with."""
    [planned] = [s for s in document["plan"]["steps"] if s["step"] == step]
    [action] = [a for a in planned["actions"] if a["kind"] == kind]
    return cast(dict[str, Any], action)  # the same object: changing it changes the plan


def _digest(path: Path) -> str:
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


def _bashrc(world: World, document: dict[str, Any], tmp_path: Path) -> None:
    bashrc = world.home / ".bashrc"
    _write(document, "theanorc", "write").update(path=str(bashrc), before=_digest(bashrc))


def _block_into_bashrc(world: World, document: dict[str, Any], tmp_path: Path) -> None:
    bashrc = world.home / ".bashrc"
    _write(document, "activation", "block").update(path=str(bashrc), before=_digest(bashrc))


def _outside_prefix(world: World, document: dict[str, Any], tmp_path: Path) -> None:
    _write(document, "theanorc", "write").update(path=f"{tmp_path}/a/../../outside", before=None)


def _relative(world: World, document: dict[str, Any], tmp_path: Path) -> None:
    _write(document, "theanorc", "write").update(path="../relative", before=None)


def _proc(world: World, document: dict[str, Any], tmp_path: Path) -> None:
    _write(document, "theanorc", "write").update(path="/proc/self/envforge-x", before=None)


def _other_bytes(world: World, document: dict[str, Any], tmp_path: Path) -> None:
    action = _write(document, "theanorc", "write")
    action["data"] = base64.b64encode(b"[global]\ndevice = cuda\n").decode()


def _other_spec(world: World, document: dict[str, Any], tmp_path: Path) -> None:
    other = tmp_path / "b-plan.json"
    assert main(["plan", str(world.spec("b")), "--prefix", str(tmp_path / "a"), "-o",
                 str(other), "-q"]) == 3
    document["plan"]["steps"] = json.loads(other.read_text())["plan"]["steps"]
    other.unlink()


HOSTILE = {"bashrc": _bashrc, "block into bashrc": _block_into_bashrc,
           "outside the prefix": _outside_prefix, "relative path": _relative,
           "/proc": _proc, "other bytes": _other_bytes, "another spec's steps": _other_spec}


@pytest.mark.parametrize("tamper", list(HOSTILE))
def test_a_tampered_plan_is_refused_naming_the_first_differing_action_and_nothing_changes(
        world: World, tmp_path: Path, capsys: pytest.CaptureFixture[str], tamper: str) -> None:
    """Issue 29, finding 1: the saved actions are checked against the plan the spec and lock
    make now; whatever a tampered one points at (~/.bashrc with its sha256, a path outside
    the prefix, /proc), nothing anywhere under the test's folder changes."""
    spec, saved = world.spec("a"), tmp_path / "a-plan.json"
    (world.home / ".bashrc").write_bytes(b"# the user's bashrc\n")
    assert main(["plan", str(spec), "--prefix", str(tmp_path / "a"), "-o", str(saved),
                 "-q"]) == 3
    document = json.loads(saved.read_text())
    HOSTILE[tamper](world, document, tmp_path)
    saved.write_text(json.dumps(document))
    untouched = snapshot(tmp_path)
    capsys.readouterr()
    assert main(["apply", str(saved), "--yes"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {saved}: not the plan {spec} and its lock make: step ") \
        and err.count("\n") == 1, err
    assert snapshot(tmp_path) == untouched and not Path("/proc/self/envforge-x").exists()
    count("saved plan: tampered actions refused")


def test_a_plan_with_loose_types_or_deep_nesting_is_refused_naming_the_file(
        world: World, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``options.sync = "yes"`` is not coerced to true; a plan nested 100,000 deep is one
    line, not a RecursionError."""
    spec, saved = world.spec("a"), tmp_path / "a-plan.json"
    assert main(["plan", str(spec), "--prefix", str(tmp_path / "a"), "-o", str(saved),
                 "-q"]) == 3
    document = json.loads(saved.read_text())
    document["options"]["sync"] = "yes"
    saved.write_text(json.dumps(document))
    untouched = snapshot(tmp_path)
    capsys.readouterr()
    assert main(["apply", str(saved), "--yes"]) == 2
    assert f"{saved}: options.sync: Input should be a valid boolean" in capsys.readouterr().err
    saved.write_text('{"format": 1, "plan": ' + "[" * 100_000 + "]" * 100_000 + "}")
    untouched = snapshot(tmp_path)
    assert main(["apply", str(saved), "--yes"]) == 2
    err = capsys.readouterr().err
    assert f"{saved}: not a plan: its JSON nests 100001 deep" in err and err.count("\n") == 1
    assert snapshot(tmp_path) == untouched
    count("saved plan: loose types, deep nesting refused")


@pytest.mark.parametrize("special", ["fifo", "/dev/zero", "folder"])
def test_a_fifo_device_or_folder_given_as_the_plan_is_refused_without_reading_it(
        world: World, tmp_path: Path, special: str) -> None:
    given = {"fifo": tmp_path / "plan.json", "folder": tmp_path}.get(special, Path(special))
    if special == "fifo":
        os.mkfifo(given)
    says = {"folder": "a folder", "fifo": "a FIFO", "/dev/zero": "a character device"}[special]
    untouched = snapshot(tmp_path)
    done = subprocess.run([sys.executable, "-m", "envforge", "apply", str(given), "--yes"],
                          env=world.env, cwd=world.project, capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 2, done.stderr
    assert done.stderr == (f"error: {given}: {says}, not a regular file: a spec or saved plan "
                           "is one\n")
    assert snapshot(tmp_path) == untouched
    count("saved plan: FIFO or device refused")


OUTPUTS = ["the spec", "the lock", "a folder", "a file in a missing folder", "a fifo"]


@pytest.mark.parametrize("where", OUTPUTS)
def test_plan_o_onto_its_own_input_a_folder_a_fifo_or_into_a_missing_folder_is_refused(
        world: World, tmp_path: Path, capsys: pytest.CaptureFixture[str], where: str) -> None:
    """Issue 29, findings 4 and 9: ``plan specs/a.toml -o specs/a.toml`` replaced the spec
    with plan JSON; a folder or a missing folder was a traceback. Now: exit 2, one line,
    nothing written."""
    (tmp_path / "out").mkdir()
    os.mkfifo(tmp_path / "fifo")
    output = {"the spec": "specs/a.toml", "the lock": "locks/../locks/a.lock",
              "a folder": str(tmp_path / "out"),
              "a file in a missing folder": str(tmp_path / "missing" / "p.json"),
              "a fifo": str(tmp_path / "fifo")}[where]
    untouched = snapshot(tmp_path)
    capsys.readouterr()
    assert main(["plan", str(world.spec("a")), "--prefix", str(tmp_path / "a"), "-o", output,
                 "-q"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: -o {output}: ") and err.count("\n") == 1, err
    assert snapshot(tmp_path) == untouched
    count("plan -o: own input, folder, FIFO, missing folder refused")


@pytest.mark.parametrize("where", ["an action", "an artifact"])
def test_a_plan_naming_a_fifo_is_refused_without_reading_it(world: World, tmp_path: Path,
                                                          where: str) -> None:
    """Checking a before-state or an artifact hashes the file: a FIFO an edited plan names
    would block."""
    spec, saved, fifo = world.spec("a"), tmp_path / "a-plan.json", tmp_path / "fifo"
    assert main(["plan", str(spec), "--prefix", str(tmp_path / "a"), "-o", str(saved),
                 "-q"]) == 3
    os.mkfifo(fifo)
    document = json.loads(saved.read_text())
    if where == "an action":
        _write(document, "theanorc", "write").update(path=str(fifo), before="sha256:" + "0" * 64)
        says = f"not a plan envforge makes: step theanorc: {fifo} is a special file; nothing " \
            "was changed"
    else:
        document["options"]["artifacts"] = {"cudnn": str(fifo)}
        says = f"options.artifacts: --artifact cudnn: no such file {fifo}"
    saved.write_text(json.dumps(document))
    untouched = snapshot(tmp_path)
    done = subprocess.run([sys.executable, "-m", "envforge", "apply", str(saved), "--yes"],
                          env=world.env, cwd=world.project, capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 2, done.stderr
    assert done.stderr == f"error: {saved}: {says}\n"
    assert snapshot(tmp_path) == untouched
    count("saved plan: a FIFO it names refused")
