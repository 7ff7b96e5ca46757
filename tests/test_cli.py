"""cli.main's one handler: Ctrl-C is 130, an unexpected error is one line with a log path; the
garbage collector is left as main found it."""

from __future__ import annotations

import contextlib
import gc
from pathlib import Path

import pytest

from envforge import cli
from envforge.commands import lock_command
from envforge.errors import ExitCode, OfflineError


def _raising(exc: BaseException) -> object:
    def run_lock(*_: object, **__: object) -> int:
        raise exc

    return run_lock


def test_ctrl_c_exits_130_with_one_line(monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(lock_command, "run_lock", _raising(KeyboardInterrupt()))
    assert cli.main(["lock", "specs/x.toml"]) == ExitCode.INTERRUPTED == 130
    err = capsys.readouterr().err
    assert "interrupted" in err and "Traceback" not in err


def test_an_unexpected_error_is_one_line_naming_the_log(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("ENVFORGE_HOME", str(tmp_path))
    monkeypatch.setattr(lock_command, "run_lock", _raising(RuntimeError("boom")))
    assert cli.main(["lock", "specs/x.toml"]) == ExitCode.FAILED
    err = capsys.readouterr().err
    log = tmp_path / "cache" / "envforge.log"
    assert "unexpected error, please report it: RuntimeError: boom" in err
    assert str(log) in " ".join(err.split())  # the console may wrap a long path
    assert "Traceback" not in err
    text = log.read_text(encoding="utf-8")
    assert "$ envforge lock specs/x.toml" in text
    assert 'raise exc' in text and "RuntimeError: boom" in text


def test_an_unwritable_log_leaves_the_traceback_on_stderr(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "cache").write_text("a file where the cache folder would go", encoding="utf-8")
    monkeypatch.setenv("ENVFORGE_HOME", str(tmp_path))
    monkeypatch.setattr(lock_command, "run_lock", _raising(RuntimeError("boom")))
    assert cli.main(["lock", "specs/x.toml"]) == ExitCode.FAILED
    err = capsys.readouterr().err
    assert "Traceback" in err and "unexpected error, please report it" in err


def test_a_file_missing_offline_is_bad_input() -> None:
    """What the user must bring (a bundle, --artifact, the network) is exit 2, as preflight."""
    assert OfflineError("x").exit_code == ExitCode.BAD_INPUT == 2


@pytest.mark.parametrize("words", [["lock", "specs/x.toml"], ["--help"], ["lock", "--nope"]])
def test_main_leaves_the_garbage_collector_as_it_found_it(
        words: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The command's modules are imported with the collector paused and then frozen: a caller
    that goes on (these tests) gets it back running, with nothing left frozen."""
    monkeypatch.setattr(lock_command, "run_lock", lambda *_, **__: 0)
    with contextlib.suppress(SystemExit):
        cli.main(words)
    assert gc.isenabled() and gc.get_freeze_count() == 0
