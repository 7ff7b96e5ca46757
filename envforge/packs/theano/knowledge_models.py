"""The shapes of the Theano pack's knowledge rows (theano.toml, theano_suite.toml): one model
per kind of fact, frozen and ``extra="forbid"``, so a typo in a row fails loading."""

# No ``from __future__ import annotations``: pydantic reads each model's annotations as the
# class is made, and a string one is compiled and evaluated first: a fifth of the time of
# making these classes, on the start-up of apply.

from collections.abc import Mapping
from typing import Annotated, Literal

from pydantic import Field

from envforge.knowledge.models import InitDebianRow, Range, Row, UndeclaredImport, in_range
from envforge.spec import Frozen, Platform

Spelling = Literal["dots", "double-underscores"]


# theano.toml

class SpellingRow(Row):
    theano: Range
    spelling: Spelling
    example: str
    note: str = ""


class FlagNamesRow(Row):
    theano: Range
    read_from: str
    names: tuple[str, ...]


_BOOLS = ("True", "true", "1", "False", "false", "0")


class FlagSchema(Row):
    """One Theano flag: its type, allowed values and default, and its .theanorc place (dots)."""

    name: str
    theano: Range
    type: Literal["str", "bool", "float", "enum", "device"]
    choices: tuple[str, ...] = ()
    # values Theano converts before checking (floatX "32")
    aliases: dict[str, str] = Field(default_factory=dict)
    default: str
    section: str
    key: str
    note: str = ""

    def problem(self, value: str) -> str | None:
        """Why Theano would refuse ``value`` at import, or None when it takes it."""
        value = self.aliases.get(value, value)
        if self.type == "bool" and value not in _BOOLS:
            return f"{self.name}={value!r} is not a boolean (True, False, 1, 0)"
        if self.type == "float":
            try:
                float(value)
            except ValueError:
                return f"{self.name}={value!r} is not a number"
        if self.type == "enum" and value not in self.choices:
            return (f"{self.name}={value!r} is not one of {', '.join(self.choices)} "
                    "(case-sensitive)")
        if self.type == "device" and value != self.default and \
                not value.startswith(("cuda", "opencl")):
            if value.startswith("gpu"):
                return f"{self.name}={value!r} names the removed old GPU back-end"
            return f"{self.name}={value!r} is neither {self.default!r} nor cuda* or opencl*"
        return None


class RemovedFlag(Row):
    flag: str
    prefix: bool = False
    theano: Range
    replacement: str | None = None
    fix: str

    def matches(self, name: str) -> bool:
        return name.startswith(self.flag + ".") if self.prefix else name == self.flag


class BlogErratum(Row):
    wrong: str
    happens: str
    correct: str
    flag: str | None = None
    replacement: str | None = None
    package: str | None = None  # a package the wrong form installs from PyPI


class ConfigReadingRow(Row):
    id: str
    theano: Range
    fact: str


class PygpuRow(Row):
    theano: Range
    pygpu: Range
    api_version_major: int


class CudnnRuleRow(Row):
    theano: Range
    kind: Literal["rejected-below", "warns-from", "conv-fails-from"]
    version_code: int
    effect: str
    fix: str = ""
    symptom: str | None = None  # what the failure prints


class CudnnNamesRow(Row):
    theano: Range
    platform: Platform
    names: tuple[str, ...]


class NumpyRuleRow(Row):
    theano: Range
    numpy: Range
    status: Literal["works", "needs-flag", "breaks"]
    flag: str | None = None
    effect: str


class PythonRuleRow(Row):
    theano: Range
    python: Range
    status: Literal["works", "breaks"]
    effect: str


class ClassifiersRow(Row):
    theano: Range
    python: tuple[str, ...]


class RequiresRow(Row):
    theano: Range
    packages: tuple[str, ...]


class PreallocateRow(Row):
    """How gpuarray.preallocate is read: below ``disables_below`` the cache is off, up to
    ``fraction_up_to`` (inclusive) a fraction of memory capped at ``fraction_cap``, above
    that megabytes."""

    theano: Range
    disables_below: float
    fraction_up_to: float
    fraction_cap: float

    def megabytes(self, value: float, total_mib: float) -> float:
        """The MiB Theano preallocates for ``value`` on a GPU of ``total_mib``; 0 for none."""
        if value <= self.disables_below:
            return 0.0
        if value <= self.fraction_up_to:
            return min(value, self.fraction_cap) * total_mib
        return value


class DistributionRow(Row):
    """A distribution that installs the ``theano`` package, and what a requirement of it
    maps to where envforge's rules are for another one."""

    name: str
    releases: tuple[str, ...]
    installs: str
    conda_names: tuple[str, ...] = ()
    maps_to: str | None = None
    why: str = ""


class ErrorHintRow(Row):
    needle: str
    hint: str


class UndeclaredRow(UndeclaredImport):
    """A module a release imports without declaring the distribution that provides it."""

    theano: Range


class GpuProbeRow(Row):
    id: str
    expression: str
    note: str = ""


class TheanoFile(Frozen):
    spelling: tuple[SpellingRow, ...]
    flag_names: tuple[FlagNamesRow, ...]
    flags: tuple[FlagSchema, ...]
    removed: tuple[RemovedFlag, ...]
    blog_errata: tuple[BlogErratum, ...]
    config_reading: tuple[ConfigReadingRow, ...]
    pygpu: tuple[PygpuRow, ...]
    cudnn: tuple[CudnnRuleRow, ...]
    cudnn_names: tuple[CudnnNamesRow, ...]
    numpy: tuple[NumpyRuleRow, ...]
    python: tuple[PythonRuleRow, ...]
    classifiers: tuple[ClassifiersRow, ...]
    requires: tuple[RequiresRow, ...]
    undeclared: tuple[UndeclaredRow, ...]
    gpu_probe: tuple[GpuProbeRow, ...]
    preallocate: tuple[PreallocateRow, ...]
    distributions: tuple[DistributionRow, ...]
    error_hints: tuple[ErrorHintRow, ...]
    init_debian: tuple[InitDebianRow, ...] = ()


class TheanoRules(Frozen):
    """Everything known about one Theano-PyMC release, with the flags in canonical dotted form."""

    version: str
    spelling: Spelling
    spelling_source: str
    known_flags: frozenset[str]
    known_flags_source: str
    flags: dict[str, FlagSchema]
    removed: tuple[RemovedFlag, ...]
    config_reading: tuple[ConfigReadingRow, ...]
    pygpu: tuple[PygpuRow, ...]
    cudnn: tuple[CudnnRuleRow, ...]
    cudnn_names: tuple[CudnnNamesRow, ...]
    numpy: tuple[NumpyRuleRow, ...]
    python: tuple[PythonRuleRow, ...]
    classifiers: tuple[ClassifiersRow, ...]
    requires: tuple[RequiresRow, ...]
    preallocate: tuple[PreallocateRow, ...]
    undeclared: tuple[UndeclaredRow, ...]

    @property
    def separator(self) -> str:
        return "." if self.spelling == "dots" else "__"

    def spell(self, name: str) -> str:
        """A dotted flag name as this release's THEANO_FLAGS takes it."""
        return name.replace(".", self.separator)

    def canonical(self, key: str) -> str:
        """The dotted form of a key written in this release's spelling (dotted keys pass)."""
        return key.replace("__", ".") if self.spelling == "double-underscores" else key

    def theanorc_location(self, name: str) -> tuple[str, str]:
        """(section, key) where this release's .theanorc holds a flag: ``[blas] ldflags``.

        Theano splits the name at its last separator, so nested flags get a section named
        in the release's spelling: ``[dnn.conv] algo_fwd``, ``[dnn__conv] algo_fwd``.
        """
        section, sep, key = self.spell(name).rpartition(self.separator)
        return (section, key) if sep else ("global", name)

    def removed_flag(self, name: str) -> RemovedFlag | None:
        return next((row for row in self.removed if row.matches(name)), None)


# theano_suite.toml

SuiteDevice = Literal["cpu", "cuda"]


class SuiteRunnerRow(Row):
    """The test runner a release's own tests take, and where the tests ship."""

    theano: Range
    distribution: str  # the PyPI project whose locked sdist holds the tests
    package: str  # the import name the tests exercise, from the environment
    requirements: tuple[str, ...] = Field(min_length=1)


class SuiteSubsetRow(Row):
    """A curated, time-bounded selection of a release's tests for one kind of device."""

    theano: Range
    name: str
    device: SuiteDevice
    time_limit_s: int = Field(gt=0)
    tests: tuple[str, ...] = Field(min_length=1)  # pytest node ids, relative to the sdist's root
    select: str = ""  # a pytest -m expression: "not slow" drops what Theano marks slow
    deselect: tuple[str, ...] = ()  # node ids left out for time, not because they fail
    # How pytest-xdist shares tests out: "loadfile" keeps a module on one worker (its tests
    # compile the same ops); "loadscope" a class, so a few big modules still fill many cores.
    dist: Literal["loadfile", "loadscope"] = "loadfile"
    # Added to THEANO_FLAGS for the run only: what N workers sharing one GPU need whatever
    # the spec sets (a preallocated fraction would leave the other workers no memory).
    theano_flags: dict[Annotated[str, Field(pattern=r"^[a-z][a-z0-9_.]*$")],
                       Annotated[str, Field(pattern=r"^[^,=\s]+$")]] = Field(default_factory=dict)
    note: str = ""


class KnownBadTestRow(Row):
    """Tests known to fail: a failure matching one is not a verify failure. ``test`` is a
    node id or a prefix of one (a module or a class); ``tests``, when given, narrows it to
    those test functions of it (each with its parameters), so the rest must pass."""

    theano: Range
    test: str
    tests: tuple[Annotated[str, Field(pattern=r"^\w+$")], ...] = ()
    devices: tuple[SuiteDevice, ...] = Field(min_length=1)
    # Where the failure depends on another package: the lock's versions must lie in these
    # ranges ({scipy = ">=1.4"}); a version the lock does not hold never does.
    versions: dict[str, Range] = Field(default_factory=dict)
    reason: str

    def matches(self, nodeid: str) -> bool:
        under = [f"{self.test}::{name}" for name in self.tests] or [self.test]
        return any(nodeid == u or nodeid.startswith((f"{u}::", f"{u}[")) for u in under)

    def holds_for(self, versions: Mapping[str, str]) -> bool:
        return all(name in versions and in_range(versions[name], spec)
                   for name, spec in self.versions.items())


class TheanoSuiteFile(Frozen):
    runner: tuple[SuiteRunnerRow, ...]
    subsets: tuple[SuiteSubsetRow, ...]
    known_bad: tuple[KnownBadTestRow, ...]
