"""What the Theano pack knows (theano.toml, theano_suite.toml), typed and looked up: a
release's rules, the blog's errata, the distributions installing ``theano``, the test
suite's runner, subsets and known-bad tests. Read once per process."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from envforge.errors import InputError
from envforge.knowledge import UnknownFactError, in_range, read_knowledge
from envforge.packs.theano.knowledge_models import (
    BlogErratum,
    DistributionRow,
    FlagSchema,
    KnownBadTestRow,
    SuiteDevice,
    SuiteRunnerRow,
    SuiteSubsetRow,
    TheanoFile,
    TheanoRules,
    TheanoSuiteFile,
    UndeclaredRow,
)

_PACKAGE = "envforge.packs.theano"  # where theano.toml and theano_suite.toml live

__all__ = [
    "BlogErratum",
    "DistributionRow",
    "FlagSchema",
    "KnownBadTestRow",
    "SuiteDevice",
    "SuiteRunnerRow",
    "SuiteSubsetRow",
    "TheanoFile",
    "TheanoRules",
    "TheanoSuiteFile",
    "UndeclaredRow",
    "blog_errata",
    "erratum_for_flag",
    "error_hints",
    "known_bad_tests",
    "map_legacy_theano",
    "reference_theano",
    "suite_device",
    "suite_knowledge",
    "suite_runner",
    "suite_subset",
    "theano_distribution",
    "theano_knowledge",
    "theano_rules",
]


@functools.cache
def theano_knowledge() -> TheanoFile:
    """theano.toml, validated; a malformed row is a bug in the package and raises."""
    return TheanoFile.model_validate(read_knowledge("theano", _PACKAGE))


@functools.cache
def suite_knowledge() -> TheanoSuiteFile:
    """theano_suite.toml, validated."""
    return TheanoSuiteFile.model_validate(read_knowledge("theano_suite", _PACKAGE))


@functools.cache
def theano_rules(theano_version: str) -> TheanoRules:
    """The rules for one Theano-PyMC release; UnknownFactError for a release outside every row."""
    data = theano_knowledge()

    def pick(rows: tuple[Any, ...]) -> tuple[Any, ...]:
        return tuple(row for row in rows if in_range(theano_version, row.theano))

    spelling = pick(data.spelling)
    names = pick(data.flag_names)
    if not spelling or not names:
        raise UnknownFactError(f"envforge knows no rules for Theano-PyMC {theano_version} "
                               f"(it knows {', '.join(row.theano for row in data.spelling)}); "
                               f"fix: pin {_pymc().name}=={_pymc().releases[-1]}")
    return TheanoRules(
        version=theano_version,
        spelling=spelling[0].spelling,
        spelling_source=spelling[0].source,
        known_flags=frozenset(names[0].names),
        known_flags_source=names[0].source,
        flags={row.name: row for row in pick(data.flags)},
        removed=pick(data.removed),
        config_reading=pick(data.config_reading),
        pygpu=pick(data.pygpu),
        cudnn=pick(data.cudnn),
        cudnn_names=pick(data.cudnn_names),
        numpy=pick(data.numpy),
        python=pick(data.python),
        classifiers=pick(data.classifiers),
        requires=pick(data.requires),
        preallocate=pick(data.preallocate),
        undeclared=pick(data.undeclared),
    )


def error_hints() -> tuple[tuple[str, str], ...]:
    """(text a failure prints, what fixes it): the modules a release imports undeclared
    (``No module named 'pkg_resources'``), the cuDNN rules' symptoms, then the rest."""
    data = theano_knowledge()
    hints = [(f"No module named '{row.module}'",
              f"Theano imports {row.module} at {row.imported_at} without declaring it; the "
              f"lock carries {row.requirement} for it: run `envforge apply` to install it "
              f"again; source: {row.source}") for row in data.undeclared]
    hints += [(row.symptom, f"Theano-PyMC {row.theano}: {row.effect}; {row.fix}")
              for row in data.cudnn if row.symptom]
    hints += [(row.needle, row.hint) for row in data.error_hints]
    return tuple(dict.fromkeys(hints))


def blog_errata() -> tuple[BlogErratum, ...]:
    """The blog's wrong forms for Theano-PyMC 1.0.5, with the correct ones."""
    return theano_knowledge().blog_errata


def erratum_for_flag(name: str) -> BlogErratum | None:
    return next((row for row in theano_knowledge().blog_errata if row.flag == name), None)


def theano_distribution(name: str) -> DistributionRow | None:
    """The row of a distribution installing the ``theano`` package, by PyPI or conda name."""
    wanted = canonicalize_name(name)
    return next((row for row in theano_knowledge().distributions
                 if canonicalize_name(row.name) == wanted or wanted in row.conda_names), None)


def displaced_originals(requirements: Sequence[str]) -> tuple[str, ...]:
    """uv ``--override`` lines that keep the original Theano out of a resolution whose
    requirements name Theano-PyMC: a dependency's ``theano>=1.0.4`` (pymc3 3.4.1) would
    otherwise lock both, and the one installed last overwrites the other's ``theano/``. A
    marker that is never true removes the requirement wherever it is made (uv's overrides)."""
    names = set()
    for requirement in requirements:
        try:
            names.add(canonicalize_name(Requirement(requirement).name))
        except InvalidRequirement:
            continue
    if canonicalize_name(_pymc().name) not in names:
        return ()
    return tuple(f"{row.name} ; sys_platform == 'never'"
                 for row in theano_knowledge().distributions if row.maps_to is not None)


def _pymc() -> DistributionRow:
    return next(row for row in theano_knowledge().distributions if row.maps_to is None)


def reference_theano() -> str:
    """The Theano-PyMC release the project is built around (theano.toml [[distributions]]):
    what doctor assumes, and a legacy ``theano`` requirement maps to, when nothing says."""
    return _pymc().releases[-1]


def map_legacy_theano(requirement: str) -> str:
    """What a requirement of a ``theano`` distribution becomes for envforge: a legacy
    ``theano>=0.8.2`` (the original Theano) -> ``Theano-PyMC==1.0.5``, markers kept; a
    requirement of any other distribution is returned unchanged. InputError if unparsable."""
    try:
        parsed = Requirement(requirement)
    except InvalidRequirement as exc:
        raise InputError(f"not a requirement: {requirement!r} ({exc})") from None
    row = theano_distribution(parsed.name)
    if row is None or row.maps_to is None:
        return requirement
    marker = f"; {parsed.marker}" if parsed.marker is not None else ""
    return f"{row.maps_to}{marker}"


def suite_runner(theano_version: str) -> SuiteRunnerRow | None:
    """The test runner for a release's own tests; None where no suite is known."""
    return next((row for row in suite_knowledge().runner
                 if in_range(theano_version, row.theano)), None)


def suite_device(device: str) -> SuiteDevice:
    """``cuda0`` and ``cuda`` select the GPU subset; anything else the CPU one."""
    return "cuda" if device.startswith("cuda") else "cpu"


def suite_subset(theano_version: str, device: str) -> SuiteSubsetRow | None:
    """The curated subset of a release's tests for a Theano device flag (``cpu``, ``cuda0``)."""
    wanted = suite_device(device)
    return next((row for row in suite_knowledge().subsets
                 if row.device == wanted and in_range(theano_version, row.theano)), None)


def known_bad_tests(theano_version: str, device: str,
                    versions: Mapping[str, str] | None = None) -> tuple[KnownBadTestRow, ...]:
    """The tests of a release known to fail on a kind of device, each with reason and source;
    a row conditioned on other packages only where ``versions`` (the lock's) meet it."""
    wanted = suite_device(device)
    return tuple(row for row in suite_knowledge().known_bad
                 if wanted in row.devices and in_range(theano_version, row.theano)
                 and row.holds_for(versions or {}))


def exact_theano(packages: Sequence[str]) -> str | None:
    """The Theano (or Theano-PyMC) version the packages pin with one exact ``==``."""
    from envforge.lockplan import exact_pins

    pins = exact_pins(packages)
    return pins.get("theano-pymc") or pins.get("theano")
