"""PackDefaults: a framework pack's neutral answers, so that a pack states only what it knows."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from envforge.packs.protocol import Migration, Report
from envforge.spec import Frozen, Platform, PlatformSpec

if TYPE_CHECKING:
    from envforge.compat import Pin
    from envforge.doctor.facts import Expected, FrameworkConfig, HostFacts, SearchEntry
    from envforge.doctor.fixes import FixPlanner
    from envforge.doctor.rules import Rule
    from envforge.envvars import EnvEdit
    from envforge.expectations import Kernel
    from envforge.knowledge.models import InitDebianRow, UndeclaredImport
    from envforge.lockfile import Expectations, LockedArtifact
    from envforge.steps.base import CompilerNeed, Step, StepContext
    from envforge.suite.framework import FrameworkSuite
    from envforge.verify import CheckRow


class PackDefaults:
    """Neutral answers to the hooks a framework may have nothing for (no probe, steps or rows,
    no doctor settings, no undeclared imports, no hints): a pack inherits them and overrides
    what it knows; it must give only its name, section and lock table models and its
    ``expectations``."""

    name: str
    implicit = False
    knowledge: tuple[str, ...] = ()
    probe: Path | None = None
    probe_modules: tuple[str, ...] = ()
    lock_migrations: Mapping[int, Migration] = MappingProxyType({})
    doctor_variables: tuple[str, ...] = ()
    doctor_packages: tuple[str, ...] = ()
    stack_names: Mapping[str, str] = MappingProxyType({})
    spec_keys: Mapping[str, tuple[str, str]] = MappingProxyType({})
    suite: FrameworkSuite | None = None
    init_frameworks: Sequence[Mapping[str, Any]] = ()
    init_debian: Sequence[InitDebianRow] = ()
    kernels: Mapping[str, Kernel] = MappingProxyType({})
    fix_kinds: Mapping[str, FixPlanner] = MappingProxyType({})
    artifact_roles: tuple[str, ...] = ()
    expect: type[Frozen]

    @property
    def display_name(self) -> str:
        """The pack's name, where it gives no name of its own."""
        return self.name

    @property
    def lock_version(self) -> int:
        """Its table model's format (``lockfile.table_version``): the model carries it."""
        from envforge.lockfile import table_version

        return table_version(self.expect)

    def artifacts(self, pspec: PlatformSpec) -> Sequence[LockedArtifact]:
        return ()

    def compat_checks(self, pspec: PlatformSpec, pins: Mapping[str, Sequence[Pin]],
                      report: Report) -> None:
        return None

    def kernel_device(self, pspec: PlatformSpec) -> tuple[str, str]:
        return "cpu", "float64"

    def steps(self, ctx: StepContext) -> Sequence[Step]:
        return ()

    def env_edits(self, ctx: StepContext) -> Sequence[EnvEdit]:
        return ()

    def probe_request(self, expect: Expectations) -> Mapping[str, Any]:
        return {}

    def verify_rows(self, report: Mapping[str, Any], expect: Expectations, *,
                    prefix: str | None, gpu_expected: bool) -> Iterable[CheckRow]:
        return ()

    def doctor_rules(self) -> tuple[Rule, ...]:
        return ()

    def gpu_intended(self, facts: HostFacts, expected: Expected | None) -> bool:
        return False

    @property
    def config_model(self) -> type[FrameworkConfig]:
        from envforge.doctor.facts import FrameworkConfig

        return FrameworkConfig

    def doctor_observe(self, *, environ: Mapping[str, str], platform: Platform, cwd: Path,
                       python: str, path: Sequence[SearchEntry], prefix: Path | None,
                       expected: Mapping[str, str]) -> FrameworkConfig:
        return self.config_model()

    def lock_settings(self, expect: Expectations) -> Mapping[str, str]:
        return {}

    def distribution_package(self, name: str) -> str | None:
        return None

    def undeclared_imports(self, versions: Mapping[str, str]) -> Sequence[UndeclaredImport]:
        return ()

    def dlopen_names(self) -> tuple[str, ...]:
        return ()

    def error_hints(self) -> tuple[tuple[str, str], ...]:
        return ()

    def compiler_need(self, expect: Expectations) -> CompilerNeed | None:
        return None

    def before_probe(self, ctx: StepContext) -> None:
        return None

    def after_probe(self, ctx: StepContext, *, passed: bool) -> None:
        return None

    def before_run(self, ctx: StepContext) -> None:
        return None

    def after_run(self, ctx: StepContext, *, succeeded: bool) -> None:
        return None

    def resolver_overrides(self, requirements: Sequence[str]) -> tuple[str, ...]:
        return ()

    def device_rows(self, report: Mapping[str, Any], expect: Expectations, *,
                    gpu_expected: bool) -> Sequence[CheckRow]:
        return ()

    def kernel_checks(self, report: Mapping[str, Any], kernel: str) -> Sequence[CheckRow]:
        return ()

    def timing_rows(self, report: Mapping[str, Any], expect: Expectations, *,
                    gpu_expected: bool) -> Sequence[CheckRow]:
        return ()

    def gpu_active(self, report: Mapping[str, Any]) -> bool | None:
        return None

    def report_device(self, report: Mapping[str, Any]) -> str | None:
        return None

    def legacy_requirement(self, text: str) -> tuple[str, str] | None:
        return None

    def compiler_note(self, requirement: str) -> str | None:
        return None
