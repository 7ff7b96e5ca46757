"""CUDA layouts and home folders per platform, computed on any host."""

from __future__ import annotations

from pathlib import Path, PureWindowsPath

from envforge.host.platform import cuda_layout, home_dir


def test_cuda_layouts() -> None:
    win = cuda_layout("win-64", Path("CUDA/v10.2"))
    assert (win.bin, win.include, win.lib) == (
        Path("CUDA/v10.2/bin"), Path("CUDA/v10.2/include"), Path("CUDA/v10.2/lib/x64"))
    linux = cuda_layout("linux-64", Path("/usr/local/cuda-10.2"))
    assert linux.lib == Path("/usr/local/cuda-10.2/lib64")
    assert linux.include == Path("/usr/local/cuda-10.2/include")


def test_windows_home_follows_the_python_and_homepath_is_last() -> None:
    env = {"HOME": r"D:\msys\home\me", "USERPROFILE": r"C:\Users\me"}
    assert home_dir("win-64", env) == PureWindowsPath(r"D:\msys\home\me")  # Python 3.7
    assert home_dir("win-64", env, python="3.8") == PureWindowsPath(r"C:\Users\me")
    assert home_dir("win-64", {"userprofile": r"C:\Users\me"}) == PureWindowsPath(r"C:\Users\me")
    assert home_dir("win-64", {"HOMEDRIVE": "E:", "HOMEPATH": r"\Users\me"}) == \
        PureWindowsPath(r"E:\Users\me")
    assert home_dir("win-64", {}) is None
