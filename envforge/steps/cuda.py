"""The CUDA toolkit: with ``source = "system"`` it is found and checked, never installed.

When it is absent or the wrong version, the failure names the locked installer (file,
URL, sha256) as the remedy; a driver too old for it is named with the rule's source.
"""

from __future__ import annotations

from dataclasses import replace

from packaging.version import Version

from envforge.errors import StepError
from envforge.host.cuda import CudaToolkit, Driver, find_toolkits, read_driver
from envforge.journal import Transaction
from envforge.knowledge import min_driver
from envforge.platforms import PLATFORMS
from envforge.steps.base import Change, Facts, StepContext


def matches(wanted: str, toolkit: CudaToolkit) -> bool:
    """``10.2`` pins a release line; ``>=11.8`` sets a minimum."""
    if wanted.startswith(">="):
        return Version(toolkit.minor) >= Version(wanted[2:])
    wanted = wanted.removeprefix("==")
    return toolkit.version == wanted or toolkit.minor == wanted


def select_toolkit(ctx: StepContext) -> CudaToolkit:
    assert ctx.lock.expect.cuda is not None
    wanted = ctx.lock.expect.cuda
    toolkits = find_toolkits(ctx.environ, platform=PLATFORMS[ctx.platform],
                             search=ctx.cuda_search)
    for toolkit in toolkits:
        if matches(wanted, toolkit):
            return toolkit
    installer = next((a for a in ctx.lock.artifacts if a.role == "cuda-installer"), None)
    seen = ", ".join(f"{t.version} at {t.root}" for t in toolkits) or "none"
    remedy = (f"install {installer.filename} ({installer.url}, sha256 {installer.sha256})"
              if installer else f"install a CUDA toolkit {wanted}")
    raise StepError(f"CUDA {wanted} not found (found: {seen}); {remedy}")


def check_driver(toolkit: CudaToolkit, driver: Driver, ctx: StepContext) -> None:
    """A driver older than the toolkit needs cannot run its kernels; no driver is only a
    warning, since an environment may be provisioned before the GPU host is reached."""
    needed = min_driver(toolkit.version, ctx.platform)
    if needed is None:
        return
    if driver.version is None:
        ctx.ui.warn(f"no NVIDIA driver found ({driver.source}); CUDA {toolkit.minor} needs "
                    f">= {needed.value} ({needed.source})")
        return
    if Version(driver.version) < Version(needed.value):
        raise StepError(f"NVIDIA driver {driver.version} is too old for CUDA {toolkit.minor}: "
                        f"it needs >= {needed.value} (source: {needed.source}); update the driver")


class CudaToolkitStep:
    """A check, not a change: describe and apply both fail on a missing or wrong toolkit."""

    name = "cuda-toolkit"

    def describe(self, ctx: StepContext) -> tuple[Change, ...]:
        check_driver(select_toolkit(ctx), read_driver(ctx.environ), ctx)
        return ()

    def apply(self, ctx: StepContext, tx: Transaction) -> None:
        check_driver(select_toolkit(ctx), read_driver(ctx.environ), ctx)

    def facts(self, ctx: StepContext) -> Facts:
        """The toolkit's root, for cuDNN, a pack's library links, PATH and the activation."""
        return replace(ctx.facts, cuda_root=select_toolkit(ctx).root)
