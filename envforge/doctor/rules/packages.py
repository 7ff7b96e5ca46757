"""What is installed in the environment against what its lock says (whether the framework
takes it: the packs' doctor rules)."""

from __future__ import annotations

from collections.abc import Iterator

from envforge.doctor.facts import Expected, HostFacts
from envforge.doctor.model import Evidence, Finding, Fix


def environment_rules(facts: HostFacts, expected: Expected | None) -> Iterator[Finding]:
    """The spec's environment is not there, or holds other versions than the lock."""
    env = facts.env
    if env is None or expected is None:
        return
    if not env.exists:
        yield Finding(
            id="env.not-applied", severity="warning",
            title=f"no environment at {env.prefix}: the checks below judge the lock's versions",
            evidence=(Evidence(kind="value", where="prefix", text=env.prefix),),
            fix=Fix(text=f"envforge apply {expected.spec}"),
            source=f"{expected.spec} (its lock)")
        return
    for name in facts.packages:
        locked = expected.versions.get(name)
        have = env.versions.get(name)
        if locked is None:
            continue
        if have is None or not (have == locked or have.startswith(locked + ".")):
            yield Finding(
                id="env.not-locked", severity="warning",
                title=f"{name} {have or 'is missing'}"
                      + (f" in {env.prefix}; the lock has {locked}" if have else
                         f" from {env.prefix}; the lock has {locked}"),
                evidence=(Evidence(kind="file", where=env.sources.get(name, env.prefix),
                                   text=f"{name} {have or '(none)'}"),),
                fix=Fix(text=f"envforge apply {expected.spec}"),
                source=f"{expected.spec} (its lock)")


