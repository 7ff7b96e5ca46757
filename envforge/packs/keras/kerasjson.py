"""``keras.json`` written where the spec says: in the environment (``KERAS_HOME`` set by
activation, so the user's own ``~/.keras`` is never read or touched) or in the user's home,
where a file already there is backed up by the journal before it is replaced, so rollback
gives it back byte for byte. Shaped as the .theanorc step is."""

from __future__ import annotations

from pathlib import Path

from envforge.journal import Transaction
from envforge.packs.keras.expect import keras_expect, keras_json_text
from envforge.steps.actions import StepPlan, perform_all, text_file_plan
from envforge.steps.base import Change, StepContext


def keras_dir(ctx: StepContext) -> Path:
    """The folder Keras reads keras.json from: KERAS_HOME in the environment, else ~/.keras."""
    from envforge.packs.keras.expect import KERAS_DIR_IN_ENV

    if in_env(ctx):
        return Path(ctx.layout.prefix) / KERAS_DIR_IN_ENV
    return ctx.home / ".keras"


def in_env(ctx: StepContext) -> bool:
    """Whether the lock puts keras.json in the environment (``{prefix}/...``), not in ~."""
    expect = keras_expect(ctx.lock.expect)
    return expect is not None and expect.keras_json.startswith("{prefix}/")


def rendered(ctx: StepContext) -> str:
    expect = keras_expect(ctx.lock.expect)
    if expect is None:
        raise ValueError("the lock holds no Keras table: lock the spec again")
    return keras_json_text(expect)


class KerasJsonStep:
    name = "keras-json"

    def plan(self, ctx: StepContext) -> StepPlan:
        return text_file_plan(self.name, self.watched(ctx)[0], rendered(ctx))

    def watched(self, ctx: StepContext) -> tuple[Path, ...]:
        return (keras_dir(ctx) / "keras.json",)

    def describe(self, ctx: StepContext) -> tuple[Change, ...]:
        return self.plan(ctx).changes

    def apply(self, ctx: StepContext, tx: Transaction) -> None:
        perform_all(self.plan(ctx), tx)
