"""ModulePack: a pack whose hooks are found in its own package's modules, imported when first
called."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from importlib import import_module
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol, cast

from envforge.packs.protocol import Migration, Report
from envforge.spec import Frozen, PlatformSpec

if TYPE_CHECKING:
    from envforge.compat import Pin
    from envforge.envvars import EnvEdit
    from envforge.lockfile import Expectations
    from envforge.steps.base import Step, StepContext
    from envforge.verify import CheckRow


class ModulePack:
    """A pack whose per-phase hooks live in its own package's modules, each imported when
    first called so the registry stays cheap to import: ``compat.compat_checks``,
    ``expect.expectations``, ``verify.probe_request`` and ``verify.verify_rows`` (the
    package: where the subclass is defined). No steps, variables, knowledge files or lock
    migrations unless the pack says so; ``PackDefaults`` beside it answers the rest."""

    name: str
    section: type[Frozen]
    implicit = False
    knowledge: tuple[str, ...] = ()
    lock_migrations: Mapping[int, Migration] = MappingProxyType({})

    def _hook(self, module: str, name: str) -> Callable[..., Any]:
        package = sys.modules[type(self).__module__].__package__
        hook: Callable[..., Any] = getattr(import_module(f"{package}.{module}"), name)
        return hook

    def compat_checks(self, pspec: PlatformSpec, pins: Mapping[str, Sequence[Pin]],
                      report: Report) -> None:
        self._hook("compat", "compat_checks")(pspec, pins, report)

    def expectations(self, pspec: PlatformSpec, versions: Mapping[str, str]) -> Frozen:
        return cast(Frozen, self._hook("expect", "expectations")(pspec, versions))

    def kernel_device(self, pspec: PlatformSpec) -> tuple[str, str]:
        """The ``device`` and ``float_x`` of the pack's section (its defaults where the spec
        has none)."""
        found = pspec.packs.get(self.name)
        section = cast(_DeviceSection, found if isinstance(found, self.section)
                       else self.section())
        return section.device, section.float_x

    def steps(self, ctx: StepContext) -> Sequence[Step]:
        return ()

    def env_edits(self, ctx: StepContext) -> Sequence[EnvEdit]:
        return ()

    def probe_request(self, expect: Expectations) -> Mapping[str, Any]:
        return cast("Mapping[str, Any]", self._hook("verify", "probe_request")(expect))

    def verify_rows(self, report: Mapping[str, Any], expect: Expectations, *,
                    prefix: str | None, gpu_expected: bool) -> Iterable[CheckRow]:
        rows = self._hook("verify", "verify_rows")(report, expect, prefix=prefix,
                                                   gpu_expected=gpu_expected)
        return cast("Iterable[CheckRow]", rows)


class _DeviceSection(Protocol):
    device: str
    float_x: str
