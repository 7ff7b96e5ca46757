"""app/environments: ``envforge run``'s variables and ``rollback``, called directly. An
environment not applied is one line naming the command to run; the host's pip is refused
where the environment has none; a rollback where nothing was applied undoes nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envforge.app.environments import command_environment, roll_back
from envforge.errors import InputError
from envforge.ui import UI

REPO = Path(__file__).resolve().parents[2]
SPEC = REPO / "specs" / "theano-cpu.toml"


@pytest.fixture(autouse=True)
def _own_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENVFORGE_HOME", str(tmp_path / "ef"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))


def test_an_unapplied_environment_names_apply(tmp_path: Path) -> None:
    prefix = tmp_path / "env"
    with pytest.raises(InputError) as caught:
        command_environment(str(SPEC), "python", prefix=prefix, locks_dir=None,
                            ui=UI(quiet=True))
    assert str(caught.value) == (f"{SPEC}: not applied at {prefix}: run `envforge apply "
                                 f"{SPEC} --prefix {prefix}` first")


@pytest.mark.posix_only("a POSIX prefix layout stands in for an applied environment")
def test_the_host_s_pip_is_refused_where_the_environment_has_none(tmp_path: Path) -> None:
    prefix = tmp_path / "env"
    (prefix / "bin").mkdir(parents=True)
    activation = [{"name": "PATH", "op": "prepend", "value": str(prefix / "bin")}]
    (prefix / "envforge-env.json").write_text(json.dumps(activation), encoding="utf-8")
    ui = UI(quiet=True)
    for command in ("pip", "pip3", "pip3.7", "/usr/bin/pip"):
        with pytest.raises(InputError, match=f"the environment has no {Path(command).name} "):
            command_environment(str(SPEC), command, prefix=prefix, locks_dir=None, ui=ui)
    (prefix / "bin" / "pip").write_text("#!/bin/sh\n", encoding="utf-8")
    (prefix / "bin" / "pip").chmod(0o755)
    env = command_environment(str(SPEC), "pip", prefix=prefix, locks_dir=None, ui=ui)
    assert env["PATH"].split(":")[0] == str(prefix / "bin")
    with pytest.raises(InputError, match="pipx: command not found in the environment"):
        command_environment(str(SPEC), "pipx", prefix=prefix, locks_dir=None, ui=ui)


def test_rolling_back_what_was_never_applied_undoes_nothing(tmp_path: Path) -> None:
    done = roll_back(SPEC, prefix=tmp_path / "env", force=False)
    assert done.prefix == tmp_path / "env" and done.undone is None
