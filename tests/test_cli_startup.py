"""Start-up: --version, --help and the stamp check of a no-op apply or a status import none
of the heavy modules."""

from __future__ import annotations

import argparse

import pytest

from envforge import cli, spec
from envforge.commands import SUMMARIES
from tests.testing.imports import imported_after

HEAVY = ("pydantic", "rich", "envforge.spec", "envforge.commands.apply", "argparse")


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, str | None]:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {c.dest: c.help for c in action._choices_actions}


def test_summaries_are_the_commands_own() -> None:
    """--help lists SUMMARIES without importing the modules: they must say the same."""
    registered = _subparsers(cli.build_parser("*"))
    assert {k: v for k, v in registered.items() if k not in ("lock", "export")} == SUMMARIES
    assert list(_subparsers(cli.build_parser(None))) == list(registered)


def test_platforms_are_the_specs() -> None:
    assert cli.PLATFORMS == spec.PLATFORMS


@pytest.mark.parametrize("words", [["--version"], ["--help"], ["apply", "nothing.toml", "-y"],
                                   ["status"]])
def test_start_up_imports_nothing_heavy(words: list[str]) -> None:
    code = (f"from envforge.cli import main\ntry:\n    main({words!r})\n"
            "except SystemExit:\n    pass\nexcept Exception:\n    pass")
    if words[0] in ("apply", "status"):  # only up to the stamp check: not the real path
        code = ("import os\nfrom envforge.host.noopstamp import try_noop\n"
                f"try_noop({words!r}, cwd=os.getcwd(), environ=os.environ, version='0')")
    allowed = ["argparse"] if words == ["--help"] else []
    assert imported_after(code, HEAVY) == allowed
