"""The PyTorch pack for real: both CPU specs checked against their committed locks, applied
into temporary prefixes with the real Python 3.7 (pyenv) and the real PyPI wheels (CUDA
runtime inside, ~560 and ~750 MB), verified (the core's kernels, autograd against finite
differences, training against the NumPy loss curve, DataLoader workers, jit, torchvision),
then broken by hand the way users break them (Pillow 7 under torchvision 0.2.2, a
torchvision built for another torch, an edited lock) and rolled back leaving no trace."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from envforge.cli import main
from tests.commands.test_apply import snapshot

REPO = Path(__file__).resolve().parents[2]
PASSING = ("version.torch", "version.torchvision", "torch.build.cuda", "torch.threads",
           "kernel.gemm.samples", "kernel.conv.samples", "torch.autograd.grad.checksum",
           "torch.autograd.grad.samples", "torch.train.loss.checksum",
           "torch.train.loss.samples", "torch.dataloader.workers", "torch.jit.trace",
           "torchvision.resnet18", "drift.extra")

pytestmark = [pytest.mark.slow, pytest.mark.network,
              pytest.mark.posix_only("applies the Linux Python 3.7 from pyenv")]


def _verify(spec: Path, prefix: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, Any]:
    capsys.readouterr()
    code = main(["verify", str(spec), "--prefix", str(prefix), "--json"])
    return code, json.loads(capsys.readouterr().out)


def _rows(document: Any) -> dict[str, Any]:
    return {row["name"]: row for row in document["rows"]}


def _by_hand(prefix: Path, tmp_path: Path, *requirements: str) -> None:
    """What a user does next to envforge: uv pip install into the environment, no deps."""
    uv = shutil.which("uv", path=str(Path(sys.executable).parent)) or "uv"
    subprocess.run([uv, "pip", "install", "--python", str(prefix / "bin" / "python"),
                    "--no-deps", *requirements], check=True, capture_output=True,
                   env={**os.environ, "UV_CACHE_DIR": str(tmp_path / "uv-cache")})


def _apply_and_verify(spec: Path, prefix: Path,
                      capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    assert main(["lock", "--check", str(spec)]) == 0  # the committed lock is current
    assert main(["apply", str(spec), "--yes", "--prefix", str(prefix)]) == 0
    code, document = _verify(spec, prefix, capsys)
    assert code == 0, [r for r in document["rows"] if r["status"] == "fail"]
    rows = _rows(document)
    for name in PASSING:
        assert rows[name]["status"] == "pass", name
    return rows


def test_torch101_cpu(host: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = REPO / "specs" / "torch101-cpu.toml"
    prefix = tmp_path / "envs" / "t101"
    before = snapshot(host)
    rows = _apply_and_verify(spec, prefix, capsys)
    assert rows["torch.build.cuda"]["found"] == "9.0.176"  # the wheel's torch/version.py
    assert rows["torchvision.ops.nms"]["status"] == "skip"  # 0.2.2 has no compiled ops

    # planted: Pillow 7 by hand, which removed the PILLOW_VERSION torchvision 0.2.2 imports
    _by_hand(prefix, tmp_path, "pillow==7.0.0")
    code, document = _verify(spec, prefix, capsys)
    rows = _rows(document)
    assert code == 1
    assert rows["torchvision.resnet18"]["status"] == "fail"
    assert "cannot import name 'PILLOW_VERSION'" in rows["torchvision.resnet18"]["why"]
    assert 'pin "pillow<7"' in rows["torchvision.resnet18"]["why"]
    assert rows["drift.versions"]["status"] == "fail"
    assert rows["torch.train.loss.samples"]["status"] == "pass"  # torch itself is untouched

    assert main(["rollback", str(spec), "--prefix", str(prefix)]) == 0
    assert not prefix.exists()
    assert snapshot(host) == before


def test_torch14_cpu(host: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = REPO / "specs" / "torch14-cpu.toml"
    prefix = tmp_path / "envs" / "t14"
    rows = _apply_and_verify(spec, prefix, capsys)
    assert rows["torch.build.cuda"]["found"] == "10.1"
    assert rows["torchvision.ops.nms"]["status"] == "pass"

    # planted: an edited reference (another learning rate) is a tampered lock, refused
    edited = tmp_path / "edited"
    (edited / "specs").mkdir(parents=True)
    (edited / "locks").mkdir()
    shutil.copy(spec, edited / "specs" / spec.name)
    lock = (REPO / "locks" / "torch14-cpu.lock").read_text(encoding="utf-8")
    assert lock.count("learning_rate = 0.5\n") == 1
    (edited / "locks" / "torch14-cpu.lock").write_text(
        lock.replace("learning_rate = 0.5\n", "learning_rate = 0.45\n"), encoding="utf-8")
    capsys.readouterr()
    assert main(["verify", str(edited / "specs" / spec.name), "--prefix", str(prefix)]) == 2
    error = capsys.readouterr().err
    assert "torch14-cpu.lock:" in error and "expect.torch.train" in error
    assert "the lock was edited or damaged" in error

    # planted: torchvision 0.4.2 (built for torch 1.3.1) by hand, with the Pillow it needs
    _by_hand(prefix, tmp_path, "torchvision==0.4.2", "pillow==6.2.2")
    code, document = _verify(spec, prefix, capsys)
    rows = _rows(document)
    assert code == 1
    assert rows["torchvision.ops.nms"]["status"] == "fail"
    assert "torchvision/_C.so: undefined symbol" in rows["torchvision.ops.nms"]["why"]
    assert "built for another torch release" in rows["torchvision.ops.nms"]["why"]
    assert rows["version.torchvision"]["status"] == "fail"
    assert rows["torch.autograd.grad.samples"]["status"] == "pass"

    assert main(["rollback", str(spec), "--prefix", str(prefix)]) == 0
    assert not prefix.exists()
