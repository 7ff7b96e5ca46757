"""A real StepContext for testing one step: only what steps read is filled in with care."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from envforge.bundle.sources import LockedSources
from envforge.envlayout import layout_for
from envforge.journal import Journal, Transaction
from envforge.lockfile import ApplyInputs, Expectations, PlatformLock
from envforge.packs.theano.expect import TheanoExpect
from envforge.paths import EnvforgeDirs
from envforge.spec import Platform
from envforge.steps.base import Facts, Step, StepContext
from envforge.ui import UI
from tests.testing.packs import REGISTRY


def make_ctx(tmp: Path, platform: Platform, cuda_root: Path | None,
             artifacts: Mapping[str, Path] | None = None, *,
             environ: Mapping[str, str] | None = None, cuda: str | None = None,
             cuda_search: tuple[Path, ...] | None = None) -> StepContext:
    prefix = tmp / "prefix"
    return StepContext(
        platform=platform, prefix=prefix, environ=dict(environ or {}), home=tmp / "home",
        state_dir=tmp / "state", artifacts=dict(artifacts or {}),
        lock=PlatformLock(python="3.7.16", environment="conda", expect=Expectations(
            versions={}, device="cuda", float_x="float32", cuda=cuda,
            packs={"theano": TheanoExpect(flags={})}), apply=ApplyInputs()),
        layout=layout_for(platform, "conda", prefix, "3.7"),
        dirs=EnvforgeDirs(tmp / "cache", tmp / "data", tmp / "state"),
        sources=LockedSources(), ui=UI(quiet=True), facts=Facts(cuda_root=cuda_root),
        cuda_search=cuda_search, registry=REGISTRY)


def apply_step(step: Step, ctx: StepContext) -> Journal:
    """Run one step's apply inside a journaled transaction, as the executor does."""
    journal = Journal(ctx.state_dir)
    tx = Transaction(journal, step.name)
    tx.begin()
    step.apply(ctx, tx)
    tx.done()
    return journal
