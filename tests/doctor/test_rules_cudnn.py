"""cuDNN's place and release, and whether the installed Theano can use it."""

from __future__ import annotations

from pathlib import Path

from tests.doctor.layouts import (
    cudnn_header,
    expected,
    home,
    ids,
    judge,
    linux_cuda,
    look,
    only,
)


def test_cudnn_built_for_another_cuda(tmp_path: Path) -> None:
    cuda = linux_cuda(tmp_path, "11.0.3")
    header = cudnn_header(cuda / "include", "7.6.5")
    env = {"CUDA_PATH": str(cuda), "HOME": str(home(tmp_path))}
    finding = only(judge(look(tmp_path, env)), "cudnn.toolkit-mismatch")
    assert finding.title.startswith("cuDNN 7.6.5 in")
    assert "9.0, 9.2, 10.0, 10.1, 10.2" in finding.title
    assert finding.evidence[0].where == str(header)
    assert finding.source.startswith("NVIDIA cuDNN archive (7.6.5.32)")
    cudnn_header(cuda / "include", "8.0.5")  # cuDNN 8.0 exists for CUDA 11.0
    assert "cudnn.toolkit-mismatch" not in ids(judge(look(tmp_path, env)))


def test_cudnn_in_another_toolkit_than_the_lock(tmp_path: Path) -> None:
    local = tmp_path / "local"
    old = linux_cuda(local, "9.0.176")
    cudnn_header(old / "include", "7.6.5")
    locked = linux_cuda(local, "10.2.89")
    facts = look(tmp_path, {"HOME": str(home(tmp_path))}, cuda_search=(local,))
    finding = only(judge(facts, expected()), "cudnn.wrong-tree")
    assert finding.title == (f"cuDNN is in {old} (CUDA 9.0.176), not in the locked CUDA 10.2's "
                             f"tree {locked}")
    cudnn_header(locked / "include", "7.6.5")  # what `envforge apply` does
    facts = look(tmp_path, {"HOME": str(home(tmp_path))}, cuda_search=(local,))
    assert "cudnn.wrong-tree" not in ids(judge(facts, expected()))


def test_cudnn_of_another_release_than_the_lock(tmp_path: Path) -> None:
    cuda = linux_cuda(tmp_path, "10.2.89")
    cudnn_header(cuda / "include", "7.4.2")
    facts = look(tmp_path, {"CUDA_PATH": str(cuda), "HOME": str(home(tmp_path))})
    finding = only(judge(facts, expected()), "cudnn.not-locked")
    assert "7.4.2" in finding.title and "7.6.5.32" in finding.title
