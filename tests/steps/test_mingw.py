"""Which MinGW-w64 and where: its variant's tree check and its folder as a Windows path."""

from __future__ import annotations

from pathlib import Path

import py7zr

from envforge.steps.mingw import MingwVariant, check_mingw_tree, mingw_bin, mingw_gxx
from tests.steps.test_compiler import MINGW_NAME, POSIX_SEH, mingw_7z, mingw_ctx


def test_check_mingw_tree_wants_win32_without_gthreads(tmp_path: Path) -> None:
    archive = mingw_7z(tmp_path / "a.7z")
    with py7zr.SevenZipFile(archive) as sz:
        sz.extractall(tmp_path / "tree")
    assert check_mingw_tree(tmp_path / "tree", POSIX_SEH) == []
    assert check_mingw_tree(tmp_path / "tree", MingwVariant("8.1.0", "win32", "seh")) == [
        "not the win32 thread model: c++config.h defines _GLIBCXX_HAS_GTHREADS"]


def test_mingw_bin_is_a_windows_path_under_envforge_data(tmp_path: Path) -> None:
    archive = mingw_7z(tmp_path / "upstream" / MINGW_NAME)
    ctx = mingw_ctx(tmp_path, archive, data=Path(r"C:\Users\alice\AppData\Local\envforge"))
    assert str(mingw_bin(ctx)) == (r"C:\Users\alice\AppData\Local\envforge\tools"
                                   r"\mingw-w64-8.1.0-posix-seh\mingw64\bin")
    assert str(mingw_gxx(ctx)).endswith(r"\mingw-w64-8.1.0-posix-seh\mingw64\bin\g++.exe")
