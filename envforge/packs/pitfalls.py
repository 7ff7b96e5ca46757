"""Combinations of releases known not to work, as a pack's knowledge states them, and the
one verdict on them that compat (the spec's pins), lock (the resolved versions) and doctor
(what an environment has installed) each word their own way.

A row's ``when`` names each part (a PyPI distribution by its canonical name, ``python``,
``cuda``, ``cudnn``) with the PEP 440 range of releases that fail together; it fires only
when every part is known and every release a part allows lies in its range, so an unpinned
part never fires at lock time from the spec alone (the resolved versions are judged again).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import Field, model_validator

from envforge.knowledge.models import Range, Row
from envforge.model import Frozen

if TYPE_CHECKING:
    from envforge.compat import Pin, Releases
    from envforge.knowledge.models import UndeclaredImport
    from envforge.spec import PlatformSpec


class PitfallCap(Frozen):
    """The requirement a pitfall's other parts need and do not declare, and where they
    import what it keeps (the row's source says so). Without ``requirement``, the core's
    ``[[kept_module]]`` row for the module gives it, the row's part for its distribution
    is the releases outside it, and ``{cap}`` in its fix reads as the requirement
    (``PitfallRow._capped_by_the_core``)."""

    requirement: str  # PEP 508, of one of the row's parts: ``pillow<7``
    module: str
    imported_at: str


class PitfallRow(Row):
    """One combination known not to work: what breaks, the message users see, the fix."""

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9.-]*$")
    # one part is enough where the pack itself is the other (TensorFlow 2 under [tensorflow])
    when: dict[str, Range] = Field(min_length=1)
    effect: str
    seen: str
    fix: str
    # a part of the error text that names this pitfall, for verify's hints
    error: str | None = None
    # where the other parts' releases import what the capped one removed, undeclared in
    # their metadata: the requirement lock adds beside them (``capped``), so the combination
    # never resolves where only one of its parts is pinned
    cap: PitfallCap | None = None

    @model_validator(mode="before")
    @classmethod
    def _capped_by_the_core(cls, data: Any) -> Any:
        cap = data.get("cap") if isinstance(data, dict) else None
        if not isinstance(cap, dict) or "requirement" in cap or "module" not in cap:
            return data
        from packaging.requirements import Requirement
        from packaging.utils import canonicalize_name

        from envforge.knowledge.models import kept_requirement

        requirement = kept_requirement(cap["module"])
        name = canonicalize_name(Requirement(requirement).name)
        fix = data.get("fix")
        return {**data, "cap": {**cap, "requirement": requirement},
                "when": {**data.get("when", {}), name: outside(requirement)},
                **({"fix": fix.replace("{cap}", requirement)} if isinstance(fix, str) else {})}


def outside(requirement: str) -> str:
    """The releases a one-bound requirement leaves out: ``>=80.9`` for ``setuptools<80.9``."""
    from packaging.requirements import Requirement

    bounds = list(Requirement(requirement).specifier)
    flipped = {"<": ">=", "<=": ">", ">": "<=", ">=": "<"}
    if len(bounds) != 1 or bounds[0].operator not in flipped:
        raise ValueError(f"{requirement}: a cap from modules.toml must have one bound "
                         "(<, <=, > or >=)")
    return f"{flipped[bounds[0].operator]}{bounds[0].version}"


def fired(rows: Iterable[PitfallRow], parts: Mapping[str, Releases]) -> list[PitfallRow]:
    """The rows whose every part lies in its range, in the rows' order."""
    from envforge.compat import interval

    found = []
    for row in rows:
        ranges = {name: interval(spec) for name, spec in row.when.items()}
        if all(name in parts and wanted is not None and parts[name].within(wanted)
               for name, wanted in ranges.items()):
            found.append(row)
    return found


def spec_parts(pspec: PlatformSpec, pins: Mapping[str, Sequence[Pin]],
               aliases: Mapping[str, str] | None = None) -> dict[str, Releases]:
    """Each part the spec pins, as the releases all its pins allow together; ``cuda`` and
    ``cudnn`` from their sections; ``aliases`` maps other distribution names onto a part
    (``tensorflow-gpu`` -> ``tensorflow``)."""
    from envforge.compat import interval

    parts: dict[str, Releases] = {}
    for name, found in pins.items():
        key = (aliases or {}).get(name, name)
        for pin in found:
            parts[key] = parts[key].intersect(pin.releases) if key in parts else pin.releases
    for key, section in (("cuda", pspec.cuda), ("cudnn", pspec.cudnn)):
        if section is None:
            continue
        version = section.version
        number = version.removeprefix(">=").removeprefix("==")
        allowed = interval(version if version.startswith(">=") else f"=={number}")
        if allowed is not None:
            parts[key] = allowed
    return parts


def exact_parts(versions: Mapping[str, str],
                aliases: Mapping[str, str] | None = None) -> dict[str, Releases]:
    """Each part at one known release (a lock's versions, an environment's installed ones)."""
    from envforge.compat import interval

    parts: dict[str, Releases] = {}
    for name, version in versions.items():
        allowed = interval(f"=={version}")
        if allowed is not None:
            parts[(aliases or {}).get(name, name)] = allowed
    return parts


def error_hints(rows: Iterable[PitfallRow]) -> tuple[tuple[str, str], ...]:
    """(text the failure prints, what fixes it) of each row that names its error text."""
    return tuple((row.error, f"{row.fix} (source: {row.source})") for row in rows
                 if row.error is not None)


def message(row: PitfallRow, parts: Mapping[str, str]) -> str:
    """The conflict as one line: the parts as written, what breaks and what users see."""
    named = " with ".join(parts.get(name, f"{name} {spec}") for name, spec in row.when.items())
    return f"{named}: {row.effect}; at run time: {row.seen}"


def pack_caps(versions: Mapping[str, str], parts: Mapping[str, str],
              rows: Callable[[], Iterable[PitfallRow]]) -> tuple[UndeclaredImport, ...]:
    """A pack's ``undeclared_imports`` from its pitfalls' caps: ``versions`` read by the
    pack's names for its parts (``tensorflow-gpu`` as ``tensorflow``), and ``rows`` (its
    knowledge) read only where the lock holds one of ``parts``."""
    if not any(name in versions for name in parts):
        return ()
    return capped(rows(), {parts.get(name, name): version for name, version in versions.items()})


def capped(rows: Iterable[PitfallRow], versions: Mapping[str, str]
           ) -> tuple[UndeclaredImport, ...]:
    """Each row's cap whose other parts all lie in their ranges at ``versions`` (canonical
    name -> release, as resolved): torchvision 0.4.0 imports ``PILLOW_VERSION``, gone in
    Pillow 7, while its metadata asks only ``pillow>=4.1.1``. The caller's lock adds the
    requirement and resolves again, as for any undeclared import."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    from envforge.knowledge.models import UndeclaredImport, in_range

    found = []
    for row in rows:
        if row.cap is None:
            continue
        kept = canonicalize_name(Requirement(row.cap.requirement).name)
        others = {name: spec for name, spec in row.when.items() if name != kept}
        if others and all(name in versions and in_range(versions[name], spec)
                          for name, spec in others.items()):
            found.append(UndeclaredImport(
                module=row.cap.module, requirement=row.cap.requirement,
                imported_at=row.cap.imported_at, needed_by=row.effect, source=row.source))
    return tuple(found)
