"""Doctor's rules: pure functions from the observed host (and a lock's expectations, when a
spec is given) to findings. Each reads only ``HostFacts``/``Expected`` and the knowledge
base, and names the knowledge row it rests on."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Protocol

from envforge.doctor.facts import Expected, HostFacts
from envforge.doctor.model import Finding, sort_findings
from envforge.doctor.rules import cuda, cudnn, gpu, packages
from envforge.packapi import Pack, Registry

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


class DoctorPack(Pack, Protocol):
    """What doctor's judging asks of a pack: its rules, and whether its own settings on this
    host ask for a GPU."""

    def doctor_rules(self) -> tuple[Rule, ...]: ...

    def gpu_intended(self, facts: HostFacts, expected: Expected | None) -> bool: ...


def all_rules(packs: Registry[DoctorPack]) -> tuple[Rule, ...]:
    """The core's rules, then each pack's."""
    return (*RULES, *(rule for pack in packs for rule in pack.doctor_rules()))


def diagnose(facts: HostFacts, expected: Expected | None = None, *,
             packs: Registry[DoctorPack],
             rules: Iterable[Rule] | None = None) -> tuple[Finding, ...]:
    """Every finding of every rule (the core's and ``packs``'), errors first, each rule
    handed the facts with what ``packs`` answered about them (``judged``)."""
    chosen = all_rules(packs) if rules is None else rules
    facts = judged(facts, expected, packs)
    return sort_findings([finding for rule in chosen for finding in rule(facts, expected)])


def judged(facts: HostFacts, expected: Expected | None,
           packs: Registry[DoctorPack]) -> HostFacts:
    """``facts`` with the packs' answers the rules read (``HostFacts.gpu_frameworks``), asked
    once here: a rule stays a plain function of the facts and never asks the packs."""
    wanting = tuple(pack.name for pack in packs if pack.gpu_intended(facts, expected))
    return facts.model_copy(update={"gpu_frameworks": wanting})
