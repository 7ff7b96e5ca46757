"""Doctor's rules: pure functions from the observed host (and a lock's expectations, when a
spec is given) to findings. Each reads only ``HostFacts``/``Expected`` and the knowledge
base, and names the knowledge row it rests on."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from envforge.doctor.facts import Expected, HostFacts
from envforge.doctor.model import Finding, sort_findings
from envforge.doctor.rules import cuda, cudnn, gpu, packages

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
)


def all_rules() -> tuple[Rule, ...]:
    """The core's rules, then each pack's."""
    from envforge.packs import PACKS

    return (*RULES, *(rule for pack in PACKS.values() for rule in pack.doctor_rules()))


def diagnose(facts: HostFacts, expected: Expected | None = None,
             rules: Iterable[Rule] | None = None) -> tuple[Finding, ...]:
    """Every finding of every rule (the core's and the packs'), errors first."""
    chosen = all_rules() if rules is None else rules
    return sort_findings([finding for rule in chosen for finding in rule(facts, expected)])
