"""Combinations known not to work, found from the spec alone, before anything is resolved.

Versions are read from the spec's pins: PyPI requirements (``numpy==1.19.5``), conda
match specs (``numpy=1.19.5``), Debian package names the knowledge base maps to an
upstream release (``python3-pygpu``), and ``[python] version``. A pin is turned into
the interval of releases it allows, and a rule fires only when every one of those
releases is known to fail: ``numpy>=1.24`` is caught, an unpinned ``numpy`` is not.
Rules that depend on the Theano-PyMC release need it pinned to one release.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from envforge.errors import CompatibilityError
from envforge.knowledge import (
    TheanoRules,
    UnknownFactError,
    cudnn_support,
    cudnn_version_code,
    debian_package,
    erratum_for_flag,
    knowledge,
    map_legacy_theano,
    theano_distribution,
    theano_rules,
)
from envforge.spec import Frozen, Platform, PlatformSpec, Spec
from envforge.theanoflags import FIELD_FLAGS, field_flags

THEANO = "theano-pymc"
_SPEC_SOURCE = "envforge spec format ([theano] table)"

# rule id, message, source, fix
_Report = Callable[[str, str, str, str], None]


class Conflict(Frozen):
    """One combination the spec pins that is known not to work, with where that is known from."""

    rule: str
    platform: Platform
    message: str
    source: str
    fix: str


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
    """The releases a PEP 440 specifier set allows (``!=`` ignored: a superset is safe here)."""
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
                exact = Version(text)
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


def _exact(pins: dict[str, list[Pin]], name: str) -> Version | None:
    versions = {pin.releases.exact for pin in pins.get(name, [])}
    versions.discard(None)
    return versions.pop() if len(versions) == 1 else None


def check_platform_spec(spec: PlatformSpec) -> list[Conflict]:
    """Every known conflict of one platform's view of the spec, in a stable order."""
    found: list[Conflict] = []

    def conflict(rule: str, message: str, source: str, fix: str) -> None:
        found.append(Conflict(rule=rule, platform=spec.platform, message=message,
                              source=source, fix=fix))

    pins = spec_pins(spec)
    _check_cudnn_cuda(spec, conflict)
    _check_debian_python(spec, conflict)
    _check_not_on_pypi(spec, conflict)
    if _check_theano_distributions(spec, conflict):
        return found
    theano = _exact(pins, THEANO)
    if theano is not None:
        try:
            rules = theano_rules(str(theano))
        except UnknownFactError:
            return found
        _check_theano_python(rules, pins, conflict)
        _check_theano_numpy(spec, rules, pins, conflict)
        _check_theano_pygpu(rules, pins, conflict)
        _check_theano_cudnn(spec, rules, conflict)
        _check_theano_flags(spec, rules, conflict)
    return found


def ensure_compatible(spec: Spec) -> None:
    """Raise CompatibilityError for the first conflict of any platform, in the spec's order."""
    for platform in spec.project.platforms:
        conflicts = check_platform_spec(spec.for_platform(platform))
        if conflicts:
            first = conflicts[0]
            raise CompatibilityError(f"{platform}: {first.message}", source=first.source,
                                     fix=first.fix, path=spec.source)


def _theano_requirements(spec: PlatformSpec) -> list[tuple[str, str, str]]:
    """(distribution name, as written, where) of every ``theano`` package the spec names."""
    found = []
    for requirement in spec.pypi.packages:
        pin = pypi_pin(requirement)
        row = theano_distribution(pin[0]) if pin else None
        if row is not None:
            found.append((row.name, requirement, "pypi"))
    for match_spec in spec.conda.packages:
        conda = conda_pin(match_spec)
        row = theano_distribution(conda[0]) if conda else None
        if row is not None:
            found.append((row.name, match_spec, "conda"))
    return found


def _check_theano_distributions(spec: PlatformSpec, conflict: _Report) -> bool:
    """Theano and Theano-PyMC both install ``theano/``; envforge's rules are for Theano-PyMC.
    True when the spec was refused here (the release rules then have nothing to judge)."""
    named = _theano_requirements(spec)
    originals = [(name, written, where) for name, written, where in named
                 if (row := theano_distribution(name)) is not None and row.maps_to]
    if not originals:
        return False
    name, written, where = originals[0]
    row = theano_distribution(name)
    assert row is not None and row.maps_to is not None
    others = sorted({n for n, _, _ in named} - {name})
    mapped = map_legacy_theano(written) if where == "pypi" else row.maps_to
    if others:
        conflict("theano-two-distributions",
                 f"{where} {written} and {', '.join(others)} both install the `{row.installs}` "
                 "package: the one installed last overwrites the other's files", row.source,
                 f"drop {written}; {row.maps_to} is what envforge locks ({row.why})")
    else:
        conflict("theano-original",
                 f"{where} {written} is the original Theano (PyPI {row.name}, "
                 f"{row.releases[0]}-{row.releases[-1]}); envforge's rules are for "
                 f"{row.maps_to.split('==')[0]}", row.source,
                 f"replace it with {mapped} ({row.why})")
    return True


def _check_not_on_pypi(spec: PlatformSpec, conflict: _Report) -> None:
    for row in knowledge().theano.blog_errata:
        if row.package is None:
            continue
        for requirement in spec.pypi.packages:
            pin = pypi_pin(requirement)
            if pin is not None and pin[0] == canonicalize_name(row.package):
                conflict("not-on-pypi", f"pypi {requirement}: {row.happens}", row.source,
                         f"take it from elsewhere: {row.correct}")


def _check_cudnn_cuda(spec: PlatformSpec, conflict: _Report) -> None:
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


def _check_debian_python(spec: PlatformSpec, conflict: _Report) -> None:
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


def _check_theano_python(rules: TheanoRules, pins: dict[str, list[Pin]],
                         conflict: _Report) -> None:
    works = [f"{row.python} ({row.effect}, {row.source})" for row in rules.python
             if row.status == "works"]
    works += [f"{', '.join(row.python)} (classifiers)" for row in rules.classifiers]
    for row in rules.python:
        bad = interval(row.python)
        if row.status != "breaks" or bad is None:
            continue
        for pin in pins.get("python", []):
            if pin.releases.within(bad):
                conflict("theano-python",
                         f"Theano-PyMC {rules.version} with Python {row.python} "
                         f"({pin.written}): {row.effect}", row.source,
                         f"use a Python it takes: {'; '.join(works) or 'older'}")
                return


def _check_theano_numpy(spec: PlatformSpec, rules: TheanoRules,
                        pins: dict[str, list[Pin]], conflict: _Report) -> None:
    explicit = set(field_flags(spec.theano)) | {rules.canonical(k) for k in spec.theano.flags}
    works = "; ".join(f"{row.numpy} ({row.effect})" for row in rules.numpy
                      if row.status == "works")
    broken: set[str] = set()
    for row in sorted(rules.numpy, key=lambda r: r.status != "breaks"):
        bad = interval(row.numpy)
        if bad is None or row.status == "works":
            continue
        for pin in pins.get("numpy", []):
            if not pin.releases.within(bad) or pin.written in broken:
                continue
            if row.status == "breaks":
                broken.add(pin.written)
                conflict("theano-numpy",
                         f"Theano-PyMC {rules.version} with NumPy {row.numpy} ({pin.written}): "
                         f"{row.effect}", row.source,
                         f"pin a NumPy outside {row.numpy}"
                         + (f"; known to work: {works}" if works else ""))
            elif row.flag is not None and row.flag not in explicit:
                key = FIELD_FLAGS.get(row.flag, row.flag)
                conflict("theano-numpy-flag",
                         f"Theano-PyMC {rules.version} with NumPy {row.numpy} ({pin.written}) "
                         f"and no {row.flag}: {row.effect}", row.source,
                         f"set [theano] {key} (e.g. \"-L<openblas dir> -lopenblas\") "
                         "or pin numpy below 1.22")


def _check_theano_pygpu(rules: TheanoRules, pins: dict[str, list[Pin]],
                        conflict: _Report) -> None:
    for row in rules.pygpu:
        allowed = interval(row.pygpu)
        if allowed is None:
            continue
        for pin in pins.get("pygpu", []):
            if pin.releases.disjoint(allowed):
                conflict("theano-pygpu",
                         f"Theano-PyMC {rules.version} takes pygpu {row.pygpu} only "
                         f"({pin.written})", row.source, f"pin pygpu {row.pygpu}")


def _check_theano_cudnn(spec: PlatformSpec, rules: TheanoRules, conflict: _Report) -> None:
    if spec.cudnn is None:
        return
    code = cudnn_version_code(spec.cudnn.version)
    for row in rules.cudnn:
        if row.kind == "rejected-below" and code < row.version_code:
            conflict("theano-cudnn-old",
                     f"Theano-PyMC {rules.version} rejects cuDNN {spec.cudnn.version} "
                     f"(version {code} < {row.version_code})", row.source,
                     f"pin a cuDNN whose version code is >= {row.version_code}, or set "
                     "[theano] dnn = \"disabled\" and drop [cudnn]")
        if row.kind == "conv-fails-from" and code >= row.version_code \
                and spec.theano.dnn != "disabled":
            conflict("theano-cudnn8",
                     f"Theano-PyMC {rules.version} with cuDNN {spec.cudnn.version} and "
                     f"[theano] dnn = \"{spec.theano.dnn}\": {row.effect}", row.source,
                     row.fix or "set [theano] dnn = \"disabled\"")


def _check_theano_flags(spec: PlatformSpec, rules: TheanoRules, conflict: _Report) -> None:
    for key in sorted(spec.theano.flags):
        value = spec.theano.flags[key]
        if rules.spelling == "dots" and "__" in key:
            dotted = key.replace("__", ".")
            conflict("theano-flag-spelling",
                     f"theano.flags key {key!r} is spelled with `__`, which Theano-PyMC "
                     f"{rules.version} does not read", rules.spelling_source,
                     f"write {dotted!r}")
            continue
        name = rules.canonical(key)
        removed = rules.removed_flag(name)
        schema = rules.flags.get(name)
        if removed is not None:
            successor = f"; its successor is {removed.replacement}" if removed.replacement else ""
            conflict("theano-flag-removed",
                     f"theano.flags key {key!r} is not a flag of Theano-PyMC {rules.version} "
                     f"(removed with the old GPU back-end{successor})", removed.source, removed.fix)
        elif name in FIELD_FLAGS:
            conflict("theano-flag-shadows",
                     f"theano.flags key {key!r} repeats what [theano] {FIELD_FLAGS[name]} sets",
                     _SPEC_SOURCE, f"set [theano] {FIELD_FLAGS[name]} and drop the flag")
        elif name not in rules.known_flags:
            erratum = erratum_for_flag(name)
            if erratum is not None:
                conflict("theano-flag-unknown",
                         f"theano.flags key {key!r} is not a flag of Theano-PyMC {rules.version}: "
                         f"{erratum.wrong} is {erratum.happens}", erratum.source,
                         f"write {erratum.correct}")
            else:
                conflict("theano-flag-unknown",
                         f"theano.flags key {key!r} is not a flag of Theano-PyMC {rules.version} "
                         "(Theano ignores or only warns about unknown flags)",
                         rules.known_flags_source, "remove it or correct its name")
        elif schema is not None and (problem := schema.problem(value)) is not None:
            fix = (f"use one of {', '.join(schema.choices)}" if schema.choices
                   else f"give a valid {schema.type} value ({schema.note or schema.default})")
            conflict("theano-flag-value",
                     f"theano.flags: {problem}; Theano raises ValueError at import",
                     schema.source, fix)
