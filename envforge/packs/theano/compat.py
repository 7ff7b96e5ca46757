"""Theano-PyMC's rules on a spec's pins, found before anything is resolved.

Rules that depend on the Theano-PyMC release need it pinned to one release. The intervals
and pins are compat's; this module only says what is known not to work with Theano.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from packaging.utils import canonicalize_name

from envforge.compat import Pin, conda_pin, exact_pin, interval, pypi_pin
from envforge.knowledge import UnknownFactError, cudnn_version_code
from envforge.packs.base import Report
from envforge.packs.theano.flags import FIELD_FLAGS, field_flags
from envforge.packs.theano.knowledge import (
    TheanoRules,
    erratum_for_flag,
    map_legacy_theano,
    theano_distribution,
    theano_knowledge,
    theano_rules,
)
from envforge.packs.theano.section import theano_section
from envforge.spec import PlatformSpec

THEANO = "theano-pymc"
_SPEC_SOURCE = "envforge spec format ([theano] table)"


def compat_checks(spec: PlatformSpec, pins: Mapping[str, Sequence[Pin]],
                  conflict: Report) -> None:
    """Every Theano conflict of one platform's view of the spec, in a stable order."""
    _check_not_on_pypi(spec, conflict)
    if _check_theano_distributions(spec, conflict):
        return
    theano = exact_pin(pins, THEANO)
    if theano is None:
        return
    try:
        rules = theano_rules(str(theano))
    except UnknownFactError:
        return
    _check_theano_python(rules, pins, conflict)
    _check_theano_numpy(spec, rules, pins, conflict)
    _check_theano_pygpu(rules, pins, conflict)
    _check_theano_cudnn(spec, rules, conflict)
    _check_theano_flags(spec, rules, conflict)


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


def _check_theano_distributions(spec: PlatformSpec, conflict: Report) -> bool:
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


def _check_not_on_pypi(spec: PlatformSpec, conflict: Report) -> None:
    for row in theano_knowledge().blog_errata:
        if row.package is None:
            continue
        for requirement in spec.pypi.packages:
            pin = pypi_pin(requirement)
            if pin is not None and pin[0] == canonicalize_name(row.package):
                conflict("not-on-pypi", f"pypi {requirement}: {row.happens}", row.source,
                         f"take it from elsewhere: {row.correct}")


def _check_theano_python(rules: TheanoRules, pins: Mapping[str, Sequence[Pin]],
                         conflict: Report) -> None:
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
                        pins: Mapping[str, Sequence[Pin]], conflict: Report) -> None:
    section = theano_section(spec)
    explicit = set(field_flags(section)) | {rules.canonical(k) for k in section.flags}
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


def _check_theano_pygpu(rules: TheanoRules, pins: Mapping[str, Sequence[Pin]],
                        conflict: Report) -> None:
    for row in rules.pygpu:
        allowed = interval(row.pygpu)
        if allowed is None:
            continue
        for pin in pins.get("pygpu", []):
            if pin.releases.disjoint(allowed):
                conflict("theano-pygpu",
                         f"Theano-PyMC {rules.version} takes pygpu {row.pygpu} only "
                         f"({pin.written})", row.source, f"pin pygpu {row.pygpu}")


def _check_theano_cudnn(spec: PlatformSpec, rules: TheanoRules, conflict: Report) -> None:
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
                and theano_section(spec).dnn != "disabled":
            conflict("theano-cudnn8",
                     f"Theano-PyMC {rules.version} with cuDNN {spec.cudnn.version} and "
                     f"[theano] dnn = \"{theano_section(spec).dnn}\": {row.effect}", row.source,
                     row.fix or "set [theano] dnn = \"disabled\"")


def _check_theano_flags(spec: PlatformSpec, rules: TheanoRules, conflict: Report) -> None:
    for key in sorted(theano_section(spec).flags):
        value = theano_section(spec).flags[key]
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
