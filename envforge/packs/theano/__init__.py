"""The Theano-PyMC pack: ``[theano]``, its compat rules, flags in the lock, the .theanorc
step, the probe and its config rows, doctor's config rules, its knowledge (``theano*.toml``),
and its GPU back-end's C library, libgpuarray (``libgpuarray.toml``, the links step, doctor's
library-name rules).

Heavy parts are imported when called, so the registry stays cheap to import.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from envforge.packs.base import ModulePack
from envforge.packs.theano.expect import TheanoExpect, migrate_v1, migrate_v2
from envforge.packs.theano.kernels import KERNELS
from envforge.packs.theano.section import SPEC_KEYS, TheanoSection

if TYPE_CHECKING:
    from envforge.doctor.facts import Expected, FrameworkConfig, HostFacts, SearchEntry
    from envforge.doctor.fixes import FixPlanner
    from envforge.doctor.rules import Rule
    from envforge.envvars import EnvEdit
    from envforge.expectations import Kernel
    from envforge.knowledge.models import InitDebianRow, UndeclaredImport
    from envforge.lockfile import Expectations, LockedArtifact
    from envforge.packs.base import Migration
    from envforge.spec import Platform, PlatformSpec
    from envforge.steps.base import CompilerNeed, Step, StepContext
    from envforge.suite.framework import FrameworkSuite
    from envforge.verify import CheckRow

PROBE_SCRIPT = Path(__file__).parent / "probe.py"


class TheanoPack(ModulePack):
    name = "theano"
    display_name = "Theano"
    section = TheanoSection
    expect = TheanoExpect
    implicit = True
    knowledge = ("theano", "theano_suite", "libgpuarray")
    probe: Path | None = PROBE_SCRIPT
    probe_modules = ("numpy", "scipy", "six", "pygpu", "theano")
    lock_version = TheanoExpect.lock_version
    lock_migrations: Mapping[int, Migration] = {0: migrate_v1, 1: migrate_v2}
    doctor_variables = ("THEANORC", "THEANO_FLAGS")
    doctor_packages = ("theano", "numpy", "scipy", "pygpu")
    # its GPU back-end, pygpu and libgpuarray, by their PyPI, conda and Debian names
    stack_names: Mapping[str, str] = {
        "theano-pymc": "theano", "theano": "theano", "pygpu": "pygpu",
        "libgpuarray": "libgpuarray", "python3-pygpu": "pygpu", "libgpuarray3": "libgpuarray"}
    spec_keys: Mapping[str, tuple[str, str]] = SPEC_KEYS
    init_frameworks: Sequence[Mapping[str, Any]] = ()  # its row is the core file's
    kernels: Mapping[str, Kernel] = KERNELS
    artifact_roles = ()

    def artifacts(self, pspec: PlatformSpec) -> Sequence[LockedArtifact]:
        return ()

    @property
    def fix_kinds(self) -> Mapping[str, FixPlanner]:
        from envforge.packs.theano.doctor_fixes import config_fix_steps

        return {"theanorc-edit": config_fix_steps}

    def steps(self, ctx: StepContext) -> Sequence[Step]:
        """libgpuarray's library names where the lock holds pygpu and a CUDA toolkit, then
        the .theanorc."""
        from envforge.packs.theano.theanorc import TheanorcStep

        expect = ctx.lock.expect
        if expect.cuda is None or "pygpu" not in expect.versions:
            return (TheanorcStep(),)
        from envforge.packs.theano.libgpuarray_links import LibgpuarrayLinksStep

        return (LibgpuarrayLinksStep(), TheanorcStep())

    def env_edits(self, ctx: StepContext) -> Sequence[EnvEdit]:
        from envforge.envvars import EnvEdit
        from envforge.packs.theano.expect import theano_expect
        from envforge.packs.theano.theanorc import env_theanorc

        if theano_expect(ctx.lock.expect).theanorc != "env":
            return ()
        return (EnvEdit(name="THEANORC", op="set", value=str(env_theanorc(ctx))),)

    def device_rows(self, report: Mapping[str, Any], expect: Expectations, *,
                    gpu_expected: bool) -> Sequence[CheckRow]:
        from envforge.packs.theano.verify_gpu import gpu_rows

        return gpu_rows(report, expect, gpu_expected)

    def kernel_checks(self, report: Mapping[str, Any], kernel: str) -> Sequence[CheckRow]:
        from envforge.packs.theano.verify_gpu import scan_row

        return [scan_row(report)] if kernel == "scan" else []

    def timing_rows(self, report: Mapping[str, Any], expect: Expectations, *,
                    gpu_expected: bool) -> Sequence[CheckRow]:
        from envforge.packs.theano.verify_gpu import timing_rows

        return timing_rows(report, expect, gpu_expected=gpu_expected)

    def gpu_active(self, report: Mapping[str, Any]) -> bool | None:
        from envforge.packs.theano.verify_gpu import gpu_active

        return gpu_active(report)

    def report_device(self, report: Mapping[str, Any]) -> str | None:
        from envforge.packs.theano.verify_gpu import report_device

        return report_device(report)

    def doctor_rules(self) -> tuple[Rule, ...]:
        from envforge.packs.theano.doctor_compilers import compiler_rules, windows_rules
        from envforge.packs.theano.doctor_config import config_rules
        from envforge.packs.theano.doctor_libgpuarray import linux_rules
        from envforge.packs.theano.doctor_libgpuarray import windows_rules as dll_names
        from envforge.packs.theano.doctor_packages import (
            blas_rules,
            distribution_rules,
            environment_rules,
            release_rules,
        )
        from envforge.packs.theano.doctor_rules import cudnn_rules, root_rules, windows_dll_rules

        # libgpuarray's library names first, as when they were the core's last rules
        return (dll_names, linux_rules, windows_dll_rules, compiler_rules, windows_rules,
                environment_rules, distribution_rules, release_rules, blas_rules, root_rules,
                cudnn_rules, config_rules)

    def gpu_intended(self, facts: HostFacts, expected: Expected | None) -> bool:
        from envforge.packs.theano.doctor_common import cuda_intended

        return cuda_intended(facts, expected)

    def dlopen_names(self) -> tuple[str, ...]:
        from envforge.packs.theano.libgpuarray import linux_loader_names

        return linux_loader_names()

    def doctor_observe(self, *, environ: Mapping[str, str], platform: Platform, cwd: Path,
                       python: str, path: Sequence[SearchEntry], prefix: Path | None,
                       expected: Mapping[str, str]) -> FrameworkConfig:
        from envforge.packs.theano.doctor_observe import observe_theano

        return observe_theano(environ=environ, platform=platform, cwd=cwd, python=python,
                              path=path, prefix=prefix, expected=expected)

    @property
    def config_model(self) -> type[FrameworkConfig]:
        from envforge.packs.theano.doctor_common import TheanoConfig

        return TheanoConfig

    def lock_settings(self, expect: Expectations) -> Mapping[str, str]:
        from envforge.packs.theano.expect import theano_expect

        return theano_expect(expect).flags

    def distribution_package(self, name: str) -> str | None:
        from envforge.packs.theano.knowledge import theano_distribution

        row = theano_distribution(name)
        return None if row is None else row.installs

    def undeclared_imports(self, versions: Mapping[str, str]) -> Sequence[UndeclaredImport]:
        from envforge.knowledge import UnknownFactError
        from envforge.packs.theano.knowledge import theano_rules

        theano = versions.get("theano-pymc") or versions.get("theano")
        if theano is None:
            return ()
        try:
            return theano_rules(theano).undeclared
        except UnknownFactError:
            return ()

    @property
    def suite(self) -> FrameworkSuite:
        from envforge.packs.theano.suite import THEANO_SUITE

        return THEANO_SUITE

    def resolver_overrides(self, requirements: Sequence[str]) -> tuple[str, ...]:
        from envforge.packs.theano.knowledge import displaced_originals

        return displaced_originals(requirements)

    def compiler_need(self, expect: Expectations) -> CompilerNeed:
        from envforge.packs.theano.expect import theano_expect
        from envforge.steps.base import CompilerNeed

        return CompilerNeed(
            framework="Theano", setting="[theano] cxx",
            cxx=theano_expect(expect).flags.get("cxx"),
            nvcc_note="Theano compiles its GPU kernels with NVRTC, not nvcc, and its C code "
                      "with g++ alone, so Theano itself is not affected")

    def before_probe(self, ctx: StepContext) -> None:
        from envforge.packs.theano.compilecache import before_probe

        before_probe(ctx)

    def after_probe(self, ctx: StepContext, *, passed: bool) -> None:
        from envforge.packs.theano.compilecache import after_probe

        after_probe(ctx, passed=passed)

    def before_run(self, ctx: StepContext) -> None:
        from envforge.packs.theano.compilecache import before_run

        before_run(ctx)

    def after_run(self, ctx: StepContext, *, succeeded: bool) -> None:
        from envforge.packs.theano.compilecache import after_run

        after_run(ctx, succeeded=succeeded)

    def legacy_requirement(self, text: str) -> tuple[str, str] | None:
        from envforge.packs.theano.legacy import legacy_requirement

        return legacy_requirement(text)

    def compiler_note(self, requirement: str) -> str | None:
        from envforge.packs.theano.legacy import compiler_note

        return compiler_note(requirement)

    @property
    def init_debian(self) -> Sequence[InitDebianRow]:
        """theano.toml's [[init_debian]]: Debian's OpenBLAS and blas_ldflags on linux-64."""
        from envforge.packs.theano.knowledge import theano_knowledge

        return theano_knowledge().init_debian

    def error_hints(self) -> tuple[tuple[str, str], ...]:
        from envforge.packs.theano.knowledge import error_hints
        from envforge.packs.theano.libgpuarray import loader_hints

        return (*error_hints(), *loader_hints())


THEANO = TheanoPack()
