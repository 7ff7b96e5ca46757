"""Doctor's rule about Theano's cuda.root (packs/theano/doctor_rules.py): where Theano looks
for cuDNN."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.doctor.layouts import (
    cudnn_header,
    home,
    ids,
    judge,
    linux_cuda,
    look,
    only,
)


@pytest.mark.posix_only("its stand-in nvidia-smi, nvcc or g++ is an sh script")
def test_theano_root_is_the_nvcc_wrappers_parent(tmp_path: Path) -> None:
    """nvcc wrapped in /usr/local/bin: Theano's cuda.root is /usr/local, away from cuDNN."""
    local = tmp_path / "usr" / "local"
    cuda = linux_cuda(local, "11.8.89")
    cudnn_header(cuda / "include", "7.6.5")
    (local / "bin").mkdir()
    (local / "bin" / "nvcc").write_text(f'#!/bin/sh\nexec {cuda}/bin/nvcc "$@"\n')
    rc = home(tmp_path, "[global]\ndevice = cuda\n")
    env = {"PATH": str(local / "bin"), "HOME": str(rc)}
    finding = only(judge(look(tmp_path, env, cuda_search=(local,))), "cuda.theano-root")
    assert finding.title.startswith(f"Theano's cuda.root is {local} (the parent of")
    assert finding.fix is not None and f"[cuda] root = {cuda}" in finding.fix.text
    (rc / ".theanorc").write_text(f"[global]\ndevice = cuda\n\n[cuda]\nroot = {cuda}\n")
    assert "cuda.theano-root" not in ids(judge(look(tmp_path, env, cuda_search=(local,))))
