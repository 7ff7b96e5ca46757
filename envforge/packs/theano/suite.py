"""Theano-PyMC's own tests for ``verify --suite``: the rows of theano_suite.toml behind the
suite's FrameworkSuite protocol (envforge/suite/framework.py)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from envforge.packs.theano.knowledge import (
    KnownBadTestRow,
    SuiteRunnerRow,
    SuiteSubsetRow,
    exact_theano,
    known_bad_tests,
    suite_runner,
    suite_subset,
)
from envforge.suite.runner import SuiteSubset


class TheanoSuite:
    release_name = "Theano-PyMC"
    knowledge_file = "envforge/packs/theano/theano_suite.toml"

    def release(self, versions: Mapping[str, str]) -> str | None:
        return versions.get("theano")

    def pinned(self, packages: Sequence[str]) -> str | None:
        return exact_theano(packages)

    def runner(self, release: str) -> SuiteRunnerRow | None:
        return suite_runner(release)

    def subset(self, release: str, device: str) -> SuiteSubsetRow | None:
        return suite_subset(release, device)

    def known_bad(self, release: str, device: str,
                  versions: Mapping[str, str]) -> Sequence[KnownBadTestRow]:
        return known_bad_tests(release, device, versions)

    def settings(self, subset: SuiteSubset) -> tuple[str, Mapping[str, str]] | None:
        flags = subset.theano_flags if isinstance(subset, SuiteSubsetRow) else {}
        return ("THEANO_FLAGS", flags) if flags else None


THEANO_SUITE = TheanoSuite()
