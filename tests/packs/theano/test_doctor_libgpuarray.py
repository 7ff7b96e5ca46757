"""The library names libgpuarray 0.7.6 loads, on Windows- and Linux-shaped hosts."""

from __future__ import annotations

from pathlib import Path

import pytest

from envforge.app.doctorfixes import apply_fixes, undo_fixes
from envforge.doctor import fix_steps
from tests.doctor.layouts import (
    QUERY_441,
    SMI_441,
    conda_env,
    home,
    ids,
    judge,
    linux_cuda,
    look,
    nvidia_smi,
    only,
    windows_cuda,
)
from tests.testing.packs import REGISTRY


def _windows(tmp_path: Path) -> tuple[dict[str, str], Path]:
    cuda = windows_cuda(tmp_path / "Program Files", "10.2")
    system32 = tmp_path / "Windows" / "System32"
    nvidia_smi(system32, table=SMI_441, query=QUERY_441, compute_cap=False,
               name="nvidia-smi.exe")
    prefix = conda_env(tmp_path / "conda", {"theano-pymc": "1.0.5", "pygpu": "0.7.6",
                                            "numpy": "1.19.5"})
    return {"PATH": f"{cuda / 'bin'};{system32}", "CUDA_PATH": str(cuda),
            "CONDA_PREFIX": str(prefix), "USERPROFILE": str(home(tmp_path))}, cuda


@pytest.mark.posix_only("its stand-in nvidia-smi, nvcc or g++ is an sh script")
def test_cuda_10_2_dll_names(tmp_path: Path) -> None:
    """Driver CUDA 10.2: the loader asks nvrtc64_102.dll and cublas64_102.dll; CUDA 10.2
    ships nvrtc64_102_0.dll and cublas64_10.dll. Copies fix it, and roll back."""
    env, cuda = _windows(tmp_path)
    findings = [f for f in judge(look(tmp_path, env, platform="win-64"))
                if f.id == "libgpuarray.dll-name"]
    assert [f.title.split(" (")[0] for f in findings] == [
        "libgpuarray asks for nvrtc64_102.dll", "libgpuarray asks for cublas64_102.dll"]
    assert all(f.severity == "error" and f.fix is not None and f.fix.safe for f in findings)
    assert "Theano/Theano#6681" in findings[0].source
    bin_dir = cuda / "bin"
    before = sorted(p.name for p in bin_dir.iterdir())

    state = tmp_path / "state"
    apply_fixes(fix_steps(findings, REGISTRY), state)

    for asked, shipped in (("nvrtc64_102.dll", "nvrtc64_102_0.dll"),
                           ("cublas64_102.dll", "cublas64_10.dll")):
        assert (bin_dir / asked).read_bytes() == (bin_dir / shipped).read_bytes()
    assert "libgpuarray.dll-name" not in ids(judge(look(tmp_path, env, platform="win-64")))
    undo_fixes(state)
    assert sorted(p.name for p in bin_dir.iterdir()) == before


@pytest.mark.posix_only("its stand-in nvidia-smi, nvcc or g++ is an sh script")
def test_fallback_to_an_older_nvrtc(tmp_path: Path) -> None:
    """With nvrtc64_90.dll of CUDA 9.0 on PATH, the loader falls back to it (and cuBLAS 9.0)."""
    env, _ = _windows(tmp_path)
    old = windows_cuda(tmp_path / "Program Files", "9.0")
    env["PATH"] += f";{old / 'bin'}"
    findings = [f for f in judge(look(tmp_path, env, platform="win-64"))
                if f.id == "libgpuarray.dll-name"]
    assert [(f.severity, f.title.split(" (")[0]) for f in findings] == [
        ("warning", "libgpuarray asks for nvrtc64_102.dll")]
    assert "so it loads nvrtc64_90.dll of an older CUDA" in findings[0].title


@pytest.mark.posix_only("its stand-in nvidia-smi, nvcc or g++ is an sh script")
def test_names_in_the_loader_cache_count_as_found(tmp_path: Path) -> None:
    """As on the H200 image: the toolkit's unversioned names reach dlopen through ld.so.cache."""
    cuda = linux_cuda(tmp_path, "13.0.88")
    prefix = conda_env(tmp_path / "conda", {"theano-pymc": "1.0.5", "pygpu": "0.7.6"})
    env = {"CUDA_PATH": str(cuda), "CONDA_PREFIX": str(prefix), "HOME": str(home(tmp_path))}
    lib = "/usr/local/cuda/targets/x86_64-linux/lib"
    ldconfig = tmp_path / "ldconfig"
    # a cache as long as a real one: libgpuarray's names must be found past any clipping
    filler = "".join(f"\tlibx{i}.so.1 (libc6,x86-64) => /usr/lib/libx{i}.so.1\n"
                     for i in range(3000))
    ldconfig.write_text("#!/bin/sh\ncat <<'OUT'\n3003 libs found in cache `/etc/ld.so.cache'\n"
                        + filler +
                        f"\tlibnvrtc.so (libc6,x86-64) => {lib}/libnvrtc.so\n"
                        "\tlibcuda.so (libc6,x86-64) => /usr/local/nvidia/lib64/libcuda.so\n"
                        f"\tlibcublas.so (libc6,x86-64) => {lib}/libcublas.so\nOUT\n")
    ldconfig.chmod(0o755)
    assert "libgpuarray.unversioned-libs" in ids(judge(look(tmp_path, env)))
    assert "libgpuarray.unversioned-libs" not in ids(judge(look(tmp_path, env,
                                                                ldconfig=(str(ldconfig), "-p"))))


@pytest.mark.posix_only("its stand-in nvidia-smi, nvcc or g++ is an sh script")
def test_linux_unversioned_names(tmp_path: Path) -> None:
    cuda = linux_cuda(tmp_path, "13.0.88")
    driver = tmp_path / "usr" / "lib" / "x86_64-linux-gnu"
    driver.mkdir(parents=True)
    (driver / "libcuda.so.580.159.04").write_bytes(b"\x7fELF")
    (driver / "libcuda.so.1").symlink_to("libcuda.so.580.159.04")
    prefix = conda_env(tmp_path / "conda", {"theano-pymc": "1.0.5", "pygpu": "0.7.6"})
    env = {"CUDA_PATH": str(cuda), "CONDA_PREFIX": str(prefix), "HOME": str(home(tmp_path))}
    finding = only(judge(look(tmp_path, env, lib_dirs=(driver,))),
                   "libgpuarray.unversioned-libs")
    assert finding.title.startswith("libgpuarray dlopens libcuda.so, libnvrtc.so, libcublas.so")
    assert finding.fix is not None
    assert f"ln -s {driver}/libcuda.so.1 ~/.local/lib/envforge-libs/libcuda.so" in finding.fix.text
    assert f"ln -s {cuda}/lib64/libnvrtc.so.13 " in finding.fix.text
    # the fix, in a folder of ours: links under the unversioned names, first on the path
    links = tmp_path / "links"
    links.mkdir()
    for name, target in (("libcuda.so", driver / "libcuda.so.1"),
                         ("libnvrtc.so", cuda / "lib64" / "libnvrtc.so.13"),
                         ("libcublas.so", cuda / "lib64" / "libcublas.so.13")):
        (links / name).symlink_to(target)
    env["LD_LIBRARY_PATH"] = str(links)
    assert "libgpuarray.unversioned-libs" not in ids(judge(look(tmp_path, env,
                                                                lib_dirs=(driver,))))


def test_pygpu_installed_means_the_gpu_is_intended(tmp_path: Path) -> None:
    """The pack's own answer (``gpu_intended``), not only the core's: pygpu in the judged
    environment asks for the GPU even where no Theano flag names one."""
    theano = REGISTRY.get("theano")
    assert theano is not None
    with_pygpu = conda_env(tmp_path / "gpu", {"theano-pymc": "1.0.5", "pygpu": "0.7.6"})
    without = conda_env(tmp_path / "cpu", {"theano-pymc": "1.0.5"})
    for prefix, intended in ((with_pygpu, True), (without, False)):
        env = {"CONDA_PREFIX": str(prefix), "HOME": str(home(tmp_path))}
        assert theano.gpu_intended(look(tmp_path, env), None) is intended
