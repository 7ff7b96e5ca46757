"""What a step finds reaches the steps after it, at planning and at apply, and not before it."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from envforge.executor import execute
from envforge.journal import Transaction
from envforge.plan import make_plan
from envforge.steps.base import Change, Facts, FindsFacts, StepContext
from envforge.steps.cuda import CudaToolkitStep
from tests.testing.contexts import make_ctx


class Finder:
    name = "finder"

    def __init__(self, root: Path) -> None:
        self.root = root

    def describe(self, ctx: StepContext) -> tuple[Change, ...]:
        return ()

    def apply(self, ctx: StepContext, tx: Transaction) -> None:
        raise AssertionError("nothing to do, so never applied")

    def facts(self, ctx: StepContext) -> Facts:
        return replace(ctx.facts, cuda_root=self.root)


class Reader:
    """Reports the CUDA root it was given, as a change, and records it when applied."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.applied_with: list[Path | None] = []

    def describe(self, ctx: StepContext) -> tuple[Change, ...]:
        return (Change(action="set", target=self.name, before=None, after=str(ctx.cuda_root)),)

    def apply(self, ctx: StepContext, tx: Transaction) -> None:
        self.applied_with.append(ctx.cuda_root)


def test_the_plan_and_the_executor_hand_a_finding_to_later_steps_only(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path, "linux-64", None)
    root = tmp_path / "cuda-12.4"
    before, later = Reader("before"), Reader("later")
    steps = [before, Finder(root), later]
    plan = make_plan(ctx, steps, spec="x.toml")
    assert [s.changes[0].after for s in plan.steps if s.changes] == ["None", str(root)]
    ran = execute(ctx, steps, record={"spec": "/x.toml", "prefix": str(ctx.prefix)})
    assert ran == ["before", "later"]
    assert (before.applied_with, later.applied_with) == ([None], [root])
    assert ctx.cuda_root is None  # the caller's context is not changed


def test_the_cuda_step_is_the_one_that_finds_the_toolkit() -> None:
    assert isinstance(CudaToolkitStep(), FindsFacts)
