"""The one reader of user-named files: a regular file of bounded size, or one line and exit 2,
decided before the file is opened (a FIFO, /dev/zero, a huge file), for every command that
reads a spec or a lock."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from envforge.errors import SpecError
from envforge.inputfile import (
    MIB,
    SPEC_LIMIT,
    check_regular_input,
    read_input_file,
    read_input_text,
)
from tests.faults.harness import envforge, snapshot
from tests.testing.packs import REGISTRY


def test_a_regular_file_within_the_limit_is_read(tmp_path: Path) -> None:
    path = tmp_path / "x.toml"
    path.write_bytes(b"a = 1\n")
    assert read_input_file(path, 6) == b"a = 1\n"
    with pytest.raises(SpecError, match=r"x\.toml: 6 bytes, more than the 5 envforge reads"):
        read_input_file(path, 5)
    with pytest.raises(SpecError, match=r"nope\.toml: no spec here$"):
        read_input_file(tmp_path / "nope.toml", 5, missing="no spec here")
    with pytest.raises(SpecError, match="a folder, not a regular file"):
        read_input_file(tmp_path, 5)


def test_text_is_strict_utf8_or_lenient_without_control_characters(tmp_path: Path) -> None:
    path = tmp_path / "r.txt"
    path.write_bytes(b"caf\xe9\n")
    with pytest.raises(SpecError, match="not UTF-8 text"):
        read_input_text(path, MIB)
    assert read_input_text(path, MIB, lenient=True) == "caf\ufffd\n"
    path.write_bytes(b"ok\n\tok\r\nbad\x00\n")
    with pytest.raises(SpecError, match=r"r\.txt:3: a NUL or control character"):
        read_input_text(path, MIB, lenient=True)
    path.write_text("short\n" + "x" * 11 + "\n")
    with pytest.raises(SpecError, match=r"r\.txt:2: a line of 11 characters, more than the 10"):
        read_input_text(path, MIB, max_line=10)


@pytest.mark.posix_only("fifos and /dev/zero")
@pytest.mark.parametrize("command", [["plan"], ["lock"], ["apply", "--yes"]])
@pytest.mark.parametrize("kind", ["fifo", "zero", "huge"])
def test_every_command_refuses_a_spec_that_is_no_bounded_regular_file(
        tmp_path: Path, command: list[str], kind: str) -> None:
    home, efhome = tmp_path / "home", tmp_path / "envforge-home"
    home.mkdir()
    efhome.mkdir()
    spec = tmp_path / "spec.toml"
    if kind == "fifo":
        os.mkfifo(spec)
    elif kind == "zero":
        spec.symlink_to("/dev/zero")
    else:
        spec.write_text("# " + "x" * SPEC_LIMIT + "\n")
    before = snapshot(tmp_path)
    done = envforge(*command, str(spec), env={**os.environ, "HOME": str(home),
                                              "ENVFORGE_HOME": str(efhome)}, timeout=60)
    assert done.returncode == 2, done.stderr
    assert snapshot(tmp_path) == before
    reason = {"fifo": "a FIFO, not a regular file", "zero": "a character device, not a regular",
              "huge": f"{SPEC_LIMIT + 3} bytes, more than the 1 MiB"}[kind]
    assert done.stderr == f"error: {spec}: {reason}" + done.stderr.split(reason, 1)[1]
    assert len(done.stderr.strip().splitlines()) == 1


@pytest.mark.posix_only("/dev/zero")
def test_a_lock_that_is_no_bounded_regular_file_is_refused(tmp_path: Path) -> None:
    from envforge.lockfile import load_lock

    lock = tmp_path / "x.lock"
    lock.symlink_to("/dev/zero")
    with pytest.raises(SpecError, match=r"x\.lock: a character device, not a regular file"):
        load_lock(lock, REGISTRY)


@pytest.mark.posix_only(reason="FIFOs")
def test_an_input_that_is_a_folder_or_a_fifo_is_refused_before_it_is_opened(
        tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(SpecError, match="a folder, not a regular file: a lock is one"):
        check_regular_input(tmp_path, "lock")
    with pytest.raises(SpecError, match="a FIFO, not a regular file: a lock is one"):
        check_regular_input(tmp_path / "fifo", "lock")
    check_regular_input(tmp_path / "absent.lock", "lock")  # its reader names it
