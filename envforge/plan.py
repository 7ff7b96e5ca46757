"""A plan = the steps a lock needs on this host, each with the changes it would make.

Which steps apply follows from the lock and the spec alone; what each would change comes
from observing the host (``describe``), which never changes anything.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from envforge.platforms import PLATFORMS, Os
from envforge.spec import Frozen
from envforge.steps.base import Change, Step, StepContext, after

if TYPE_CHECKING:
    from envforge.host.windows import RegistrySeam


class StepPlan(Frozen):
    step: str
    changes: tuple[Change, ...]


class Plan(Frozen):
    spec: str
    platform: str
    prefix: str
    steps: tuple[StepPlan, ...]

    @property
    def pending(self) -> bool:
        return any(s.changes for s in self.steps)


def build_steps(ctx: StepContext, *, registry: RegistrySeam | None = None) -> list[Step]:
    """The ordered steps this environment needs; later steps rely on earlier ones.

    ``registry`` is where a win-64 user PATH is written: the real one on Windows when not
    given; elsewhere that step is planned only with a registry passed in (tests).
    """
    from envforge.packs import active_packs
    from envforge.steps.activation import ActivationStep
    from envforge.steps.env import EnvironmentStep, PrefixStep

    lock, pspec = ctx.lock, ctx.pspec
    steps: list[Step] = [PrefixStep()]
    if lock.deb:
        from envforge.steps.debs import DebUnpackStep

        steps.append(DebUnpackStep())
    steps.append(EnvironmentStep())
    if lock.conda:
        from envforge.steps.conda import CondaInstallStep

        steps.append(CondaInstallStep())
    if lock.pypi:
        from envforge.steps.pypi import PypiInstallStep

        steps.append(PypiInstallStep())
    if pspec.compiler is not None:
        from envforge.steps.compiler import CompilerStep

        steps.append(CompilerStep())
    if pspec.cuda is not None:
        from envforge.steps.cuda import CudaToolkitStep

        steps.append(CudaToolkitStep())
        cudnn = next((a for a in lock.artifacts if a.role == "cudnn"), None)
        if cudnn is not None:
            from envforge.steps.cudnn import CudnnInstallStep

            steps.append(CudnnInstallStep(cudnn))
        if "pygpu" in lock.expect.versions:
            from envforge.steps.libs import LibgpuarrayLinksStep

            steps.append(LibgpuarrayLinksStep())
    for pack in active_packs(pspec):
        steps.extend(pack.steps(ctx))
    steps.append(ActivationStep())
    if PLATFORMS[ctx.platform].os is Os.WINDOWS and pspec.path.scope == "user":
        if registry is None:
            from envforge.host.windows import host_registry

            registry = host_registry()
        if registry is not None:
            from envforge.steps.userpath import UserPathStep

            steps.append(UserPathStep(registry))
    return steps


def make_plan(ctx: StepContext, steps: Sequence[Step], *, spec: str) -> Plan:
    """Each step described with what the steps before it found (``steps.base.after``)."""
    planned = []
    for step in steps:
        planned.append(StepPlan(step=step.name, changes=step.describe(ctx)))
        ctx = after(step, ctx)
    return Plan(spec=spec, platform=ctx.platform, prefix=str(ctx.prefix), steps=tuple(planned))
