"""libgpuarray 0.7.6's knowledge (the Theano pack's libgpuarray.toml): its loader's names and
order ([GA] setup_lib), the toolkits whose DLLs it never finds, the hints and doctor's names."""

from __future__ import annotations

import re

import pytest

from envforge.knowledge import cuda_library_name, library_file_patterns
from envforge.packs.theano import THEANO
from envforge.packs.theano.libgpuarray import (
    libgpuarray_knowledge,
    libgpuarray_names,
    linux_loader_names,
    loader_hints,
    loader_name_mismatch,
)


def test_every_loader_row_names_its_source() -> None:
    assert all("[GA]" in r.source for r in libgpuarray_knowledge().loader)


@pytest.mark.parametrize(("driver", "order"), [
    # "Skip versions that are higher or equal to the driver version" ([GA] setup_lib): the
    # old lookup tried 9.1 after a 9.0 driver, the apply step did not; now both read this.
    ("9.0", ("nvrtc64_90.dll", "nvrtc64_80.dll", "nvrtc64_75.dll", "nvrtc64_70.dll")),
    ("8.0", ("nvrtc64_80.dll", "nvrtc64_75.dll", "nvrtc64_70.dll")),
    ("9.1", ("nvrtc64_91.dll", "nvrtc64_90.dll", "nvrtc64_80.dll", "nvrtc64_75.dll",
             "nvrtc64_70.dll")),
])
def test_fallback_skips_versions_at_or_above_the_driver(driver: str,
                                                        order: tuple[str, ...]) -> None:
    assert libgpuarray_names("win-64", driver).nvrtc == order


@pytest.mark.parametrize("release", ["10.0", "10.1", "10.2", "11.8", "12.4"])
def test_every_toolkit_from_10_ships_an_nvrtc_the_loader_never_asks_for(release: str) -> None:
    assert loader_name_mismatch(release) is not None
    asked = libgpuarray_names("win-64", release)
    shipped = cuda_library_name(release, "nvrtc", "win-64")
    assert shipped is not None and shipped.value not in asked.nvrtc


@pytest.mark.parametrize(("release", "matches"), [
    ("10.0", True), ("10.1", False), ("10.2", False), ("11.8", False)])
def test_cublas_names_differ_from_10_1(release: str, matches: bool) -> None:
    """10.0 ships cublas64_100.dll, the very name the loader asks for; 10.1 and 10.2 ship
    cublas64_10.dll (the old row listed 10.2's names for every CUDA 10)."""
    shipped = cuda_library_name(release, "cublas", "win-64")
    assert shipped is not None
    assert (shipped.value == libgpuarray_names("win-64", release).cublas[0]) is matches


def test_cuda_9_ships_what_the_loader_asks_for() -> None:
    assert loader_name_mismatch("9.2") is None
    shipped = cuda_library_name("9.2", "nvrtc", "win-64")
    assert shipped is not None and shipped.value == libgpuarray_names("win-64", "9.2").nvrtc[0]


def test_libgpuarray_names_on_windows_follow_the_drivers_cuda() -> None:
    names = libgpuarray_names("win-64", "10.2")
    assert names.driver == "nvcuda.dll"
    assert names.nvrtc == ("nvrtc64_102.dll", "nvrtc64_91.dll", "nvrtc64_90.dll",
                           "nvrtc64_80.dll", "nvrtc64_75.dll", "nvrtc64_70.dll")
    assert names.cublas[0] == "cublas64_102.dll"
    assert names.cublas[-1] == "cublas64_70.dll"  # paired with the NVRTC that loaded
    assert "[GA]" in names.source


def test_libgpuarray_names_do_not_repeat_a_fallback() -> None:
    names = libgpuarray_names("win-64", "9.1")
    assert names.nvrtc[:2] == ("nvrtc64_91.dll", "nvrtc64_90.dll")
    assert len(set(names.nvrtc)) == len(names.nvrtc)


def test_libgpuarray_names_on_linux_are_unversioned() -> None:
    names = libgpuarray_names("linux-64", "13.0")
    assert (names.driver, names.nvrtc, names.cublas) == \
        ("libcuda.so", ("libnvrtc.so",), ("libcublas.so",))


def test_every_name_the_loader_asks_for_is_a_library_doctor_lists() -> None:
    """Doctor lists folders' library files by the core's CUDA patterns: each name the loader
    asks for (the fallbacks' too) must match one, or doctor would never see it."""
    patterns = re.compile("^(?:" + "|".join(library_file_patterns()) + ")$")
    windows = libgpuarray_names("win-64", "12.4")
    asked = (*linux_loader_names(), windows.driver, *windows.nvrtc, *windows.cublas)
    assert [name for name in asked if not patterns.match(name)] == []


def test_the_pack_answers_with_its_loader_names_and_hints() -> None:
    """Doctor's ldconfig lookup and verify's hints come from the pack, not the core."""
    assert THEANO.dlopen_names() == ("libcuda.so", "libnvrtc.so", "libcublas.so")
    hints = dict(THEANO.error_hints())
    assert [hints[name] for name, _ in loader_hints()] == [hint for _, hint in loader_hints()]
    assert "link it to the driver's libcuda.so.1" in hints["libcuda.so"]
    assert "libgpuarray" in THEANO.knowledge
