"""Lookups over the CUDA, cuDNN, artifact, conda and Debian tables."""

from __future__ import annotations

from typing import Literal

import pytest

from envforge.knowledge import (
    compute_capability_range,
    conda_package,
    cuda_library_name,
    cudnn_support,
    cudnn_supports,
    debian_package,
    find_artifact,
    major_minor,
    max_host_gcc,
    min_driver,
)
from envforge.spec import Platform


def test_min_driver_cites_nvidias_table() -> None:
    linux = min_driver("10.2", "linux-64")
    windows = min_driver("10.2.89", "win-64")
    assert linux is not None and linux.value == "440.33"
    assert windows is not None and windows.value == "441.22"
    assert "CUDA Toolkit and Corresponding Driver Versions" in linux.source



@pytest.mark.parametrize(("cuda", "platform", "minimum"), [
    # Keyed by the release named, not by major.minor (11.0.2 used to get 11.0.3's 450.51.06).
    ("11.0.2", "linux-64", "450.51.05"), ("11.0.3", "linux-64", "450.51.06"),
    ("11.0.2", "win-64", "451.48"), ("9.2.88", "linux-64", "396.26"),
    ("9.2.148", "linux-64", "396.37"), ("8.0.44", "win-64", "369.30"),
    # A bare major.minor: its oldest listed release (the GA); an unlisted update: the newest
    # listed release below it ("10.1.105 general release, and updates").
    ("11.0", "linux-64", "450.51.05"), ("9.2", "win-64", "397.44"),
    ("10.1.243", "linux-64", "418.39"), ("9.2.150", "linux-64", "396.37"),
])
def test_min_driver_of_the_release_named(cuda: str, platform: Platform, minimum: str) -> None:
    fact = min_driver(cuda, platform)
    assert fact is not None and fact.value == minimum


def test_min_driver_is_none_where_nvidia_lists_none() -> None:
    assert min_driver("13.0", "win-64") is None
    assert min_driver("7.5", "linux-64") is None


@pytest.mark.parametrize(("cuda", "expected"), [
    ("8.0", (20, 62)), ("9.1", (30, 72)), ("10.2.89", (30, 75)), ("11.0", (35, 80)),
    ("11.1", (35, 86)), ("11.4", (35, 87)), ("11.8", (35, 90)), ("12.0", (50, 90)),
    ("12.8", (50, 120)), ("12.9", (50, 121)), ("13.0", (75, 121)),
])
def test_compute_capability_range(cuda: str, expected: tuple[int, int]) -> None:
    found = compute_capability_range(cuda)
    assert found is not None and found.value == expected


def test_compute_capability_unknown_toolkit() -> None:
    assert compute_capability_range("7.0") is None


def test_host_gcc_limit_only_for_old_toolkits_on_linux() -> None:
    limit = max_host_gcc("10.2", "linux-64")
    assert limit is not None and limit.value == 8 and "Spack" in limit.source
    assert max_host_gcc("9.0.76", "linux-64") is not None
    assert max_host_gcc("11.0", "linux-64") is None
    assert max_host_gcc("10.2", "win-64") is None


@pytest.mark.parametrize(("library", "platform", "expected"), [
    ("cudart", "win-64", "cudart64_102.dll"), ("cudart", "linux-64", "libcudart.so.10.2"),
    ("cublas", "win-64", "cublas64_10.dll"), ("cublas", "linux-64", "libcublas.so.10"),
    ("nvrtc", "win-64", "nvrtc64_102_0.dll"), ("nvrtc", "linux-64", "libnvrtc.so.10.2"),
])
def test_cuda_10_2_library_names(library: Literal["cudart", "cublas", "nvrtc"],
                                 platform: Platform, expected: str) -> None:
    found = cuda_library_name("10.2", library, platform)
    assert found is not None and found.value == expected


def test_cuda_library_names_unknown_toolkit() -> None:
    assert cuda_library_name("7.5", "nvrtc", "win-64") is None


@pytest.mark.parametrize(("cudnn", "cuda", "expected"), [
    ("7.6.5.32", "10.2", True), ("7.6.5.32", "9.0", True), ("7.6.5", "10.1.105", True),
    ("7.6.5.32", "9.1", False), ("7.6.5.32", "11.0", False),
    ("8.0.5.39", "11.0", True), ("8.0.5.39", "11.1", True), ("8.0.5.39", "10.1", True),
    ("8.0.4.30", "11.1", True), ("8.0.3.33", "11.1", False), ("8.0.0.180", "10.1", False),
    ("8.0.0.180", "11.0", True), ("8.0.2.39", "10.1", True),
    ("8.1.1.33", "11.4", True), ("8.2.0.53", "11.8", True), ("8.1.0.77", "10.1", False),
    ("9.1.0", "12.0", None), ("8.2.1.32", "11.3", None),
])
def test_cudnn_supports(cudnn: str, cuda: str, expected: bool | None) -> None:
    assert cudnn_supports(cudnn, cuda) is expected


def test_cudnn_support_for_a_cuda_minimum() -> None:
    seven = cudnn_support("7.6.5.32")
    eight = cudnn_support("8.1.0.77")
    assert seven is not None and eight is not None
    assert not seven.supports_some_at_least("11.8")
    assert seven.supports_some_at_least("10.2")
    assert eight.supports_some_at_least("11.8")
    assert not eight.supports_some_at_least("12.0")
    assert "r440" in seven.note


def test_find_artifact_by_role_platform_and_version_prefix() -> None:
    installer = find_artifact("cuda-installer", "win-64", "10.2")
    assert installer is not None and installer.filename == "cuda_10.2.89_441.22_win10.exe"
    assert installer.url == ("https://developer.download.nvidia.com/compute/cuda/10.2/Prod/"
                             "local_installers/cuda_10.2.89_441.22_win10.exe")
    linux = find_artifact("cuda-installer", "linux-64", "10.2.89")
    assert linux is not None and linux.sha256.startswith("560d07fd")
    assert find_artifact("cuda-installer", "linux-64", "11.0") is None


def test_find_artifact_for_cudnn_needs_a_login_and_matches_cuda_and_filename() -> None:
    zip_ = find_artifact("cudnn", "win-64", "7.6.5.32", cuda="10.2",
                         filename="cudnn-10.2-windows10-x64-v7.6.5.32.zip")
    assert zip_ is not None and zip_.login_required
    assert zip_.sha256 == "fba812f60c61bc33b81db06cd55e8d769774d036186571d724295c71c9936064"
    assert find_artifact("cudnn", "win-64", "7.6.5.32", cuda="10.1") is None
    assert find_artifact("cudnn", "win-64", "7.6.5.32",
                         filename="cudnn-10.2-linux-x64-v7.6.5.32.tgz") is None
    tgz = find_artifact("cudnn", "linux-64", "7.6.5")
    assert tgz is not None and tgz.filename == "cudnn-10.2-linux-x64-v7.6.5.32.tgz"


def test_find_artifact_compiler_and_sdist() -> None:
    mingw = find_artifact("compiler", "win-64", "8.1.0")
    assert mingw is not None and mingw.url is not None and "sourceforge" in mingw.url
    assert find_artifact("compiler", "linux-64", "8.1.0") is None
    sdist = find_artifact("sdist", "linux-64", "1.0.5")
    assert sdist is not None and sdist.url is not None
    assert sdist.url.startswith("https://files.pythonhosted.org/")


def test_conda_and_debian_rows() -> None:
    theano = conda_package("theano-pymc")
    assert theano is not None and "pygpu >=0.7.0,<0.8" in theano.depends
    assert "m2w64-toolchain" in theano.note
    pygpu = debian_package("bookworm", "python3-pygpu")
    assert pygpu is not None and (pygpu.provides, pygpu.version, pygpu.python) == \
        ("pygpu", "0.7.6", "3.11")
    bullseye = debian_package("bullseye", "python3-pygpu")
    assert bullseye is not None and (bullseye.version, bullseye.python) == ("0.7.6", "3.9")
    assert debian_package("buster", "python3-pygpu") is None


def test_major_minor() -> None:
    assert major_minor("10.2.89") == (10, 2)
    assert major_minor(">=11.8") == (11, 8)
    assert major_minor("13") == (13, 0)
    with pytest.raises(ValueError):
        major_minor("abc")
