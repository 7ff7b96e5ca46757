"""The collection's pure helpers: the plan as Ansible's diff (no Ansible needed)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

UTILS = (Path(__file__).resolve().parents[2] / "ansible_collections" / "envforge" / "core"
         / "plugins" / "module_utils" / "envforge_cli.py")


def _utils() -> ModuleType:
    spec = importlib.util.spec_from_file_location("envforge_cli", UTILS)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_plan_diff_lists_each_change_relative_to_the_env_and_the_theanorc_diff() -> None:
    plan = {"plan": {"prefix": "/e", "steps": [
        {"step": "venv", "changes": []},
        {"step": "theanorc", "changes": [
            {"action": "replace", "target": "/e/etc/theanorc", "before": "sha256:1",
             "after": "sha256:2", "detail": "--- a\n+++ b\n-floatX = float32\n"}]},
        {"step": "pypi", "changes": [{"action": "create", "target": "/e/lib/x", "before": None,
                                      "after": None, "detail": ""}]}]}}
    diff = _utils().plan_diff(plan)
    assert diff["prepared"] == ("theanorc replace <env>/etc/theanorc\npypi create <env>/lib/x\n"
                                "--- a\n+++ b\n-floatX = float32\n")


def test_no_change_is_no_diff() -> None:
    assert _utils().plan_diff({"plan": {"prefix": "/e", "steps": [{"step": "venv",
                                                                     "changes": []}]}}) == {}
