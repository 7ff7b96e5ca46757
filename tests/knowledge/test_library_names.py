"""Library names as the knowledge base gives them: every release the old tables in
host/platform.py covered (libgpuarray's loader order: tests/packs/theano/test_libgpuarray.py)."""

from __future__ import annotations

import pytest

from envforge.knowledge import (
    cuda_library_name,
    cuda_runtime_release,
    cudnn_library_name,
    driver_library,
)
from envforge.spec import Platform


@pytest.mark.parametrize(("cudnn", "platform", "name"), [
    ("7.6.5", "win-64", "cudnn64_7.dll"), ("7.6.5", "linux-64", "libcudnn.so.7"),
    ("8.0.5", "linux-64", "libcudnn.so.8")])
def test_cudnn_names(cudnn: str, platform: Platform, name: str) -> None:
    found = cudnn_library_name(cudnn, platform)
    assert found is not None and found.value == name


def test_cuda_10_2_names_are_the_ones_nvidia_ships() -> None:
    def names(platform: Platform) -> tuple[str, ...]:
        return tuple(cuda_library_name("10.2.89", lib, platform).value  # type: ignore[union-attr]
                     for lib in ("cudart", "cublas", "nvrtc"))
    assert names("win-64") == ("cudart64_102.dll", "cublas64_10.dll", "nvrtc64_102_0.dll")
    assert names("linux-64") == ("libcudart.so.10.2", "libcublas.so.10", "libnvrtc.so.10.2")


# Every release host/platform.py's table covered (9.0-13), plus 8.0 (libgpuarray's fallback).
@pytest.mark.parametrize(("platform", "version", "nvrtc", "cublas"), [
    ("win-64", "8.0", "nvrtc64_80.dll", "cublas64_80.dll"),
    ("win-64", "9.1", "nvrtc64_91.dll", "cublas64_91.dll"),
    ("win-64", "10.0", "nvrtc64_100_0.dll", "cublas64_100.dll"),
    ("win-64", "10.1", "nvrtc64_101_0.dll", "cublas64_10.dll"),
    ("win-64", "10.2", "nvrtc64_102_0.dll", "cublas64_10.dll"),
    ("win-64", "11.0", "nvrtc64_110_0.dll", "cublas64_11.dll"),
    ("win-64", "11.1", "nvrtc64_111_0.dll", "cublas64_11.dll"),
    ("win-64", "11.8", "nvrtc64_112_0.dll", "cublas64_11.dll"),
    ("win-64", "12.4.1", "nvrtc64_120_0.dll", "cublas64_12.dll"),
    ("win-64", "13.0", "nvrtc64_130_0.dll", "cublas64_13.dll"),
    ("linux-64", "13.0.48", "libnvrtc.so.13", "libcublas.so.13"),
    ("linux-64", "11.1", "libnvrtc.so.11.1", "libcublas.so.11"),
    ("linux-64", "11.5", "libnvrtc.so.11.2", "libcublas.so.11"),
    ("linux-64", "9.0", "libnvrtc.so.9.0", "libcublas.so.9.0"),
])
def test_names_across_releases(platform: Platform, version: str, nvrtc: str,
                               cublas: str) -> None:
    got = (cuda_library_name(version, "nvrtc", platform),
           cuda_library_name(version, "cublas", platform))
    assert [f.value if f else None for f in got] == [nvrtc, cublas]


def test_unknown_release_has_no_names() -> None:
    assert cuda_library_name("7.5", "nvrtc", "win-64") is None


@pytest.mark.parametrize(("name", "platform", "release"), [
    ("cudart64_102.dll", "win-64", "10.2"), ("CUDART64_90.DLL", "win-64", "9.0"),
    ("cudart64_110.dll", "win-64", "11"), ("libcudart.so.10.2.89", "linux-64", "10.2"),
    ("libcudart.so.12", "linux-64", "12"), ("libcudart.so", "linux-64", None),
    ("cudart64_102.dll", "linux-64", None)])
def test_runtime_release_from_the_file_name(name: str, platform: Platform,
                                            release: str | None) -> None:
    assert cuda_runtime_release(name, platform) == release


def test_driver_library() -> None:
    assert (driver_library("win-64"), driver_library("linux-64")) == ("nvcuda.dll",
                                                                      "libcuda.so.1")
