"""The suite's plugin gives each pytest worker its own compile folder through the setting
the framework's pack names (Theano: THEANO_FLAGS' base_compiledir), after the variable's
own value; a framework with no such setting gets nothing."""

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


def test_a_package_without_a_compile_setting_gets_none(tmp_path: Path) -> None:
    folder = SuiteFolder(tmp_path, tmp_path / "runner", tmp_path / "source")
    env = suite_environ(_host(), folder, package="tensorflow", compiledir=tmp_path / "c")
    assert "ENVFORGE_SUITE_COMPILEDIR_FLAG" not in env
    after = _environ_after_plugin(env)
    assert "THEANO_FLAGS" not in after
