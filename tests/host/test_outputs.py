"""check_output: every ``-o`` is refused (InputError, one line) when it is the command's own
input, a FIFO or device, the wrong kind of entry or in a missing folder; checked on real
files, links and FIFOs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from envforge.errors import InputError
from envforge.host.outputs import check_output


def test_a_new_file_in_an_existing_folder_and_a_file_to_replace_pass(tmp_path: Path) -> None:
    (tmp_path / "old.json").write_text("{}")
    check_output(tmp_path / "new.json", inputs=[tmp_path / "in.toml"])
    check_output(tmp_path / "old.json")
    check_output(tmp_path / "a" / "b" / "c.toml", make_parents=True)
    check_output(tmp_path / "bundle", kind="folder", inputs=[tmp_path / "in.lock"])


@pytest.mark.posix_only(reason="hard links, symbolic links and FIFOs")
def test_the_commands_own_input_by_path_link_or_inode_is_refused(tmp_path: Path) -> None:
    spec = tmp_path / "specs" / "x.toml"
    spec.parent.mkdir()
    spec.write_text("[project]\n")
    (tmp_path / "hard.toml").hardlink_to(spec)
    (tmp_path / "soft.toml").symlink_to(spec)
    for given in (spec, tmp_path / "specs" / ".." / "specs" / "x.toml", tmp_path / "hard.toml",
                  tmp_path / "soft.toml"):
        with pytest.raises(InputError, match=f"^-o {given}: that is the command's own input"):
            check_output(given, inputs=[spec])


def test_a_folder_output_overlapping_an_input_folder_is_refused(tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    for given in (bundle / "ctx", tmp_path):
        with pytest.raises(InputError, match="overlaps the command's input"):
            check_output(given, inputs=[bundle], kind="folder")


@pytest.mark.posix_only(reason="FIFOs and /dev/null")
def test_special_files_and_the_wrong_kind_of_entry_are_refused(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "dir").mkdir()
    (tmp_path / "file").write_text("")
    cases = [(tmp_path / "fifo", "file", "a special file"), (Path("/dev/null"), "file",
                                                             "a special file"),
             (tmp_path / "dir", "file", "is a folder; name the file"),
             (tmp_path / "file", "folder", "exists and is not a folder"),
             (tmp_path / "missing" / "x.json", "file", f"the folder {tmp_path / 'missing'} "
                                                       "does not exist"),
             (tmp_path / "file" / "x.json", "file", "is not a folder")]
    for given, kind, says in cases:
        with pytest.raises(InputError, match=says):
            check_output(given, kind=kind)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="is not a folder"):
        check_output(tmp_path / "file" / "a" / "x.toml", make_parents=True)
