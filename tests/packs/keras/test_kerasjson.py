"""The keras.json step: in the environment by default (KERAS_HOME), or in the user's home,
where a file already there is backed up by the journal and given back byte for byte."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from envforge.cli import main
from envforge.journal import rollback
from envforge.lockfile import load_lock
from envforge.packs.keras import KERAS
from envforge.packs.keras.expect import keras_expect, keras_json_path
from envforge.packs.keras.kerasjson import KerasJsonStep
from envforge.plan import build_steps
from envforge.spec import parse_spec
from envforge.steps.activation import edits_for
from tests.faults.harness import snapshot
from tests.testing.contexts import apply_step, make_ctx
from tests.testing.packs import REGISTRY

REPO = Path(__file__).resolve().parents[3]
SPEC = (REPO / "specs" / "tf1-keras-cpu.toml").read_text(encoding="utf-8")
LOCK = load_lock(REPO / "locks" / "tf1-keras-cpu.lock", REGISTRY).platforms["linux-64"]


def _ctx(tmp_path: Path, where: str = "env"):  # type: ignore[no-untyped-def]
    text = SPEC.replace('keras_json = "env"', f'keras_json = "{where}"')
    pspec = parse_spec(text, source="t.toml", registry=REGISTRY).for_platform("linux-64")
    keras = keras_expect(LOCK.expect)
    assert keras is not None
    packs = {**LOCK.expect.packs, "keras": keras.model_copy(
        update={"keras_json": keras_json_path(pspec)})}
    lock = LOCK.model_copy(update={"expect": LOCK.expect.model_copy(update={"packs": packs})})
    return dataclasses.replace(make_ctx(tmp_path, "linux-64", None), lock=lock)


def test_in_the_environment_with_keras_home(tmp_path: Path) -> None:
    ctx = _ctx(tmp_path)
    names = [s.name for s in build_steps(ctx)]
    assert names.index("keras-json") == names.index("activation") - 1
    step = KerasJsonStep()
    [change] = step.describe(ctx)
    target = tmp_path / "prefix" / "keras" / "keras.json"
    assert (change.action, change.target) == ("create", str(target))
    apply_step(step, ctx)
    assert json.loads(target.read_text()) == {"floatx": "float32", "epsilon": 1e-07,
                                              "backend": "tensorflow",
                                              "image_data_format": "channels_last"}
    assert step.describe(ctx) == ()
    assert not (tmp_path / "home" / ".keras").exists()
    edits = {e.name: e.value for e in edits_for(ctx) if e.name.startswith("KERAS")}
    assert edits == {"KERAS_HOME": str(target.parent), "KERAS_BACKEND": "tensorflow"}


def test_in_the_home_a_users_file_is_backed_up_and_restored(tmp_path: Path) -> None:
    ctx = _ctx(tmp_path, "home")
    user = tmp_path / "home" / ".keras" / "keras.json"
    user.parent.mkdir(parents=True)
    original = b'{"backend": "theano", "floatx": "float64"}\r\n\xff'
    user.write_bytes(original)
    [change] = KerasJsonStep().describe(ctx)
    assert change.action == "replace" and '-{"backend": "theano"' in change.detail
    journal = apply_step(KerasJsonStep(), ctx)
    assert json.loads(user.read_text())["backend"] == "tensorflow"
    assert "KERAS_HOME" not in {e.name for e in KERAS.env_edits(ctx)}
    rollback(journal)
    assert user.read_bytes() == original


def test_the_no_op_stamp_watches_the_file_the_step_writes(tmp_path: Path) -> None:
    """Every step a Keras spec plans either is a core step the stamp knows or names the files
    it reads, so a no-op apply of it can take the fast path."""
    from envforge.host.noopstamp import ELIGIBLE_STEPS
    from envforge.steps.base import WatchesFiles

    ctx = _ctx(tmp_path)
    steps = build_steps(ctx)
    assert all(s.name in ELIGIBLE_STEPS or isinstance(s, WatchesFiles) for s in steps)
    step = KerasJsonStep()
    [change] = step.describe(ctx)
    assert step.watched(ctx) == (Path(change.target),)


HOME_SPEC = """\
[project]
name = "kj"
platforms = ["linux-64"]

[python]
version = "3.7"

[environment]
kind = "venv"

[keras]
backend = "theano"
keras_json = "home"

[theano]
device = "cpu"
"""


@pytest.mark.posix_only("applies a linux-64 spec: the host's platform")
def test_a_file_where_the_home_keras_folder_must_be_is_one_line_and_nothing_changes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    home, efhome = tmp_path / "home", tmp_path / "envforge-home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("ENVFORGE_HOME", str(efhome))
    spec = tmp_path / "kj.toml"
    spec.write_text(HOME_SPEC)
    assert main(["lock", str(spec), "--locks-dir", str(tmp_path / "locks")]) == 0
    (home / ".keras").write_text("the user's own file\n")
    capsys.readouterr()
    before = snapshot(tmp_path)
    assert main(["apply", str(spec), "--yes", "--locks-dir", str(tmp_path / "locks")]) == 2
    err = capsys.readouterr().err
    assert err == (f"error: {home / '.keras'}: a file where {home / '.keras' / 'keras.json'} "
                   "needs a folder; move it away (envforge does not replace it)\n")
    assert snapshot(tmp_path) == before
