"""Layouts, library names and .theanorc locations per platform, computed on any host."""

from __future__ import annotations

from pathlib import Path, PurePosixPath, PureWindowsPath

import pytest

from envforge.host.platform import (
    cuda_layout,
    cuda_library_names,
    cudnn_library_name,
    gpuarray_loader_names,
    home_dir,
    parse_cuda_version,
    theanorc_paths,
)


def test_cuda_layouts() -> None:
    win = cuda_layout("win-64", Path("CUDA/v10.2"))
    assert (win.bin, win.include, win.lib) == (
        Path("CUDA/v10.2/bin"), Path("CUDA/v10.2/include"), Path("CUDA/v10.2/lib/x64"))
    linux = cuda_layout("linux-64", Path("/usr/local/cuda-10.2"))
    assert linux.lib == Path("/usr/local/cuda-10.2/lib64")
    assert linux.include == Path("/usr/local/cuda-10.2/include")


def test_cudnn_names() -> None:
    assert cudnn_library_name("win-64", 7) == "cudnn64_7.dll"
    assert cudnn_library_name("linux-64", 7) == "libcudnn.so.7"
    assert cudnn_library_name("linux-64", 8) == "libcudnn.so.8"


def test_cuda_10_2_names_are_the_ones_nvidia_ships() -> None:
    win = cuda_library_names("win-64", "10.2.89")
    assert win is not None
    assert (win.cudart, win.cublas, win.nvrtc) == (
        "cudart64_102.dll", "cublas64_10.dll", "nvrtc64_102_0.dll")
    linux = cuda_library_names("linux-64", "10.2")
    assert linux is not None
    assert (linux.cudart, linux.cublas, linux.nvrtc) == (
        "libcudart.so.10.2", "libcublas.so.10", "libnvrtc.so.10.2")


@pytest.mark.parametrize(("platform", "version", "nvrtc", "cublas"), [
    ("win-64", "10.0", "nvrtc64_100_0.dll", "cublas64_100.dll"),
    ("win-64", "11.8", "nvrtc64_112_0.dll", "cublas64_11.dll"),
    ("win-64", "12.4.1", "nvrtc64_120_0.dll", "cublas64_12.dll"),
    ("linux-64", "13.0.48", "libnvrtc.so.13", "libcublas.so.13"),
    ("linux-64", "11.1", "libnvrtc.so.11.1", "libcublas.so.11"),
    ("linux-64", "9.0", "libnvrtc.so.9.0", "libcublas.so.9.0"),
])
def test_names_across_releases(platform: str, version: str, nvrtc: str, cublas: str) -> None:
    names = cuda_library_names(platform, version)  # type: ignore[arg-type]
    assert names is not None
    assert (names.nvrtc, names.cublas) == (nvrtc, cublas)


def test_unknown_release_has_no_names() -> None:
    assert cuda_library_names("win-64", "7.5") is None
    with pytest.raises(ValueError, match="not a CUDA version"):
        parse_cuda_version("ten")
    assert parse_cuda_version("10.2.89") == (10, 2)


def test_gpuarray_asks_for_the_drivers_version_then_falls_back() -> None:
    names = gpuarray_loader_names("win-64", "10.2")
    assert names.driver == "nvcuda.dll"
    assert names.nvrtc == ("nvrtc64_102.dll", "nvrtc64_91.dll", "nvrtc64_90.dll",
                           "nvrtc64_80.dll", "nvrtc64_75.dll", "nvrtc64_70.dll")
    assert names.cublas[0] == "cublas64_102.dll"
    assert names.cublas[-1] == "cublas64_70.dll"  # paired with the NVRTC that loaded


def test_fallback_skips_versions_at_or_above_the_driver() -> None:
    assert gpuarray_loader_names("win-64", "9.1").nvrtc == (
        "nvrtc64_91.dll", "nvrtc64_90.dll", "nvrtc64_80.dll", "nvrtc64_75.dll", "nvrtc64_70.dll")
    assert gpuarray_loader_names("win-64", "13.0").nvrtc[0] == "nvrtc64_130.dll"
    assert gpuarray_loader_names("win-64", "12.4").cublas[0] == "cublas64_124.dll"


def test_gpuarray_names_on_linux_are_unversioned() -> None:
    names = gpuarray_loader_names("linux-64", "13.0")
    assert (names.driver, names.nvrtc, names.cublas) == (
        "libcuda.so", ("libnvrtc.so",), ("libcublas.so",))
    with pytest.raises(ValueError, match="driver's CUDA version"):
        gpuarray_loader_names("win-64")


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
