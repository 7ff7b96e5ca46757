"""Saved plans: written whole, read back equal; a damaged or foreign one is one line naming
the file and the line or key (exit 2)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from envforge import __version__
from envforge.errors import InputError
from envforge.plan import (
    PLAN_FORMAT,
    Plan,
    PlanOptions,
    SavedPlan,
    StepPlan,
    read_saved_plan,
    write_saved_plan,
)
from envforge.steps.actions import MakeTree, RunStep, WriteFile


def _saved() -> SavedPlan:
    plan = Plan(spec="specs/x.toml", platform="linux-64", prefix="/envs/x", steps=(
        StepPlan(step="prefix", changes=(), actions=(MakeTree(path="/envs/x"),)),
        StepPlan(step="pypi-packages", changes=(), actions=(
            RunStep(step="pypi-packages", within="/envs/x"),)),
        StepPlan(step="theanorc", changes=(), actions=(
            WriteFile(path="/home/u/.theanorc", before="sha256:00", data=b"\xff\r\n"),)),
    ))
    return SavedPlan(format=PLAN_FORMAT, envforge=__version__, spec_file="/p/specs/x.toml",
                     spec_sha256="cd" * 32, lock_file="/p/locks/x.lock", lock_sha256="ab" * 32,
                     options=PlanOptions(prefix="/envs/x"), plan=plan)


def test_a_saved_plan_reads_back_equal(tmp_path: Path) -> None:
    path = tmp_path / "plan.json"
    write_saved_plan(path, _saved())
    assert read_saved_plan(path) == _saved()


@pytest.mark.parametrize(("edit", "message"), [
    (lambda d: d.update(envforge="0.0.1"), "envforge: made by envforge 0.0.1, this is"),
    (lambda d: d.update(format=9), "format: 9, this envforge reads plans of format 1"),
    (lambda d: d["plan"]["steps"][2]["actions"][0].update(kind="format-disk"),
     "plan.steps.2.actions.0: Input tag 'format-disk' found using 'kind' does not match"),
    (lambda d: d["options"].update(yes=True), "options.yes: Extra inputs are not permitted"),
])
def test_a_foreign_or_edited_plan_is_one_line(tmp_path: Path,
                                             edit: Callable[[dict[str, Any]], None],
                                             message: str) -> None:
    path = tmp_path / "plan.json"
    document = json.loads(_saved().model_dump_json())
    edit(document)
    path.write_text(json.dumps(document))
    with pytest.raises(InputError) as caught:
        read_saved_plan(path)
    assert str(caught.value).startswith(f"{path}: {message}")
    assert "\n" not in str(caught.value)


def test_not_json_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "plan.json"
    path.write_text('{\n  "format": 1,\n  oops\n}\n')
    with pytest.raises(InputError, match=r"plan\.json:3: not a plan \(JSON\)"):
        read_saved_plan(path)
