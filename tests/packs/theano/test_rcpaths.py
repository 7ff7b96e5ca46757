"""Where Theano looks for .theanorc per platform (packs/theano/rcpaths.py), on any host."""

from __future__ import annotations

from pathlib import PurePosixPath, PureWindowsPath

from envforge.host.platform import home_dir
from envforge.packs.theano.rcpaths import theanorc_paths


def test_windows_python37_prefers_home_over_userprofile() -> None:
    env = {"HOME": r"D:\msys\home\me", "USERPROFILE": r"C:\Users\me"}
    paths = theanorc_paths("win-64", env)
    assert paths.home == PureWindowsPath(r"D:\msys\home\me")
    assert paths.files == (PureWindowsPath(r"D:\msys\home\me\.theanorc"),
                           PureWindowsPath(r"D:\msys\home\me\.theanorc.txt"))
    assert paths.write_to == PureWindowsPath(r"D:\msys\home\me\.theanorc.txt")
    assert home_dir("win-64", env, python="3.8") == PureWindowsPath(r"C:\Users\me")


def test_windows_variable_names_are_case_insensitive_and_homepath_is_last() -> None:
    assert home_dir("win-64", {"userprofile": r"C:\Users\me"}) == PureWindowsPath(r"C:\Users\me")
    assert home_dir("win-64", {"HOMEDRIVE": "E:", "HOMEPATH": r"\Users\me"}) == \
        PureWindowsPath(r"E:\Users\me")
    assert home_dir("win-64", {}) is None
    assert theanorc_paths("win-64", {}).files == (PureWindowsPath("~/.theanorc"),
                                                  PureWindowsPath("~/.theanorc.txt"))


def test_theanorc_variable_is_split_on_the_targets_separator() -> None:
    win = theanorc_paths("win-64", {"USERPROFILE": r"C:\Users\me",
                                    "THEANORC": r"~\.theanorc;C:\proj\.theanorc"})
    assert win.files == (PureWindowsPath(r"C:\Users\me\.theanorc"),
                         PureWindowsPath(r"C:\proj\.theanorc"))  # no .theanorc.txt
    assert win.write_to == PureWindowsPath(r"C:\proj\.theanorc")
    linux = theanorc_paths("linux-64", {"HOME": "/home/me", "THEANORC": "~/.theanorc:./.theanorc"})
    assert linux.files == (PurePosixPath("/home/me/.theanorc"), PurePosixPath(".theanorc"))
    assert theanorc_paths("linux-64", {"HOME": "/home/me"}).files == (
        PurePosixPath("/home/me/.theanorc"),)


def test_empty_theanorc_means_no_file_is_read() -> None:
    paths = theanorc_paths("linux-64", {"HOME": "/home/me", "THEANORC": ""})
    assert paths.files == ()
    assert paths.write_to == PurePosixPath("/home/me/.theanorc")
