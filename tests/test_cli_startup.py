"""Start-up: --version, --help and the stamp check of a no-op apply or a status import none
of the heavy modules."""

from __future__ import annotations

import argparse
import gc
import subprocess
import sys

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


def test_the_command_ends_with_its_objects_frozen_out_of_the_last_collection(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """``entry`` (the console script's) exits with main's code, every object frozen: the
    interpreter's last full collection then walks none of them (50-60 ms of a warm apply)."""
    monkeypatch.setattr("sys.argv", ["envforge", "--version"])
    gc.unfreeze()
    try:
        with pytest.raises(SystemExit) as exited:
            cli.entry()
        assert exited.value.code == 0 and gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
    assert capsys.readouterr().out.startswith("envforge ")


def test_python_m_envforge_is_the_command() -> None:
    done = subprocess.run([sys.executable, "-m", "envforge", "--version"], capture_output=True,
                          text=True, check=False)
    assert (done.returncode, done.stdout.split()[0]) == (0, "envforge")
