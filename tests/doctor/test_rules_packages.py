"""The environment against its lock: the versions the lock names, installed or not."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.doctor.layouts import conda_env, expected, home, judge, look, only


@pytest.mark.parametrize(("installed", "finding"), [
    (None, "env.not-applied"), ({"numpy": "1.19.4"}, "env.not-locked")])
def test_environment_against_the_lock(tmp_path: Path, installed: dict[str, str] | None,
                                      finding: str) -> None:
    prefix = tmp_path / "env"
    if installed is not None:
        conda_env(prefix, {"python": "3.7.12", "theano-pymc": "1.0.5", "pygpu": "0.7.6",
                           **installed})
    facts = look(tmp_path, {"HOME": str(home(tmp_path))}, prefix=prefix)
    lock = expected(prefix=str(prefix))
    found = only(judge(facts, lock), finding)
    assert found.fix is not None and found.fix.text == "envforge apply specs/theano-cuda102.toml"
    if installed is not None:
        assert found.title == f"numpy 1.19.4 in {prefix}; the lock has 1.19.5"
