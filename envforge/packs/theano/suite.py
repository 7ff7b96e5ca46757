"""Theano-PyMC's own tests for ``verify --suite``: the rows of theano_suite.toml behind the
suite's FrameworkSuite protocol (envforge/suite/framework.py)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

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

if TYPE_CHECKING:
    from envforge.steps.base import StepContext


class TheanoSuite:
    release_name = "Theano-PyMC"
    knowledge_file = "envforge/packs/theano/theano_suite.toml"
    package = "theano"
    compiledir_flag = ("THEANO_FLAGS", "base_compiledir")

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

    def compiledir_seed(self, ctx: StepContext, folder: Path) -> Path | None:
        from envforge.packs.theano.compilecache import suite_seed

        return suite_seed(ctx, folder)

    def keep_compiled(self, ctx: StepContext, compiledirs: Sequence[Path], *,
                      passed: bool) -> None:
        from envforge.packs.theano.compilecache import keep_suite_modules

        keep_suite_modules(ctx, compiledirs, passed=passed)


THEANO_SUITE = TheanoSuite()
