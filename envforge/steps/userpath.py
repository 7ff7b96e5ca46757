"""The Windows user PATH (``HKCU\\Environment``, value ``Path``), for ``[path] scope = "user"``.

MinGW's bin goes first (its g++ must be the one Theano finds), then exactly one bin of the
locked CUDA; the rest stays in its order, ``%VAR%`` entries unexpanded and the value's type
(usually REG_EXPAND_SZ) kept. Bins of other CUDA versions stay, after ours, and are
reported. The write goes through the journal, so rollback restores the old value and type;
programs are told with WM_SETTINGCHANGE. The registry is a seam: ``WinRegistry`` on
Windows, ``RecordingRegistry`` in tests.
"""

from __future__ import annotations

import difflib
from pathlib import PureWindowsPath

from envforge.errors import StepError
from envforge.host.windows import (
    REG_EXPAND_SZ,
    REG_SZ,
    USER_ENVIRONMENT,
    PathEdit,
    RegistrySeam,
    arrange_path,
    path_value_type,
    split_path,
)
from envforge.journal import Transaction
from envforge.platforms import PLATFORMS, Os
from envforge.steps.base import Change, StepContext

PATH_NAME = "Path"
_TYPE_NAMES = {REG_SZ: "REG_SZ", REG_EXPAND_SZ: "REG_EXPAND_SZ"}


def user_path_entries(ctx: StepContext) -> tuple[str | None, str | None]:
    """(MinGW's bin, the locked CUDA's bin) as Windows paths; None where the lock has none."""
    from envforge.steps.mingw import mingw_bin

    compiler = ctx.inputs.compiler
    mingw = str(mingw_bin(ctx)) if compiler is not None and compiler.kind == "mingw-w64" else None
    cuda = str(PureWindowsPath(ctx.cuda_root) / "bin") if ctx.cuda_root is not None else None
    return mingw, cuda


class UserPathStep:
    """Arrange the user's PATH in the registry; planned only on Windows with scope "user"."""

    name = "user-path"

    def __init__(self, registry: RegistrySeam) -> None:
        self.registry = registry
        self._reported: set[str] = set()

    def describe(self, ctx: StepContext) -> tuple[Change, ...]:
        current, current_type, edit = self._edit(ctx)
        if not edit.changed:
            return ()
        new_type = path_value_type(edit.value, current_type)
        diff = "\n".join(difflib.unified_diff(
            split_path(current or ""), split_path(edit.value),
            f"{USER_ENVIRONMENT}\\{PATH_NAME} (now)",
            f"{USER_ENVIRONMENT}\\{PATH_NAME} (after, {_TYPE_NAMES.get(new_type, new_type)})",
            lineterm=""))
        return (Change(action="set", target=f"{USER_ENVIRONMENT}\\{PATH_NAME}", before=current,
                       after=edit.value, detail=diff),)

    def observe(self, ctx: StepContext) -> str | None:
        """The value the plan saw: a change to it since is a stale plan."""
        found = self.registry.get(USER_ENVIRONMENT, PATH_NAME)
        return None if found is None else f"{found[1]}:{found[0]}"

    def apply(self, ctx: StepContext, tx: Transaction) -> None:
        _, current_type, edit = self._edit(ctx)
        if not edit.changed:
            return
        tx.set_registry_value(self.registry, USER_ENVIRONMENT, PATH_NAME, edit.value,
                              path_value_type(edit.value, current_type))
        self.registry.broadcast_setting_change()

    def _edit(self, ctx: StepContext) -> tuple[str | None, int | None, PathEdit]:
        if PLATFORMS[ctx.platform].os is not Os.WINDOWS:
            raise StepError(f"the user PATH is a Windows setting, not one of {ctx.platform}")
        found = self.registry.get(USER_ENVIRONMENT, PATH_NAME)
        current, current_type = (None, None) if found is None else found
        if current is not None and not isinstance(current, str):
            raise StepError(f"{USER_ENVIRONMENT}\\{PATH_NAME} is not text (type {current_type}); "
                            "envforge will not change it")
        mingw, cuda = user_path_entries(ctx)
        edit = arrange_path(current or "", mingw_bin=mingw, cuda_bin=cuda, environ=ctx.environ)
        for finding in edit.findings:
            if finding not in self._reported:
                self._reported.add(finding)
                ctx.ui.warn(finding)
        return current, current_type, edit
