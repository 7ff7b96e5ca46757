"""``.theanorc`` rendered in the spelling of the locked Theano, where the spec says it goes.

In the environment (THEANORC set by activation) or in the user's home, following Theano's
own rules for ``~`` and ``.theanorc.txt`` on Windows. A file already there is backed up by
the journal before it is replaced, so rollback gives it back byte for byte.
"""

from __future__ import annotations

from pathlib import Path, PurePath
from typing import assert_never

from envforge.journal import Transaction
from envforge.packs.theano.expect import theano_expect
from envforge.packs.theano.flags import render_theanorc
from envforge.packs.theano.knowledge import reference_theano
from envforge.platforms import PLATFORMS, Os
from envforge.steps.actions import StepPlan, perform_all, text_file_plan
from envforge.steps.base import Change, StepContext

THEANORC_IN_ENV = "etc/theanorc"  # where [theano] theanorc = "env" puts it; THEANORC says so


def env_theanorc(ctx: StepContext) -> PurePath:
    return ctx.layout.prefix / THEANORC_IN_ENV


def expanded_flags(ctx: StepContext) -> dict[str, str]:
    """The lock's flags with ``{prefix}`` made this environment's folder.

    On Windows with envforge's MinGW, ``cxx`` names its g++: Theano would otherwise fall
    back to ``<python dir>\\Library\\mingw-w64\\bin\\g++`` or whatever g++ is first on PATH.
    """
    prefix = str(ctx.layout.prefix)
    locked = theano_expect(ctx.lock.expect).flags
    flags = {k: v.replace("{prefix}", prefix) for k, v in locked.items()}
    compiler = ctx.inputs.compiler
    if PLATFORMS[ctx.platform].os is Os.WINDOWS and compiler is not None \
            and compiler.kind == "mingw-w64":
        from envforge.steps.mingw import mingw_gxx

        flags.setdefault("cxx", str(mingw_gxx(ctx)))
    return flags


def theanorc_target(ctx: StepContext) -> Path:
    if theano_expect(ctx.lock.expect).theanorc == "env":
        return Path(env_theanorc(ctx))
    target = PLATFORMS[ctx.platform]
    match target.os:
        case Os.WINDOWS:
            from envforge.packs.theano.rcpaths import theanorc_paths

            return Path(theanorc_paths(target, dict(ctx.environ)).write_to)
        case Os.LINUX:
            return ctx.home / ".theanorc"
        case _:
            assert_never(target.os)


def rendered(ctx: StepContext) -> str:
    version = ctx.lock.expect.versions.get("theano") or reference_theano()
    return render_theanorc(expanded_flags(ctx), version)


class TheanorcStep:
    name = "theanorc"

    def plan(self, ctx: StepContext) -> StepPlan:
        return text_file_plan(self.name, self.watched(ctx)[0], rendered(ctx))

    def watched(self, ctx: StepContext) -> tuple[Path, ...]:
        return (theanorc_target(ctx),)

    def describe(self, ctx: StepContext) -> tuple[Change, ...]:
        return self.plan(ctx).changes

    def apply(self, ctx: StepContext, tx: Transaction) -> None:
        perform_all(self.plan(ctx), tx)
