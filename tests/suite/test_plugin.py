"""The suite's plugin gives each pytest worker its own compile folder through the setting
the framework's pack names (Theano: THEANO_FLAGS' base_compiledir), after the variable's
own value, made as a copy of the environment's own; a framework with no such setting gets
nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from envforge.packs.theano.suite import THEANO_SUITE
from envforge.suite.runner import PLUGIN, SuiteFolder, suite_environ


def _host() -> dict[str, str]:
    """This host's variables (Windows' Python needs SYSTEMROOT), none of the framework's."""
    return {k: v for k, v in os.environ.items() if k != "THEANO_FLAGS"}


def _environ_after_plugin(env: dict[str, str]) -> dict[str, str]:
    code = (f"import os, runpy, json; runpy.run_path({str(PLUGIN)!r}); "
            "print(json.dumps(dict(os.environ)))")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, check=True, timeout=60)
    found: dict[str, str] = json.loads(done.stdout)
    return found


def test_each_worker_compiles_in_its_own_folder(tmp_path: Path) -> None:
    folder = SuiteFolder(tmp_path, tmp_path / "runner", tmp_path / "source")
    env = suite_environ({**_host(), "THEANO_FLAGS": "device=cpu"}, folder, package="theano",
                        compiledir=tmp_path / "c", compiledir_flag=THEANO_SUITE.compiledir_flag)
    assert env["ENVFORGE_SUITE_COMPILEDIR_FLAG"] == "THEANO_FLAGS:base_compiledir"
    env["PYTEST_XDIST_WORKER"] = "gw3"
    after = _environ_after_plugin(env)
    assert after["THEANO_FLAGS"] == f"device=cpu,base_compiledir={tmp_path / 'c' / 'gw3'}"


def test_a_worker_s_new_folder_is_a_copy_of_the_seed_and_an_existing_one_is_kept(
        tmp_path: Path) -> None:
    seed = tmp_path / "env-compiledir"
    (seed / "compiledir_X" / "tmpabc").mkdir(parents=True)
    (seed / "compiledir_X" / "tmpabc" / "key.pkl").write_bytes(b"key")
    (seed / "compiledir_X" / "lock_dir").mkdir()  # another process's lock: never copied
    folder = SuiteFolder(tmp_path, tmp_path / "runner", tmp_path / "source")
    env = suite_environ(_host(), folder, package="theano", compiledir=tmp_path / "c",
                        compiledir_flag=THEANO_SUITE.compiledir_flag, compiledir_seed=seed)
    kept = tmp_path / "c" / "gw1"
    kept.mkdir(parents=True)
    for worker in ("gw0", "gw1"):
        _environ_after_plugin({**env, "PYTEST_XDIST_WORKER": worker})
    made = tmp_path / "c" / "gw0"
    assert sorted(p.relative_to(made).as_posix() for p in made.rglob("*")) == [
        "compiledir_X", "compiledir_X/tmpabc", "compiledir_X/tmpabc/key.pkl"]
    assert (made / "compiledir_X" / "tmpabc" / "key.pkl").read_bytes() == b"key"
    assert list(kept.iterdir()) == []  # a folder of an earlier run is its own
    assert sorted(p.name for p in (tmp_path / "c").iterdir()) == ["gw0", "gw1"]  # no partial


def test_a_package_without_a_compile_setting_gets_none(tmp_path: Path) -> None:
    folder = SuiteFolder(tmp_path, tmp_path / "runner", tmp_path / "source")
    env = suite_environ(_host(), folder, package="tensorflow", compiledir=tmp_path / "c")
    assert "ENVFORGE_SUITE_COMPILEDIR_FLAG" not in env
    after = _environ_after_plugin(env)
    assert "THEANO_FLAGS" not in after
