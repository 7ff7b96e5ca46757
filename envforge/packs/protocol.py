"""What a framework pack brings, so that the core (Python, packages, CUDA/cuDNN/driver, the
kernels' NumPy references) never names a framework.

Modelled on pre-commit's ``lang_base.Language``: a pack is a plain object whose attributes
and methods the core calls at fixed points; the app layer loads the packs into one
``envforge.packapi.Registry`` and hands it down, each caller typing it by the Protocol of the
members it calls. A pack's spec section is ``[NAME]``, its lock expectations are
``[platforms.X.expect.NAME]``; both are its own frozen models.

A probe reads the request (``envforge.verify.build_request`` plus ``probe_request``) as
JSON on stdin and prints one report. The core judges its shared fields: ``format``,
``error``, ``python.version``, ``versions`` and ``import_errors`` (by module),
``distributions``, ``kernels`` (each with ``checksum``, ``samples``, ``output_shape``,
``run_s``, the CPU comparison), and ``nvidia``;
anything else (Theano's ``theano``, ``blas``, ``gpu``, each kernel's ``ops``/``gpu_ops``,
``scan``, ``gemm_timing``) is the pack's, for its ``verify_rows``, ``device_rows``,
``kernel_checks`` and ``timing_rows``.
Verify runs the probe of every pack the lock holds that brings one, in registry order, and
judges their reports merged (``envforge.verify.merge_reports``): the core's kernels go to
the first of them (the framework the kernels' device is), the others get none and report
their own part (Keras on its back-end).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

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

class Report(Protocol):
    """How a pack's compat check reports a conflict (compat words it, and declares the same
    shape beside itself): rule id, message, source, fix, and ``repairs``: requirements that
    each would resolve it, which init tries in its draft."""

    def __call__(self, rule: str, message: str, source: str, fix: str, /, *,
                 repairs: tuple[str, ...] = ()) -> None: ...


# A lock's platform table whose pack table is of one format version, rewritten in place so
# that the pack's table has the next one's shape (it may take keys from the core tables).
Migration = Callable[[dict[str, Any]], None]


class FrameworkPack(Protocol):
    """One framework's part in every layer; the core calls it, never the other way round."""

    @property
    def name(self) -> str:
        """The spec section, the lock's expect key, the pack's folder."""

    @property
    def display_name(self) -> str:
        """How findings name the framework ("PyTorch"): its ``FrameworkConfig.name`` where
        its ``doctor_observe`` gives none."""

    @property
    def section(self) -> type[Frozen]:
        """The model of [NAME]."""

    @property
    def expect(self) -> type[Frozen]:
        """The model of [platforms.X.expect.NAME]."""

    @property
    def implicit(self) -> bool:
        """Mounted with its defaults where a spec names no pack's section (Theano: every
        stack envforge locked before packs existed is a Theano stack)."""

    @property
    def knowledge(self) -> tuple[str, ...]:
        """Its knowledge files, NAME.toml in its own package (Theano's ``theano`` and
        ``theano_suite``), which the pack types and reads itself; named here so that the
        data tests hold every row of them to the rule that each names its source."""

    @property
    def probe(self) -> Path | None:
        """A script the environment's Python runs, started by envforge/probes/proberuntime.py
        (which it imports as ``proberuntime``); it prints the report verify judges."""

    @property
    def probe_modules(self) -> tuple[str, ...]:
        """Names in the lock's versions that its probe imports and reports."""

    @property
    def kernels(self) -> Mapping[str, Kernel]:
        """Verify kernels of its own, by name (Theano's scan), which a spec mounting the pack
        may name in ``[verify] kernels`` beside the core's; its probe runs them."""

    @property
    def artifact_roles(self) -> tuple[str, ...]:
        """Roles of its own for files outside any package index (the core's: cudnn,
        cuda-installer, compiler), which a lock may then hold and ``--artifact`` take."""

    def artifacts(self, pspec: PlatformSpec) -> Sequence[LockedArtifact]:
        """The files of its roles the platform needs, with their hashes, for the lock; its
        steps read them through ``steps.base.supplied_artifact``."""

    @property
    def lock_version(self) -> int:
        """The format of its lock table, written beside its keys (``lock_version``) where it
        is past 1; versioned by the pack, apart from the core's ``LOCK_VERSION``. The table's
        model declares it (a ``lock_version`` class variable, ``lockfile.table_version``), as
        a lock is written with no registry at hand; this is that number."""

    @property
    def lock_migrations(self) -> Mapping[int, Migration]:
        """Its table's format N -> how it becomes N + 1 (0: a lock of core format 1, whose
        core tables held the pack's keys)."""

    def compat_checks(self, pspec: PlatformSpec, pins: Mapping[str, Sequence[Pin]],
                      report: Report) -> None:
        """Report each combination of the spec's pins known not to work with the framework."""

    def expectations(self, pspec: PlatformSpec, versions: Mapping[str, str]) -> Frozen:
        """What the lock holds for verify, derived from the spec and the locked versions."""

    def kernel_device(self, pspec: PlatformSpec) -> tuple[str, str]:
        """(device, float type) the framework runs the verify kernels with."""

    def steps(self, ctx: StepContext) -> Sequence[Step]:
        """Steps after the packages and CUDA, before activation."""

    def env_edits(self, ctx: StepContext) -> Sequence[EnvEdit]:
        """Variables the activated environment sets for the framework, after the core's."""

    def probe_request(self, expect: Expectations) -> Mapping[str, Any]:
        """The pack's fields of the probe's request."""

    def verify_rows(self, report: Mapping[str, Any], expect: Expectations, *,
                    prefix: str | None, gpu_expected: bool) -> Iterable[CheckRow]:
        """Rows judging the pack's part of a probe report."""

    def doctor_rules(self) -> tuple[Rule, ...]:
        """Doctor's rules about the framework on a host."""

    @property
    def fix_kinds(self) -> Mapping[str, FixPlanner]:
        """Its kinds of doctor fix action (``FixAction.kind``: Theano's ``theanorc-edit``)
        -> how a group of them becomes the steps ``doctor --fix`` runs."""

    def gpu_intended(self, facts: HostFacts, expected: Expected | None) -> bool:
        """Whether the framework's own settings on this host (a device flag) ask for an NVIDIA
        GPU through CUDA: doctor's driver and GPU rules (all NVIDIA's) then apply. A device
        of another vendor's (OpenCL) is the pack's own rules' business."""

    @property
    def config_model(self) -> type[FrameworkConfig]:
        """The model of what ``doctor_observe`` returns: FrameworkConfig, or its own extension
        of it holding what only the pack's rules read (Theano: the .theanorc a fix writes)."""

    @property
    def doctor_variables(self) -> tuple[str, ...]:
        """Environment variables steering the framework, kept in doctor's facts."""

    def doctor_observe(self, *, environ: Mapping[str, str], platform: Platform, cwd: Path,
                       python: str, path: Sequence[SearchEntry], prefix: Path | None,
                       expected: Mapping[str, str]) -> FrameworkConfig:
        """The framework's configuration on this host (doctor's only impure pack call);
        ``expected``: the settings the lock holds for it (``lock_settings``)."""

    def lock_settings(self, expect: Expectations) -> Mapping[str, str]:
        """The settings the lock holds for the framework (``{prefix}`` unfilled), which
        doctor judges the host against."""

    def distribution_package(self, name: str) -> str | None:
        """The package a distribution of the framework installs (Theano-PyMC: ``theano``);
        None for any other distribution. Doctor counts versions by package."""

    @property
    def doctor_packages(self) -> tuple[str, ...]:
        """Packages (as doctor counts them: ``distribution_package``) doctor shows in its
        host table and checks against the lock."""

    def dlopen_names(self) -> tuple[str, ...]:
        """Linux library names the framework (or a library of its own) dlopens by exactly
        these unversioned names, which only a -dev package, a link or the loader's cache
        provides (Theano: libgpuarray's ``libnvrtc.so``): doctor looks them up in
        ``ldconfig -p``."""

    def error_hints(self) -> tuple[tuple[str, str], ...]:
        """(text a failure prints, what fixes it) for failures the framework explains."""

    @property
    def stack_names(self) -> Mapping[str, str]:
        """Its distributions' names, per source (PyPI, conda, Debian), -> the name the lock's
        versions give the framework (Theano-PyMC -> ``theano``)."""

    def undeclared_imports(self, versions: Mapping[str, str]) -> Sequence[UndeclaredImport]:
        """What the framework release in ``versions`` (canonical name -> version) imports
        without declaring it; nothing where ``versions`` holds no release of it."""

    def compiler_need(self, expect: Expectations) -> CompilerNeed | None:
        """What the framework asks of the host's C++ compiler (Theano: ``[theano] cxx``, as
        its locked flags hold it): apply reads the lock, not the spec."""

    def before_probe(self, ctx: StepContext) -> None:
        """Just before verify's probe runs (Theano: its compile cache seeded from the store)."""

    def after_probe(self, ctx: StepContext, *, passed: bool) -> None:
        """Once the probe's report was judged, ``passed`` when no row failed (Theano: what it
        compiled kept for the lock's next prefix)."""

    def before_run(self, ctx: StepContext) -> None:
        """Just before ``envforge run``'s command starts in the environment (Theano: its
        compile cache seeded from the store)."""

    def after_run(self, ctx: StepContext, *, succeeded: bool) -> None:
        """Once ``envforge run``'s command ended, ``succeeded`` when it exited 0 (Theano: what
        it compiled added to the store)."""

    def resolver_overrides(self, requirements: Sequence[str]) -> tuple[str, ...]:
        """uv ``--override`` lines the framework's distributions need when ``requirements``
        name them: another distribution installing the same package kept out (Theano-PyMC
        displaces the original Theano a dependency asks for)."""

    @property
    def spec_keys(self) -> Mapping[str, tuple[str, str]]:
        """``NAME.key`` -> (what it means, an example as TOML): the spec reference's rows."""

    @property
    def suite(self) -> FrameworkSuite | None:
        """Its own tests for ``verify --suite``; None where envforge knows none."""

    def device_rows(self, report: Mapping[str, Any], expect: Expectations, *,
                    gpu_expected: bool) -> Sequence[CheckRow]:
        """Rows judging whether the framework ran on its device, after every pack's
        ``verify_rows`` (Theano: its gpuarray back-end and each kernel's GPU ops)."""

    def kernel_checks(self, report: Mapping[str, Any], kernel: str) -> Sequence[CheckRow]:
        """Rows after a core kernel's own (Theano: which implementation ran ``scan``)."""

    def timing_rows(self, report: Mapping[str, Any], expect: Expectations, *,
                    gpu_expected: bool) -> Sequence[CheckRow]:
        """Rows after the speedup's that judge the pack's own timings (Theano: its GEMM
        against raw cuBLAS, the lock's ``min_cublas_ratio``)."""

    def gpu_active(self, report: Mapping[str, Any]) -> bool | None:
        """Whether the pack's part of a report says its GPU back-end started (Theano: pygpu
        activated); None where it says nothing. The speedup row is measured only where one
        pack says True."""

    def report_device(self, report: Mapping[str, Any]) -> str | None:
        """The device the pack's part of a report ran the kernels on, for timing charts."""

    def legacy_requirement(self, text: str) -> tuple[str, str] | None:
        """``init``'s rewrite of a requirement naming a predecessor of the framework (the
        original Theano -> Theano-PyMC): the requirement to write and why; None otherwise."""

    def compiler_note(self, requirement: str) -> str | None:
        """Where a repository's ``requirement`` is the framework and it compiles with the
        host's C++ compiler: the comment of the ``[compiler]`` section ``init`` writes."""

    @property
    def init_frameworks(self) -> Sequence[Mapping[str, Any]]:
        """``init``'s rows mounting the pack's section, shaped as ``[[framework]]`` rows of
        knowledge/legacy_names.toml (section, names, reason, source ...), tried after the
        core's: how a pack the core's file does not know gets mounted from requirements."""

    @property
    def init_debian(self) -> Sequence[InitDebianRow]:
        """Debian packages ``init`` adds where it mounts the pack's section on a row's
        platform, with the section's keys on that platform that use them (Theano on
        linux-64: Debian's OpenBLAS, linked by ``blas_ldflags``, as NumPy's wheels keep
        theirs to themselves): a library the framework needs that PyPI's wheels do not give
        it. Written into the spec with the row's reason, so lock, apply and verify take them
        as the user's own; the core picks the rows of the spec's platform."""
