"""Combinations known not to work, found from the spec alone, before anything is resolved.

Versions are read from the spec's pins: PyPI requirements (``numpy==1.19.5``), conda
match specs (``numpy=1.19.5``), Debian package names the knowledge base maps to an
upstream release (``python3-pygpu``), and ``[python] version``. A pin is turned into
the interval of releases it allows, and a rule fires only when every one of those
releases is known to fail: ``numpy>=1.24`` is caught, an unpinned ``numpy`` is not.
A framework's own rules are its pack's (``envforge/packs/NAME/``), fed these pins.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from envforge.errors import CompatibilityError
from envforge.knowledge import (
    cudnn_support,
    debian_package,
    knowledge,
)
from envforge.packapi import Pack, Registry
from envforge.spec import Frozen, Platform, PlatformSpec, Spec


class Report(Protocol):
    """How a compat check reports a conflict (compat words it): rule id, message, source,
    fix, and ``repairs``: requirements that each would resolve it (``torch==1.1.0`` for a
    torchvision 0.3.0 pinned beside torch 1.0.0), which init tries in its draft."""

    def __call__(self, rule: str, message: str, source: str, fix: str, /, *,
                 repairs: tuple[str, ...] = ()) -> None: ...


class Conflict(Frozen):
    """One combination the spec pins that is known not to work, with where that is known from."""

    rule: str
    platform: Platform
    message: str
    source: str
    fix: str
    repairs: tuple[str, ...] = ()  # requirements that would each resolve it (init tries them)


@dataclass(frozen=True)
class Releases:
    """The releases a pin allows; None is unbounded on that side."""

    low: Version | None = None
    low_closed: bool = True
    high: Version | None = None
    high_closed: bool = False

    @property
    def exact(self) -> Version | None:
        return self.low if self.low is not None and self.low == self.high else None

    def within(self, other: Releases) -> bool:
        """Every release allowed here is allowed by ``other``."""
        low_ok = other.low is None or (self.low is not None and (
            self.low > other.low or (self.low == other.low
                                     and (other.low_closed or not self.low_closed))))
        high_ok = other.high is None or (self.high is not None and (
            self.high < other.high or (self.high == other.high
                                       and (other.high_closed or not self.high_closed))))
        return low_ok and high_ok

    def disjoint(self, other: Releases) -> bool:
        """No release allowed here is allowed by ``other``."""
        return _before(self, other) or _before(other, self)

    def intersect(self, other: Releases) -> Releases:
        low, low_closed = self.low, self.low_closed
        if other.low is not None and (low is None or other.low > low or
                                      (other.low == low and not other.low_closed)):
            low, low_closed = other.low, other.low_closed
        high, high_closed = self.high, self.high_closed
        if other.high is not None and (high is None or other.high < high or
                                       (other.high == high and not other.high_closed)):
            high, high_closed = other.high, other.high_closed
        return Releases(low, low_closed, high, high_closed)


def _before(a: Releases, b: Releases) -> bool:
    if a.high is None or b.low is None:
        return False
    return a.high < b.low or (a.high == b.low and not (a.high_closed and b.low_closed))


def _bump(version: Version) -> Version:
    """The first release after every ``version.*``: 0.7 -> 0.8."""
    release = list(version.release)
    release[-1] += 1
    return Version(".".join(map(str, release)))


def interval(specifiers: str) -> Releases | None:
    """The releases a PEP 440 specifier set allows (``!=`` ignored: a superset is safe here),
    local labels dropped (PEP 440: ``==1.4.0`` matches ``1.4.0+cpu``)."""
    try:
        parsed = SpecifierSet(specifiers)
    except InvalidSpecifier:
        return None
    result = Releases()
    for spec in parsed:
        op, text = spec.operator, spec.version
        try:
            if op in ("==", "===") and text.endswith(".*"):
                base = Version(text[:-2])
                part = Releases(base, True, _bump(base), False)
            elif op in ("==", "==="):
                exact = Version(Version(text).public)  # 1.4.0+cpu: a rule on 1.4.0 holds
                part = Releases(exact, True, exact, True)
            elif op == "~=":
                base = Version(text)
                prefix = Version(".".join(map(str, base.release[:-1])))
                part = Releases(base, True, _bump(prefix), False)
            elif op in (">=", ">"):
                part = Releases(Version(text), op == ">=")
            elif op in ("<=", "<"):
                part = Releases(None, True, Version(text), op == "<=")
            else:
                continue
        except InvalidVersion:
            return None
        result = result.intersect(part)
    return result


def _prefix(version: str) -> str:
    """Conda's fuzzy ``=1.0`` means 1.0.*; a full ``=1.0.5`` is taken as that release."""
    version = version.rstrip("*").rstrip(".")
    return f"=={version}" if version.count(".") >= 2 else f"=={version}.*"


_CONDA = re.compile(r"^\s*(?:[^\s:]+::)?([A-Za-z0-9_.\-]+)\s*(?:\[[^\]]*\])?\s*(.*)$")


def conda_pin(match_spec: str) -> tuple[str, Releases | None] | None:
    """(name, releases) of a conda match spec: ``numpy=1.19.5``, ``numpy 1.19.5``, ``numpy>=1.22``.

    None where it is no spec; releases None where they cannot be told (``a|b``, no version).
    """
    match = _CONDA.match(match_spec)
    if match is None:
        return None
    name, rest = match.group(1).lower(), match.group(2).strip()
    if not rest or "|" in rest:
        return name, None
    if rest.startswith("=") and not rest.startswith("=="):
        return name, interval(_prefix(rest[1:].split("=")[0]))
    version = rest.split()[0]
    if version[0].isdigit():
        return name, interval(_prefix(version) if "*" in version else f"=={version}")
    return name, interval(re.sub(r"(\d)=[^,]*$", r"\1", version))


def pypi_pin(requirement: str) -> tuple[str, Releases | None] | None:
    try:
        parsed = Requirement(requirement)
    except InvalidRequirement:
        return None
    return canonicalize_name(parsed.name), interval(str(parsed.specifier))


@dataclass(frozen=True)
class Pin:
    releases: Releases
    written: str  # as the spec says it, for messages


def spec_pins(spec: PlatformSpec) -> dict[str, list[Pin]]:
    """Every version pin of the platform's spec, by package name (``python`` included)."""
    pins: dict[str, list[Pin]] = {}

    def add(found: tuple[str, Releases | None] | None, written: str) -> None:
        if found is not None and found[1] is not None:
            pins.setdefault(found[0], []).append(Pin(found[1], written))

    python = spec.python.version
    add(("python", interval(_prefix(python) if python.count(".") == 1 else f"=={python}")),
        f"[python] version = {python}")
    for requirement in spec.pypi.packages:
        add(pypi_pin(requirement), f"pypi {requirement}")
    for match_spec in spec.conda.packages:
        add(conda_pin(match_spec), f"conda {match_spec}")
    if spec.debian is not None:
        for package in spec.debian.packages:
            row = debian_package(spec.debian.suite, package)
            if row is not None:
                add((row.provides, interval(f"=={row.version}")),
                    f"debian {package} ({row.provides} {row.version})")
    return pins


def exact_pin(pins: Mapping[str, Sequence[Pin]], name: str) -> Version | None:
    """The one release the pins of ``name`` agree on; None when they allow more or disagree."""
    versions = {pin.releases.exact for pin in pins.get(name, [])}
    versions.discard(None)
    return versions.pop() if len(versions) == 1 else None


class CompatPack(Pack, Protocol):
    """What the compatibility check asks of a pack: its own rules, fed the spec's pins."""

    def compat_checks(self, pspec: PlatformSpec, pins: Mapping[str, Sequence[Pin]],
                      report: Report) -> None: ...


def check_platform_spec(spec: PlatformSpec, registry: Registry[CompatPack]) -> list[Conflict]:
    """Every known conflict of one platform's view of the spec, in a stable order."""
    found: list[Conflict] = []

    def conflict(rule: str, message: str, source: str, fix: str, /, *,
                 repairs: tuple[str, ...] = ()) -> None:
        found.append(Conflict(rule=rule, platform=spec.platform, message=message,
                              source=source, fix=fix, repairs=repairs))

    pins = spec_pins(spec)
    _check_cudnn_cuda(spec, conflict)
    _check_debian_python(spec, conflict)
    for pack in registry.active(spec.packs):
        pack.compat_checks(spec, pins, conflict)
    return found


def ensure_compatible(spec: Spec, registry: Registry[CompatPack]) -> None:
    """Raise CompatibilityError for the first conflict of any platform, in the spec's order."""
    for platform in spec.project.platforms:
        conflicts = check_platform_spec(spec.for_platform(platform), registry)
        if conflicts:
            first = conflicts[0]
            line, key = pin_place(spec, platform, first.message)
            raise CompatibilityError(f"{platform}: {first.message}", source=first.source,
                                     fix=first.fix, path=spec.source, line=line, key=key,
                                     repairs=first.repairs)


# How spec_pins writes a pin -> the key it comes from.
_PIN_KEYS = (("[python] version", ("python", "version")), ("pypi ", ("pypi", "packages")),
             ("conda ", ("conda", "packages")), ("debian ", ("debian", "packages")))


def pin_place(spec: Spec, platform: Platform, message: str) -> tuple[int | None, str | None]:
    """The line and key of the first pin a conflict's message names, as the spec writes it;
    (None, None) when it names none. A platform's own ``version`` replaces the shared one, so
    it is named first; its ``packages`` are added to the shared ones, which are named first."""
    pins = [pin.written for found in spec_pins(spec.for_platform(platform)).values()
            for pin in found if pin.written in message]
    for written in sorted(pins, key=message.find):
        for prefix, (section, key) in _PIN_KEYS:
            if not written.startswith(prefix):
                continue
            shared, own = (section, key), (section, "platform", platform, key)
            item = _item_line(spec, platform, section, written.removeprefix(prefix))
            if item is not None:
                return item, ".".join(shared)
            for path in ((own, shared) if key == "version" else (shared, own)):
                if path in spec.key_lines:
                    return spec.key_lines[path], ".".join(path)
    return None, None


def _item_line(spec: Spec, platform: Platform, section: str, written: str) -> int | None:
    """The line of the pin itself inside its ``packages = [...]``: the platform's view lists
    the shared values first, then the platform's own."""
    pspec = spec.for_platform(platform)
    values: tuple[str, ...] = (
        pspec.pypi.packages if section == "pypi" else pspec.conda.packages
        if section == "conda" else pspec.debian.packages if pspec.debian is not None else ())
    value = written.split(" (", 1)[0] if section == "debian" else written
    if value not in values:
        return None
    index = values.index(value)
    shared = sum(1 for path in spec.key_lines if len(path) == 3
                 and path[:2] == (section, "packages"))
    path = ((section, "packages", str(index)) if index < shared
            else (section, "platform", platform, "packages", str(index - shared)))
    return spec.key_lines.get(path)


def _check_cudnn_cuda(spec: PlatformSpec, conflict: Report) -> None:
    if spec.cudnn is None or spec.cuda is None:
        return
    row = cudnn_support(spec.cudnn.version)
    if row is None:
        return
    cuda = spec.cuda.number
    ok = row.supports(cuda) if spec.cuda.exact else row.supports_some_at_least(cuda)
    if ok:
        return
    built_for = [other.cudnn for other in knowledge().cudnn.cuda_support
                 if (other.supports(cuda) if spec.cuda.exact
                     else other.supports_some_at_least(cuda))]
    fix = (f"pin a cuDNN built for CUDA {spec.cuda.version} ({', '.join(built_for)})"
           if built_for else f"pin a CUDA that cuDNN {spec.cudnn.version} exists for")
    conflict("cudnn-cuda",
             f"cuDNN {spec.cudnn.version} is not built for CUDA {spec.cuda.version} "
             f"(it exists for CUDA {', '.join(row.cuda)})", row.source, fix)


def _check_debian_python(spec: PlatformSpec, conflict: Report) -> None:
    if spec.debian is None:
        return
    for package in spec.debian.packages:
        row = debian_package(spec.debian.suite, package)
        if row is None or row.python is None or row.python == spec.python.minor:
            continue
        conflict("debian-python",
                 f"Debian {row.suite}'s {package} is built for Python {row.python}, "
                 f"but [python] version is {spec.python.version}", row.source,
                 f"set [python] version = \"{row.python}\", or take {row.provides} "
                 "from another source")


