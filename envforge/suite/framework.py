"""What a framework pack brings for ``verify --suite``: its release's test runner, the
curated subset for a device, its known-bad tests and the settings a run adds. The suite's
core (runner.py, results.py) runs and judges any pack's tests through these; the pack's
knowledge file holds the rows (Theano's: packs/theano/theano_suite.toml)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

from envforge.packapi import Pack, Registry

if TYPE_CHECKING:  # lock asks which suite a release has: it needs no installer or verify
    from pathlib import Path

    from envforge.steps.base import StepContext
    from envforge.suite.results import KnownBad
    from envforge.suite.runner import SuiteSubset


class SuiteRunner(Protocol):
    """The test runner a release's own tests take, and where the tests ship."""

    @property
    def distribution(self) -> str: ...  # the PyPI project whose locked sdist holds the tests

    @property
    def package(self) -> str: ...  # the import name the tests exercise

    @property
    def requirements(self) -> tuple[str, ...]: ...


class FrameworkSuite(Protocol):
    """A framework's own tests, as its pack knows them."""

    @property
    def release_name(self) -> str: ...  # how messages name a release: "Theano-PyMC"

    @property
    def knowledge_file(self) -> str: ...  # where the rows live, for messages

    @property
    def package(self) -> str: ...  # the import name its tests exercise, as the runner's

    @property
    def compiledir_flag(self) -> tuple[str, str] | None:
        """(variable, key) that gives the framework a compile folder, one per pytest worker;
        None where it compiles nothing."""

    def release(self, versions: Mapping[str, str]) -> str | None:
        """The framework's version among a lock's versions; None where it holds none."""

    def pinned(self, packages: Sequence[str]) -> str | None:
        """The release a spec's packages pin exactly, known before resolving."""

    def runner(self, release: str) -> SuiteRunner | None: ...

    def subset(self, release: str, device: str) -> SuiteSubset | None: ...

    def known_bad(self, release: str, device: str,
                  versions: Mapping[str, str]) -> Sequence[KnownBad]: ...

    def settings(self, subset: SuiteSubset) -> tuple[str, Mapping[str, str]] | None:
        """The framework's variable and the pairs a run of ``subset`` adds to it."""

    def compiledir_seed(self, ctx: StepContext, folder: Path) -> Path | None:
        """The folder each worker's compile folder starts as a copy of, made at ``folder``
        (Theano: the environment's compiledir and what earlier passing runs compiled); None
        for the environment's own compiledir."""

    def keep_compiled(self, ctx: StepContext, compiledirs: Sequence[Path], *,
                      passed: bool) -> None:
        """After the run, ``passed`` when no test failed that no known-bad row explains: the
        workers' compile folders, removed once this returns (Theano: stored for the lock's
        next run)."""


class SuitePack(Pack, Protocol):
    """What ``verify --suite`` asks of a pack: its framework's own tests, if it has any."""

    @property
    def suite(self) -> FrameworkSuite | None: ...


def framework_suite(versions: Mapping[str, str],
                    registry: Registry[SuitePack]) -> tuple[FrameworkSuite, str] | None:
    """The first registered pack with a suite whose release ``versions`` hold, and that
    release."""
    for pack in registry:
        suite = pack.suite
        release = suite.release(versions) if suite is not None else None
        if suite is not None and release is not None:
            return suite, release
    return None


def pinned_suite(packages: Sequence[str],
                 registry: Registry[SuitePack]) -> tuple[FrameworkSuite, str] | None:
    """The first registered pack with a suite whose release ``packages`` pin exactly."""
    for pack in registry:
        suite = pack.suite
        release = suite.pinned(packages) if suite is not None else None
        if suite is not None and release is not None:
            return suite, release
    return None
