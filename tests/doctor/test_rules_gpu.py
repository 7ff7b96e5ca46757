"""The driver and the GPU against the CUDA in use, judged from real layouts."""

from __future__ import annotations

from pathlib import Path

import pytest

from envforge.doctor import diagnose, observe
from envforge.doctor.rules import judged
from envforge.doctor.rules.common import gpu_intended
from envforge.packapi import Registry
from tests.doctor.layouts import (
    QUERY_441,
    SMI_441,
    SMI_H200,
    SMI_NO_DRIVER,
    expected,
    home,
    ids,
    judge,
    linux_cuda,
    look,
    nvidia_smi,
    only,
    venv,
    windows_cuda,
)
from tests.testing.packs import REGISTRY


def smi_with_driver(table: str, driver: str, cuda: str) -> str:
    """A real nvidia-smi table with another driver (the layout is the driver's own)."""
    return table.replace("580.159.04", driver).replace("CUDA Version: 13.0",
                                                      f"CUDA Version: {cuda}")


@pytest.mark.posix_only("its stand-in nvidia-smi, nvcc or g++ is an sh script")
def test_driver_too_old_for_the_toolkit_in_use(tmp_path: Path) -> None:
    cuda = linux_cuda(tmp_path, "11.8.89")
    nvidia_smi(tmp_path / "bin", table=smi_with_driver(SMI_H200, "470.82.01", "11.4"))
    env = {"PATH": str(tmp_path / "bin"), "CUDA_PATH": str(cuda), "HOME": str(home(tmp_path))}

    finding = only(judge(look(tmp_path, env)), "driver.too-old")

    assert finding.severity == "error"
    assert "470.82.01" in finding.title and "520.61.05" in finding.title
    assert finding.source.startswith("NVIDIA CUDA Toolkit release notes")
    assert any("Driver Version: 470.82.01" in e.text for e in finding.evidence)
    # the fix, done: a driver new enough
    nvidia_smi(tmp_path / "bin", table=smi_with_driver(SMI_H200, "520.61.05", "11.8"))
    assert "driver.too-old" not in ids(judge(look(tmp_path, env)))


@pytest.mark.posix_only("its stand-in nvidia-smi, nvcc or g++ is an sh script")
def test_windows_driver_rows_are_windows_own(tmp_path: Path) -> None:
    """441.22 runs CUDA 10.2 on Windows but not 11.0 (451.82)."""
    cuda = windows_cuda(tmp_path / "Program Files", "11.0")
    nvidia_smi(tmp_path / "sys", table=SMI_441, query=QUERY_441, compute_cap=False,
               name="nvidia-smi.exe")
    env = {"PATH": f"{tmp_path / 'sys'};{cuda / 'bin'}", "USERPROFILE": str(home(tmp_path))}
    finding = only(judge(look(tmp_path, env, platform="win-64")), "driver.too-old")
    assert "451.82" in finding.title
    older = windows_cuda(tmp_path / "Program Files", "10.2")
    env["CUDA_PATH"] = str(older)  # the environment now points at 10.2
    assert "driver.too-old" not in ids(judge(look(tmp_path, env, platform="win-64")))


@pytest.mark.posix_only("its stand-in nvidia-smi, nvcc or g++ is an sh script")
def test_lock_judges_the_locked_toolkit_only(tmp_path: Path) -> None:
    linux_cuda(tmp_path / "local", "10.2.89")
    linux_cuda(tmp_path / "local", "13.0.88")
    nvidia_smi(tmp_path / "bin", table=smi_with_driver(SMI_H200, "418.87.01", "10.1"))
    facts = look(tmp_path, {"PATH": str(tmp_path / "bin"), "HOME": str(home(tmp_path))},
                 cuda_search=(tmp_path / "local",))
    found = [f for f in judge(facts, expected()) if f.id == "driver.too-old"]
    assert [f.title for f in found] == [
        "driver 418.87.01 is older than CUDA 10.2.89 needs (440.33 on linux-64)"]


@pytest.mark.posix_only("its stand-in nvidia-smi, nvcc or g++ is an sh script")
def test_no_driver_where_the_gpu_is_wanted(tmp_path: Path) -> None:
    nvidia_smi(tmp_path / "bin", fails=SMI_NO_DRIVER)
    rc = home(tmp_path, "[global]\ndevice = cuda\n")
    env = {"PATH": str(tmp_path / "bin"), "HOME": str(rc)}
    finding = only(judge(look(tmp_path, env)), "driver.missing")
    assert finding.severity == "error"
    assert "couldn't communicate" in finding.evidence[0].text
    (rc / ".theanorc").write_text("[global]\ndevice = cpu\n")  # the fix the finding offers
    assert only(judge(look(tmp_path, env)), "driver.missing").severity == "info"


@pytest.mark.posix_only("its stand-in nvidia-smi, nvcc or g++ is an sh script")
def test_an_opencl_device_wants_no_nvidia_driver(tmp_path: Path) -> None:
    """Theano's opencl0:0 runs on another vendor's OpenCL: no NVIDIA driver is an info, not
    an error, though Theano's own GPU rules (libgpuarray) still apply."""
    from envforge.packs.theano.doctor_common import gpu_intended as theano_gpu

    nvidia_smi(tmp_path / "bin", fails=SMI_NO_DRIVER)
    rc = home(tmp_path, "[global]\ndevice = opencl0:0\n")
    facts = look(tmp_path, {"PATH": str(tmp_path / "bin"), "HOME": str(rc)})
    assert only(judge(facts), "driver.missing").severity == "info"
    assert judged(facts, None, REGISTRY).gpu_frameworks == () and theano_gpu(facts, None)


def test_the_packs_answer_travels_in_the_facts(tmp_path: Path) -> None:
    """diagnose asks each pack once whether its own settings mean a GPU and hands the rules
    the answer inside the facts, nothing in scope: Theano's device flag here."""
    rc = home(tmp_path, "[global]\ndevice = cuda\n")
    facts = look(tmp_path, {"PATH": "", "HOME": str(rc)})
    assert facts.gpu_frameworks == () and not gpu_intended(facts, None)
    seen = judged(facts, None, REGISTRY)
    assert seen.gpu_frameworks == ("theano",) and gpu_intended(seen, None)
    assert judged(facts, None, Registry([p for p in REGISTRY if p.name != "theano"])) == facts


@pytest.mark.posix_only("its stand-in nvidia-smi, nvcc or g++ is an sh script")
def test_gpu_newer_than_the_toolkit(tmp_path: Path) -> None:
    """An H200 (sm_90) with CUDA 10.2: libgpuarray's NVRTC cannot compile for it."""
    cuda = linux_cuda(tmp_path, "10.2.89")
    nvidia_smi(tmp_path / "bin")
    prefix = venv(tmp_path / "env", {"pygpu": "0.7.6", "Theano-PyMC": "1.0.5"})
    env = {"PATH": str(tmp_path / "bin"), "CUDA_PATH": str(cuda), "HOME": str(home(tmp_path)),
           "VIRTUAL_ENV": str(prefix)}
    finding = only(judge(look(tmp_path, env)), "gpu.arch-unsupported")
    assert finding.severity == "error"
    assert "compute_90" in finding.title and "sm_75" in finding.title
    assert "[GA]" in finding.source
    env["CUDA_PATH"] = str(linux_cuda(tmp_path, "12.4.99"))
    assert "gpu.arch-unsupported" not in ids(judge(look(tmp_path, env)))


@pytest.mark.posix_only("its stand-in nvidia-smi, nvcc or g++ is an sh script")
def test_gpu_newer_than_the_toolkit_without_nvrtc_kernels(tmp_path: Path) -> None:
    """A GPU lock judged by packs none of whose frameworks compiles its kernels with NVRTC
    (no ``nvrtc-arch`` source in their configs, as torch's): PTX JIT may still run it, a
    warning; the same host judged with Theano's pack (libgpuarray's NVRTC) is an error."""
    cuda = linux_cuda(tmp_path, "10.2.89")
    nvidia_smi(tmp_path / "bin")
    env = {"PATH": str(tmp_path / "bin"), "CUDA_PATH": str(cuda), "HOME": str(home(tmp_path))}
    torch = Registry(REGISTRY.locked(("torch",)))
    facts = observe(environ=env, platform="linux-64", cwd=tmp_path, cuda_search=(),
                    system_lib_dirs=(), system_include_dirs=(),
                    proc_driver=tmp_path / "no-proc-driver", ldconfig=("true",), packs=torch)
    lock = expected(settings={"torch": {}})
    finding = only(diagnose(facts, lock, packs=torch), "gpu.arch-unsupported")
    assert finding.severity == "warning" and "PTX JIT" in finding.title
    assert "NVRTC for" not in finding.title
    theano = only(judge(look(tmp_path, env), expected()), "gpu.arch-unsupported")
    assert theano.severity == "error"
    assert "Theano asks NVRTC for compute_90" in theano.title and "[GA]" in theano.source


@pytest.mark.posix_only("its stand-in nvidia-smi, nvcc or g++ is an sh script")
def test_gpu_older_than_the_toolkit(tmp_path: Path) -> None:
    """A Kepler K80 (sm_37) with CUDA 13.0, whose oldest is sm_75."""
    cuda = linux_cuda(tmp_path, "13.0.88")
    nvidia_smi(tmp_path / "bin", query="Tesla K80, 3.7, 11441 MiB, 11378 MiB\n")
    env = {"PATH": str(tmp_path / "bin"), "CUDA_PATH": str(cuda), "HOME": str(home(tmp_path))}
    finding = only(judge(look(tmp_path, env)), "gpu.arch-unsupported")
    assert finding.severity == "error" and "sm_75" in finding.title
    assert "KNOWLEDGE.md" in finding.source
