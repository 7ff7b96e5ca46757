"""The CUDA toolkit: with ``source = "system"`` it is found and checked, never installed.

When it is absent or the wrong version, the failure names the locked installer (file,
URL, sha256) as the remedy; a driver too old for it is named with the rule's source.
"""

from __future__ import annotations

from packaging.version import Version

from envforge.errors import StepError
from envforge.host.cuda import CudaToolkit, find_toolkits
from envforge.journal import Transaction
from envforge.steps.base import Change, StepContext


def matches(wanted: str, toolkit: CudaToolkit) -> bool:
    """``10.2`` pins a release line; ``>=11.8`` sets a minimum."""
    if wanted.startswith(">="):
        return Version(toolkit.minor) >= Version(wanted[2:])
    wanted = wanted.removeprefix("==")
    return toolkit.version == wanted or toolkit.minor == wanted


def select_toolkit(ctx: StepContext) -> CudaToolkit:
    assert ctx.pspec.cuda is not None
    wanted = ctx.pspec.cuda.version
    toolkits = find_toolkits(ctx.environ, windows=ctx.platform == "win-64",
                             search=ctx.cuda_search)
    for toolkit in toolkits:
        if matches(wanted, toolkit):
            return toolkit
    installer = next((a for a in ctx.lock.artifacts if a.role == "cuda-installer"), None)
    seen = ", ".join(f"{t.version} at {t.root}" for t in toolkits) or "none"
    remedy = (f"install {installer.filename} ({installer.url}, sha256 {installer.sha256})"
              if installer else f"install a CUDA toolkit {wanted}")
    raise StepError(f"CUDA {wanted} not found (found: {seen}); {remedy}")


class CudaToolkitStep:
    name = "cuda-toolkit"

    def describe(self, ctx: StepContext) -> tuple[Change, ...]:
        select_toolkit(ctx)
        return ()

    def apply(self, ctx: StepContext, tx: Transaction) -> None:
        select_toolkit(ctx)
