"""The probe's pure parts, run here under envforge's own Python: finding the libcublas
that libgpuarray loaded, from /proc/self/maps text."""

from __future__ import annotations

from envforge.packs.theano import PROBE_SCRIPT
from tests.testing.probes import load_probe

mapped_library = load_probe(PROBE_SCRIPT.with_name("probe_gemm.py")).mapped_library

# Lines in /proc/PID/maps' format (proc(5)): address, perms, offset, dev, inode, path.
CUDA_LIB = "/usr/local/cuda-13.0/targets/x86_64-linux/lib"
MAPS = "\n".join([
    f"7f1c2a000000-7f1c2a200000 r--p 00000000 103:02 2228345 {CUDA_LIB}/libcublasLt.so.13.0.0.19",
    f"7f1c3a000000-7f1c3a400000 r--p 00000000 103:02 2228340 {CUDA_LIB}/libcublas.so.13.0.0.19",
    f"7f1c3a400000-7f1c3a800000 r-xp 00400000 103:02 2228340 {CUDA_LIB}/libcublas.so.13.0.0.19",
    "7f1c4b000000-7f1c4b100000 r-xp 00000000 103:02 1966213 "
    "/usr/lib/x86_64-linux-gnu/libcuda.so.580.159.04",
    "7f1c5c000000-7f1c5c021000 rw-p 00000000 00:00 0",
    "7ffd1e5f0000-7ffd1e611000 rw-p 00000000 00:00 0                          [stack]",
])


def test_the_loaded_cublas_not_cublaslt() -> None:
    assert mapped_library(MAPS, "libcublas") == f"{CUDA_LIB}/libcublas.so.13.0.0.19"
    assert mapped_library(MAPS, "libcuda") == \
        "/usr/lib/x86_64-linux-gnu/libcuda.so.580.159.04"


def test_unloaded_or_unversioned_libraries() -> None:
    assert mapped_library(MAPS, "libnvrtc") is None
    assert mapped_library("", "libcublas") is None
    line = "7f00-7f10 r-xp 00000000 08:01 42 /opt/cuda/lib64/libcublas.so\n"
    assert mapped_library(line, "libcublas") == "/opt/cuda/lib64/libcublas.so"
    assert mapped_library("7f00-7f10 r-xp 00000000 08:01 42 /opt/x/libcublas.so.old.txt\n",
                          "libcublasLt") is None


def test_a_path_with_spaces_is_kept_whole() -> None:
    line = "7f00-7f10 r-xp 00000000 08:01 42 /opt/my cuda/lib64/libcublas.so.12\n"
    assert mapped_library(line, "libcublas") == "/opt/my cuda/lib64/libcublas.so.12"
