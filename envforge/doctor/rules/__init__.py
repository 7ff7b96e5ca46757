"""Doctor's rules: pure functions from the observed host (and a lock's expectations, when a
spec is given) to findings. Each reads only ``HostFacts``/``Expected`` and the knowledge
base, and names the knowledge row it rests on."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Protocol

from envforge.doctor.facts import Expected, HostFacts
from envforge.doctor.model import Finding, sort_findings
from envforge.doctor.rules import cuda, cudnn, gpu, libgpuarray, packages
from envforge.doctor.rules.common import GpuPack, judged_with
from envforge.packapi import Registry

Rule = Callable[[HostFacts, Expected | None], Iterable[Finding]]

RULES: tuple[Rule, ...] = (
    gpu.driver_rules,
    gpu.architecture_rules,
    cuda.toolkit_rules,
    cuda.search_path_rules,
    cuda.variable_rules,
    cuda.registry_rules,
    cudnn.placement_rules,
    packages.environment_rules,
    libgpuarray.windows_rules,
    libgpuarray.linux_rules,
)


class DoctorPack(GpuPack, Protocol):
    """What doctor's judging asks of a pack: its rules, and whether it means a GPU."""

    def doctor_rules(self) -> tuple[Rule, ...]: ...


def all_rules(packs: Registry[DoctorPack]) -> tuple[Rule, ...]:
    """The core's rules, then each pack's."""
    return (*RULES, *(rule for pack in packs for rule in pack.doctor_rules()))


def diagnose(facts: HostFacts, expected: Expected | None = None, *,
             packs: Registry[DoctorPack],
             rules: Iterable[Rule] | None = None) -> tuple[Finding, ...]:
    """Every finding of every rule (the core's and ``packs``'), errors first."""
    chosen = all_rules(packs) if rules is None else rules
    with judged_with(packs):
        return sort_findings([finding for rule in chosen for finding in rule(facts, expected)])
