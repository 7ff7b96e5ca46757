"""Unpacking real .7z archives made here with py7zr: names, writable files, a new or empty
destination (hostile members: tests/host/test_archives.py, every format)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import py7zr
import pytest

from envforge.errors import ArtifactError
from envforge.host.sevenzip import extract_7z


def _archive(path: Path) -> Path:
    with py7zr.SevenZipFile(path, "w") as sz:
        sz.writestr(b"MZ g++", "mingw64/bin/g++.exe")
        sz.writestr(b"#define X 1\n", "mingw64/include/x.h")
    return path


def test_members_land_and_are_writable_by_their_owner(tmp_path: Path) -> None:
    archive = _archive(tmp_path / "a.7z")
    names = extract_7z(archive, tmp_path / "out")
    assert sorted(names) == ["mingw64/bin/g++.exe", "mingw64/include/x.h"]
    gxx = tmp_path / "out/mingw64/bin/g++.exe"
    assert gxx.read_bytes() == b"MZ g++"
    assert stat.S_IMODE(gxx.stat().st_mode) & stat.S_IWUSR
    assert os.access(gxx.parent, os.W_OK)


def test_the_destination_must_be_new_or_empty(tmp_path: Path) -> None:
    archive = _archive(tmp_path / "a.7z")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "mine.txt").write_text("the user's\n")
    with pytest.raises(ArtifactError, match="not an empty folder"):
        extract_7z(archive, tmp_path / "out")
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["mine.txt"]
