"""The Markdown report and the JSON shape of the facts."""

from __future__ import annotations

from pathlib import Path

import pytest

from envforge.doctor import HostFacts, doctor_report_markdown
from tests.doctor.layouts import gxx, home, judge, linux_cuda, look, nvidia_smi
from tests.testing.packs import REGISTRY


@pytest.mark.posix_only("its stand-in nvidia-smi, nvcc or g++ is an sh script")
def test_report_names_the_host_and_every_finding(tmp_path: Path) -> None:
    nvidia_smi(tmp_path / "bin")
    gxx(tmp_path / "bin")
    cuda = linux_cuda(tmp_path, "10.2.89")
    env = {"PATH": str(tmp_path / "bin"), "CUDA_PATH": str(cuda),
           "HOME": str(home(tmp_path, "[global]\ndevice = gpu\n\n[lib]\ncnmem = 0.8\n"))}
    facts = look(tmp_path, env)
    findings = judge(facts)

    text = doctor_report_markdown(findings, facts)

    assert text.startswith("# envforge doctor\n")
    assert "| NVIDIA driver | 580.159.04 (CUDA 13.0; " in text
    assert "| GPU 0 | NVIDIA H200, compute capability 9.0, 143156 of 143771 MiB free |" in text
    assert f"| CUDA toolkit | 10.2.89 at {cuda} (CUDA_PATH; version.txt) |" in text
    for finding in findings:
        assert f"`{finding.id}`" in text
        assert finding.source in text
    assert "(safe: `envforge doctor --fix` applies it)" in text
    assert "```text\n[lib] cnmem = 0.8\n```" in text
    assert HostFacts.model_validate_json(facts.model_dump_json()) == facts


@pytest.mark.posix_only("its stand-in nvidia-smi, nvcc or g++ is an sh script")
def test_report_of_a_clean_host(tmp_path: Path) -> None:
    gxx(tmp_path / "bin")
    facts = look(tmp_path, {"PATH": str(tmp_path / "bin"), "HOME": str(home(tmp_path))})
    findings = [f for f in judge(facts) if f.severity != "info"]
    assert findings == []
    assert doctor_report_markdown(findings, facts).endswith("## Findings\n\nNothing to report.\n")


def test_rules_read_only_the_facts(tmp_path: Path) -> None:
    """Rules are pure: the facts, read back from JSON after the layout is gone, give the
    same findings."""
    import shutil

    from envforge.doctor import diagnose

    world = tmp_path / "world"
    nvidia_smi(world / "bin")
    cuda = linux_cuda(world, "10.2.89")
    env = {"PATH": str(world / "bin"), "CUDA_PATH": str(cuda),
           "HOME": str(home(world, "[global]\ndevice = cuda\n\n[dnn]\nenabled = true\n"))}
    facts = look(world, env)
    findings = diagnose(facts, packs=REGISTRY)
    assert len(findings) >= 3
    stored = facts.model_dump_json()
    shutil.rmtree(world)
    assert diagnose(HostFacts.model_validate_json(stored), packs=REGISTRY) == findings
