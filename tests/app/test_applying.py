"""app/applying: apply's use case called directly, without the CLI. ``--artifact`` values are
checked one by one; a saved plan is refused (nothing changed) when its spec, its lock or a
before-state moved since it was made, and applied, then rolled back byte for byte, when not."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

import pytest

from envforge import __version__
from envforge.app.applying import (
    ApplyOptions,
    check_saved,
    is_saved_plan,
    parse_artifacts,
    perform,
    plan_spec,
    save_plan,
)
from envforge.app.environments import roll_back
from envforge.app.locking import lock_spec
from envforge.errors import InputError
from envforge.executor import StalePlanError
from envforge.lockfile import write_lock
from envforge.plan import PLAN_FORMAT, Plan, PlanOptions, SavedPlan, write_saved_plan
from envforge.spec import load_spec
from envforge.ui import UI
from tests.faults.harness import TINY, USER_RC, snapshot
from tests.testing.packs import REGISTRY


def test_artifacts_are_known_roles_given_once_as_files(tmp_path: Path) -> None:
    archive = tmp_path / "cudnn.zip"
    archive.write_bytes(b"PK")
    assert parse_artifacts([f"cudnn={archive}"]) == {"cudnn": archive.resolve()}
    for values, message in (
            (["cudnn"], "--artifact 'cudnn': expected ROLE=PATH"),
            ([f"bios={archive}"], "--artifact bios: unknown role (known: "),
            ([f"cudnn={archive}", f"cudnn={archive}"], "--artifact cudnn: given twice"),
            ([f"cudnn={tmp_path / 'nothing.zip'}"], "--artifact cudnn: no such file")):
        with pytest.raises(InputError) as caught:
            parse_artifacts(values)
        assert str(caught.value).startswith(message), values


def test_a_saved_plan_is_json_a_spec_or_a_fifo_is_not(tmp_path: Path) -> None:
    (tmp_path / "plan.json").write_text('\n  {"format": 1}', encoding="utf-8")
    (tmp_path / "x.toml").write_text('[project]\nname = "x"\n', encoding="utf-8")
    assert is_saved_plan(tmp_path / "plan.json")
    assert not is_saved_plan(tmp_path / "x.toml") and not is_saved_plan(tmp_path / "none")
    if hasattr(os, "mkfifo"):
        os.mkfifo(tmp_path / "fifo")
        assert not is_saved_plan(tmp_path / "fifo")  # not opened: it would block


def test_a_plan_whose_spec_changed_is_refused_before_anything_is_read(tmp_path: Path) -> None:
    spec, lock = tmp_path / "x.toml", tmp_path / "x.lock"
    spec.write_bytes(b"edited since\n")  # bytes: the hashes below are of these bytes, also
    lock.write_bytes(b"whatever\n")  # on Windows, where write_text would write \r\n
    saved = tmp_path / "plan.json"
    write_saved_plan(saved, SavedPlan(
        format=PLAN_FORMAT, envforge=__version__, spec_file=str(spec),
        spec_sha256=hashlib.sha256(b"as planned\n").hexdigest(), lock_file=str(lock),
        lock_sha256=hashlib.sha256(b"whatever\n").hexdigest(),
        options=PlanOptions(prefix=str(tmp_path / "env")),
        plan=Plan(spec=str(spec), platform="linux-64", prefix=str(tmp_path / "env"), steps=())))
    with pytest.raises(StalePlanError) as caught:
        check_saved(saved, UI(quiet=True))
    assert str(caught.value).startswith(f"{saved}: the plan is stale: {spec} changed since "
                                        "the plan was made")
    lock.unlink()
    spec.write_bytes(b"as planned\n")
    with pytest.raises(StalePlanError, match=f"{re.escape(str(lock))} changed since .* now absent"):
        check_saved(saved, UI(quiet=True))


@pytest.mark.slow
@pytest.mark.network
@pytest.mark.posix_only("a Python 3.7 venv and a Debian package: the fault suite's spec")
def test_saved_plan_checked_performed_and_rolled_back(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    home, efhome = tmp_path / "home", tmp_path / "ef"
    home.mkdir()
    efhome.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("ENVFORGE_HOME", str(efhome))
    monkeypatch.setenv("PYENV_ROOT", os.environ.get("PYENV_ROOT", str(Path.home() / ".pyenv")))
    rc = home / ".theanorc"
    rc.write_bytes(USER_RC)
    rc.chmod(0o600)
    (tmp_path / "specs").mkdir()
    spec = tmp_path / "specs" / "a.toml"
    spec.write_text(TINY.format(name="a", floatx="float64", theanorc="home"), encoding="utf-8")
    write_lock(lock_spec(load_spec(spec, REGISTRY), REGISTRY, platforms=["linux-64"]),
               tmp_path / "locks" / "a.lock")
    options, ui, saved = ApplyOptions(prefix=tmp_path / "env"), UI(quiet=True), tmp_path / "p"

    planned = plan_spec(spec, options, ui)
    assert planned.plan.pending and planned.record["spec"] == str(spec.resolve())
    save_plan(saved, planned, spec, options)
    rc.write_bytes(USER_RC + b"mode = FAST_RUN\n")  # the user edits what the plan replaces
    untouched = snapshot(home, efhome / "state")
    with pytest.raises(StalePlanError, match=f"{saved}: the plan is stale: {rc} was sha256:"):
        check_saved(saved, ui)
    assert snapshot(home, efhome / "state") == untouched and not (tmp_path / "env").exists()

    rc.write_bytes(USER_RC)
    again, _ = check_saved(saved, ui)
    assert again.plan.steps == planned.plan.steps
    ran = perform(again)
    assert "theanorc" in ran and (tmp_path / "env" / "bin" / "python").is_file()
    assert not plan_spec(spec, options, ui).plan.pending
    done = roll_back(spec, prefix=tmp_path / "env", force=False)
    assert done.undone and rc.read_bytes() == USER_RC and rc.stat().st_mode & 0o777 == 0o600
    assert roll_back(spec, prefix=tmp_path / "env", force=False).undone is None
