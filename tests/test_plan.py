"""Saved plans: written whole, read back equal; a damaged or foreign one is one line naming
the file and the line or key (exit 2)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from envforge import __version__
from envforge.errors import InputError
from envforge.plan import (
    PLAN_FORMAT,
    PLAN_MAX_BYTES,
    Plan,
    PlanOptions,
    SavedPlan,
    StepPlan,
    first_difference,
    json_depth,
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
    (lambda d: d["options"].update(sync="yes"), "options.sync: Input should be a valid boolean"),
    (lambda d: d["options"].update(offline=1), "options.offline: Input should be a valid boolean"),
    (lambda d: d["options"].update(prefix=7), "options.prefix: Input should be a valid string"),
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


def test_a_plan_nested_past_its_depth_or_larger_than_16_mib_is_refused_unread(
        tmp_path: Path) -> None:
    deep, large = tmp_path / "deep.json", tmp_path / "large.json"
    deep.write_text('{"format": 1, "plan": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(InputError, match=r"deep\.json: not a plan: its JSON nests 100001 deep"):
        read_saved_plan(deep)
    with open(large, "wb") as handle:
        handle.truncate(PLAN_MAX_BYTES + 1)  # sparse: no 16 MiB written
    with pytest.raises(InputError, match=rf"{PLAN_MAX_BYTES + 1} bytes, more than the 16 MiB"):
        read_saved_plan(large)


def test_brackets_inside_strings_do_not_count_as_nesting() -> None:
    assert json_depth('{"a": "[[[{{\\"[[", "b": [[1]]}') == 3
    assert json_depth(_saved().model_dump_json()) <= 6


@pytest.mark.posix_only(reason="FIFOs")
def test_a_fifo_as_the_plan_is_refused_without_opening_it(tmp_path: Path) -> None:
    fifo = tmp_path / "plan.json"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match=r"plan\.json: a FIFO, not a regular file"):
        read_saved_plan(fifo)  # opening it would wait for a writer forever


def test_the_first_differing_action_is_named() -> None:
    plan = _saved().plan
    assert first_difference(plan, plan) is None
    steps = list(plan.steps)
    steps[2] = StepPlan(step="theanorc", changes=(), actions=(
        WriteFile(path="/home/u/.bashrc", before="sha256:00", data=b"\xff\r\n"),))
    assert first_difference(plan.model_copy(update={"steps": tuple(steps)}), plan) == (
        "step theanorc, action 1: write /home/u/.bashrc where the spec plans write "
        "/home/u/.theanorc")
    steps[2] = StepPlan(step="theanorc", changes=(), actions=(
        WriteFile(path="/home/u/.theanorc", before="sha256:00", data=b"other"),))
    assert first_difference(plan.model_copy(update={"steps": tuple(steps)}), plan) == (
        "step theanorc, action 1: write /home/u/.theanorc with other contents or before-state")
    assert first_difference(plan.model_copy(update={"steps": plan.steps[:2]}), plan) == (
        "step (none) where the spec plans step theanorc")
