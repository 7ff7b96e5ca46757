"""``keras.json`` written where the spec says: in the environment (``KERAS_HOME`` set by
activation, so the user's own ``~/.keras`` is never read or touched) or in the user's home,
where a file already there is backed up by the journal before it is replaced, so rollback
gives it back byte for byte. Shaped as the .theanorc step is."""

from __future__ import annotations

import difflib
from pathlib import Path

from envforge.journal import Transaction
from envforge.packs.keras.expect import keras_expect, keras_json_text
from envforge.packs.keras.section import keras_section
from envforge.steps.actions import StepPlan, WriteFile, perform_all
from envforge.steps.base import Change, StepContext, state_of, text_digest


def keras_dir(ctx: StepContext) -> Path:
    """The folder Keras reads keras.json from: KERAS_HOME in the environment, else ~/.keras."""
    from envforge.packs.keras.expect import KERAS_DIR_IN_ENV

    if keras_section(ctx.pspec).keras_json == "env":
        return Path(ctx.layout.prefix) / KERAS_DIR_IN_ENV
    return ctx.home / ".keras"


def rendered(ctx: StepContext) -> str:
    expect = keras_expect(ctx.lock.expect)
    if expect is None:
        raise ValueError("the lock holds no Keras table: lock the spec again")
    return keras_json_text(expect)


class KerasJsonStep:
    name = "keras-json"

    def plan(self, ctx: StepContext) -> StepPlan:
        target = keras_dir(ctx) / "keras.json"
        text = rendered(ctx)
        raw = target.read_bytes() if target.is_file() else None
        before = None if raw is None else raw.decode("utf-8", "backslashreplace")
        data = text.encode("utf-8")
        if raw == data:
            return StepPlan(step=self.name, changes=())
        diff = "".join(difflib.unified_diff((before or "").splitlines(keepends=True),
                                            text.splitlines(keepends=True),
                                            str(target) + " (now)", str(target) + " (after)"))
        change = Change(action="replace" if before is not None else "create", target=str(target),
                        before=text_digest(before), after=text_digest(text), detail=diff)
        write = WriteFile(path=str(target), before=state_of(target), data=data)
        return StepPlan(step=self.name, changes=(change,), actions=(write,))

    def describe(self, ctx: StepContext) -> tuple[Change, ...]:
        return self.plan(ctx).changes

    def apply(self, ctx: StepContext, tx: Transaction) -> None:
        perform_all(self.plan(ctx), tx)
