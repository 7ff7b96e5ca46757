"""Doctor's PyTorch rules: the locked wheel's kernel architectures against the host's GPUs
(host facts as data: no GPU here), and installed releases that break together."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from envforge.cli import main
from envforge.doctor import Expected, diagnose
from envforge.doctor.facts import HostFacts
from envforge.host.cuda import Gpu
from envforge.packapi import Registry
from tests.doctor.layouts import (
    SMI_NO_DRIVER,
    expected,
    home,
    ids,
    judge,
    look,
    nvidia_smi,
    only,
    venv,
)
from tests.testing.packs import REGISTRY

REPO = Path(__file__).resolve().parents[3]

TORCH14 = {"torch": "1.4.0", "torchvision": "0.5.0", "numpy": "1.18.5", "pillow": "7.2.0"}


def _facts(tmp_path: Path, packages: dict[str, str], *gpus: tuple[str, str]) -> HostFacts:
    prefix = venv(tmp_path / "env", packages)
    env = {"HOME": str(home(tmp_path)), "VIRTUAL_ENV": str(prefix), "PATH": ""}
    found = tuple(Gpu(index=i, name=name, compute_capability=cc, memory_total_mib=None,
                      memory_free_mib=None) for i, (name, cc) in enumerate(gpus))
    return look(tmp_path, env).model_copy(update={"gpus": found})


def _gpu_lock(torch: str) -> Expected:
    return expected(spec="specs/torch14-cpu.toml", env_kind="venv", cuda=None, cudnn=None,
                    versions={"python": "3.7", "torch": torch}, device="cuda", settings={})


def test_an_h200_has_no_kernel_image_in_torch_1_4(tmp_path: Path) -> None:
    facts = _facts(tmp_path, TORCH14, ("NVIDIA H200", "9.0"))
    finding = only(judge(facts, _gpu_lock("1.4.0")), "torch.gpu-arch")
    assert finding.severity == "error"
    assert finding.title.startswith(
        "torch 1.4.0's PyPI wheel (CUDA 10.1) has kernels for sm_35-sm_75 (PTX compute_37 for "
        "a part of its kernels only), the GPU 0 (NVIDIA H200) is sm_90: no kernel image is "
        "available for execution on the device")
    assert finding.fix is not None
    assert finding.fix.text.startswith("torch 2.1.0 (CUDA 12.1, Python >=3.8,<3.12) is the "
                                       "nearest release whose PyPI wheel has sm_90 kernels")
    assert "torch-1.4.0-cp37-cp37m-manylinux1_x86_64.whl" in finding.source


def test_an_a100_is_sent_to_the_nearest_release_with_its_kernels(tmp_path: Path) -> None:
    facts = _facts(tmp_path, {**TORCH14, "torch": "1.7.1", "torchvision": "0.8.2"},
                   ("NVIDIA A100-SXM4-40GB", "8.0"))
    finding = only(judge(facts, _gpu_lock("1.7.1")), "torch.gpu-arch")
    assert "is sm_80: no kernel image" in finding.title
    assert finding.fix is not None and finding.fix.text.startswith("torch 1.13.1 (CUDA 11.7")


def test_gpus_the_wheel_has_images_for_raise_nothing(tmp_path: Path) -> None:
    """A V100 is sm_70; a GTX 1080 Ti (sm_61) runs torch 1.13.1's sm_60 images (same major)."""
    facts = _facts(tmp_path, TORCH14, ("Tesla V100-SXM2-16GB", "7.0"))
    assert "torch.gpu-arch" not in ids(judge(facts, _gpu_lock("1.4.0")))
    facts = _facts(tmp_path / "b", {**TORCH14, "torch": "1.13.1", "torchvision": "0.14.1"},
                   ("NVIDIA GeForce GTX 1080 Ti", "6.1"))
    assert "torch.gpu-arch" not in ids(judge(facts, _gpu_lock("1.13.1")))


def test_a_cpu_lock_on_an_h200_is_a_warning(tmp_path: Path) -> None:
    facts = _facts(tmp_path, TORCH14, ("NVIDIA H200", "9.0"))
    assert only(judge(facts), "torch.gpu-arch").severity == "warning"


@pytest.mark.posix_only("its stand-in nvidia-smi is an sh script")
def test_no_driver_under_a_gpu_lock_names_pytorch(tmp_path: Path) -> None:
    """torch14-gpu's lock on a host whose driver does not answer: the finding names the
    framework set up for the GPU, PyTorch (its pack's display name: torch observes no
    configuration of its own), judged by the lock's packs or by all; a CPU lock is a notice."""
    nvidia_smi(tmp_path / "bin", fails=SMI_NO_DRIVER)
    prefix = venv(tmp_path / "env", TORCH14)
    facts = look(tmp_path, {"PATH": str(tmp_path / "bin"), "HOME": str(home(tmp_path)),
                            "VIRTUAL_ENV": str(prefix)})
    torch = Registry([pack for pack in REGISTRY if pack.name == "torch"])
    for packs in (torch, REGISTRY):
        finding = only(diagnose(facts, _gpu_lock("1.4.0"), packs=packs), "driver.missing")
        assert finding.severity == "error"
        assert finding.title == "PyTorch is set up for the GPU but no NVIDIA driver answers"
    cpu = _gpu_lock("1.4.0").model_copy(update={"device": "cpu"})
    assert only(diagnose(facts, cpu, packs=torch), "driver.missing").severity == "info"


def test_pillow_7_under_torchvision_0_2_and_an_unpaired_torchvision(tmp_path: Path) -> None:
    facts = _facts(tmp_path, {**TORCH14, "torchvision": "0.2.2"})
    findings = judge(facts)
    pillow = only(findings, "torch.torchvision-pillow7")
    assert "torchvision 0.2.2 with pillow 7.2.0" in pillow.title
    assert "cannot import name 'PILLOW_VERSION'" in pillow.title
    pair = only(findings, "torch.torchvision")
    assert "torchvision 0.2.2 with torch 1.4.0: torch 1.4.0 goes with torchvision ==0.5.0" \
        in pair.title


def test_the_locked_stack_raises_nothing(tmp_path: Path) -> None:
    facts = _facts(tmp_path, TORCH14)
    assert not [i for i in ids(judge(facts)) if i.startswith(("torch.", "torchvision."))]


@pytest.mark.posix_only("the torch specs target linux-64 only (no Windows wheels before 1.7)")
def test_doctor_names_the_h200_arch_mismatch_from_the_gpu_specs_lock_alone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """specs/torch14-gpu.toml, nothing applied and no torch wheel: the lock's release and the
    host's GPUs (nvidia-smi as on the H200) are enough; device cpu makes it a warning; and
    Theano's rules, which fired here before doctor judged by the lock's packs, stay out."""
    bin_dir = tmp_path / "bin"
    nvidia_smi(bin_dir)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("ENVFORGE_HOME", str(tmp_path / "ef"))
    monkeypatch.setenv("HOME", str(home(tmp_path)))
    severity = {}
    for spec in ("torch14-gpu", "torch14-cpu"):
        capsys.readouterr()
        main(["doctor", str(REPO / "specs" / f"{spec}.toml"), "--json"])
        findings = json.loads(capsys.readouterr().out)["findings"]
        [arch] = [f for f in findings if f["id"] == "torch.gpu-arch"]
        # judged by the packs its lock mounts: none of Theano's rules (seen on the H200)
        assert not [f["id"] for f in findings
                    if "Theano" in f["title"] or f["id"].startswith(("libgpuarray.", "theano"))]
        assert "the GPU 0 (NVIDIA H200) is sm_90: no kernel image" in arch["title"]
        severity[spec] = arch["severity"]
    assert severity == {"torch14-gpu": "error", "torch14-cpu": "warning"}
