"""An envforge pack for six, shipped as its own distribution (``envforge-six``): ``[six]``
names the ``six.moves`` modules a project imports; the lock holds them with the release
that must provide them; verify runs this pack's probe in the environment; doctor warns of
an installed six older than a move the lock asks for; ``init`` mounts ``[six]`` for a
repository whose requirements name six.

It imports only what envforge publishes to packs (``envforge.packs.base``, the models,
``CheckRow``, doctor's findings) and is registered through the entry-point group
``envforge.packs`` (pyproject.toml)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from functools import cache
from pathlib import Path
from typing import Any, ClassVar

from packaging.version import Version

from envforge.doctor.facts import Expected, HostFacts
from envforge.doctor.model import Finding, Fix
from envforge.knowledge import read_knowledge
from envforge.lockfile import Expectations
from envforge.packs.base import PackDefaults
from envforge.spec import Frozen, PlatformSpec
from envforge.verify import CheckRow

PROBE = Path(__file__).with_name("probe.py")


class SixSection(Frozen):
    """``[six]``: the ``six.moves`` modules the project imports."""

    moves: tuple[str, ...] = ("urllib.parse",)


class SixExpect(Frozen):
    """``[platforms.X.expect.six]``: the moves verify imports, and the oldest six that has
    them all (from six.toml)."""

    moves: tuple[str, ...]
    needs: str = "1.0.0"


class MoveRow(Frozen):
    name: str
    since: str
    source: str


@cache
def move_rows() -> tuple[MoveRow, ...]:
    return tuple(MoveRow.model_validate(row) for row in read_knowledge("six", __name__)["moves"])


def _needs(moves: Iterable[str]) -> tuple[str, str]:
    """(oldest release with every move, the source saying so)."""
    rows = [row for row in move_rows() if row.name in set(moves)]
    if not rows:
        return "1.0.0", ""
    newest = max(rows, key=lambda row: Version(row.since))
    return newest.since, newest.source


def _section(pspec: PlatformSpec) -> SixSection:
    section = pspec.packs["six"]
    assert isinstance(section, SixSection)
    return section


def _map(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _expect(expect: Expectations) -> SixExpect | None:
    table = expect.packs.get("six")
    return table if isinstance(table, SixExpect) else None


def older_six_rule(facts: HostFacts, expected: Expected | None) -> Iterator[Finding]:
    """The environment's six lacks a move the lock names (installed by hand over the lock)."""
    installed = facts.env.versions.get("six") if facts.env is not None else None
    if installed is None:
        return
    for row in move_rows():
        if Version(installed) < Version(row.since):
            yield Finding(id="six.moves", severity="warning",
                          title=f"six {installed} has no six.moves.{row.name} "
                                f"(added in {row.since})",
                          fix=Fix(text=f"install six>={row.since} where the project imports "
                                       f"six.moves.{row.name}"),
                          source=row.source)


class SixPack(PackDefaults):
    """What the pack brings beyond PackDefaults' neutral answers (no steps, no compat rules,
    no kernels of its own, table format 1)."""

    name = "six"
    section = SixSection
    expect = SixExpect
    knowledge = ("six",)  # six.toml beside this module, found through envforge
    probe: Path | None = PROBE
    probe_modules = ("six",)
    stack_names: ClassVar[Mapping[str, str]] = {"six": "six"}
    doctor_packages = ("six",)
    spec_keys: ClassVar[Mapping[str, tuple[str, str]]] = {
        "six.moves": ("six.moves modules the project imports; verify imports each",
                      '["urllib.parse"]')}
    init_frameworks: ClassVar[tuple[Mapping[str, Any], ...]] = (
        {"section": "six", "names": ["six"],
         "reason": "the requirements name six: verify imports the six.moves the project uses",
         "source": "envforge-six (a third-party pack)"},)

    def expectations(self, pspec: PlatformSpec, versions: Mapping[str, str]) -> SixExpect:
        moves = _section(pspec).moves
        return SixExpect(moves=moves, needs=_needs(moves)[0])

    def probe_request(self, expect: Expectations) -> Mapping[str, Any]:
        table = _expect(expect)
        return {"six": {"moves": list(table.moves)}} if table is not None else {}

    def verify_rows(self, report: Mapping[str, Any], expect: Expectations, *,
                    prefix: str | None, gpu_expected: bool) -> Iterable[CheckRow]:
        table = _expect(expect)
        if table is None:
            return ()
        found = report.get("six")
        moves = found.get("moves") if isinstance(found, Mapping) else None
        moves = moves if isinstance(moves, Mapping) else {}
        found_version = str(_map(report.get("versions")).get("six", "not imported"))
        new_enough = found_version[:1].isdigit() and Version(found_version) >= Version(table.needs)
        release = CheckRow("six.release", f">= {table.needs}", found_version,
                           "pass" if new_enough else "fail",
                           "" if new_enough else "older than the moves the spec names")
        return (release, *(CheckRow(f"six.moves.{name}", "imports",
                                    str(moves.get(name, "not run")),
                                    "pass" if moves.get(name) == "imports" else "fail")
                           for name in table.moves))

    def doctor_rules(self) -> tuple[Any, ...]:
        return (older_six_rule,)


SIX = SixPack()
