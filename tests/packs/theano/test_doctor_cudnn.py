"""Doctor's Theano cuDNN rules (packs/theano/doctor_rules.py): the cuDNN Theano compiles
against, judged by the release's rules, and the DLL it loads on Windows."""

from __future__ import annotations

from pathlib import Path

import pytest

from envforge.app.doctorfixes import apply_fixes
from envforge.doctor import fix_steps
from tests.doctor.layouts import (
    cudnn_header,
    home,
    ids,
    judge,
    look,
    nvidia_smi,
    only,
    venv,
    windows_cuda,
)
from tests.testing.packs import REGISTRY


def _gpu_host(tmp_path: Path, theanorc: str) -> dict[str, str]:
    """The H200 host: system cuDNN 9 headers, CUDA 13, a Theano 1.0.5 environment."""
    nvidia_smi(tmp_path / "bin")
    prefix = venv(tmp_path / "env", {"Theano-PyMC": "1.0.5", "numpy": "1.23.5"},
                  python="3.11.2")
    return {"PATH": str(tmp_path / "bin"), "HOME": str(home(tmp_path, theanorc)),
            "VIRTUAL_ENV": str(prefix)}


def test_cudnn_9_with_theano_1_0_5(tmp_path: Path) -> None:
    """cuDNN >= 8 lacks cudnnGetConvolutionForwardAlgorithm; the safe fix disables dnn."""
    system = tmp_path / "usr" / "include" / "x86_64-linux-gnu"
    cudnn_header(system, "9.14.0")
    rc_text = "[global]\ndevice = cuda\nfloatX = float32\n\n[blas]\nldflags = -lblas\n"
    env = _gpu_host(tmp_path, rc_text)
    facts = look(tmp_path, env, include_dirs=(system,))

    finding = only(judge(facts), "cudnn.too-new-for-theano")

    assert finding.severity == "error"
    assert "cudnnGetConvolutionForwardAlgorithm" in finding.title
    assert finding.fix is not None and finding.fix.safe
    assert finding.source.startswith("[TP] theano/gpuarray/c_code/dnn_fwd.c")
    apply_fixes(fix_steps([finding], REGISTRY), tmp_path / "state")
    assert (Path(env["HOME"]) / ".theanorc").read_text() == rc_text + "\n[dnn]\nenabled = False\n"
    assert "cudnn.too-new-for-theano" not in ids(judge(look(tmp_path, env,
                                                           include_dirs=(system,))))


@pytest.mark.posix_only("observes a linux-64 host: its '/'-joined paths, ':' lists and sh fixes")
def test_cudnn_9_edit_goes_where_dnn_enabled_is_set(tmp_path: Path) -> None:
    system = tmp_path / "include"
    cudnn_header(system, "9.14.0")
    env = _gpu_host(tmp_path, "[global]\ndevice = cuda\n\n[dnn]\nenabled = auto\n")
    finding = only(judge(look(tmp_path, env, include_dirs=(system,))),
                   "cudnn.too-new-for-theano")
    assert finding.fix is not None
    assert finding.fix.text == f"in {env['HOME']}/.theanorc: [dnn] enabled = False"
    # THEANO_FLAGS wins over the file, so there the fix is the user's shell's
    env["THEANO_FLAGS"] = "dnn.enabled=True,floatX=float32"
    finding = only(judge(look(tmp_path, env, include_dirs=(system,))),
                   "cudnn.too-new-for-theano")
    assert finding.fix is not None and not finding.fix.safe
    assert finding.fix.text == "export THEANO_FLAGS=dnn.enabled=False,floatX=float32"
    env["THEANO_FLAGS"] = "dnn.enabled=False,floatX=float32"
    assert "cudnn.too-new-for-theano" not in ids(judge(look(tmp_path, env,
                                                           include_dirs=(system,))))


def test_windows_cudnn_dll_not_reachable(tmp_path: Path) -> None:
    cuda = windows_cuda(tmp_path / "Program Files", "10.2")
    cudnn_header(cuda / "include", "7.6.5")
    env = {"PATH": str(cuda / "bin"), "CUDA_PATH": str(cuda),
           "USERPROFILE": str(home(tmp_path, "[global]\ndevice = cuda\n"))}
    finding = only(judge(look(tmp_path, env, platform="win-64")), "cudnn.dll-unreachable")
    assert "cudnn64_7.dll, cudnn64_6.dll, cudnn64_5.dll" in finding.title
    assert finding.source.startswith("[TP] theano/gpuarray/dnn.py WIN32_CUDNN_NAMES")
    (cuda / "bin" / "cudnn64_7.dll").write_bytes(b"MZ cudnn")  # the archive's cuda/bin file
    assert "cudnn.dll-unreachable" not in ids(judge(look(tmp_path, env, platform="win-64")))


def test_cudnn_9_and_a_wrong_case_fix_the_same_key(tmp_path: Path) -> None:
    """Seen on the H200 host: `enabled = true` is both invalid and, with cuDNN 9, must be
    False; the fixes agree on False and both findings go."""
    system = tmp_path / "include"
    cudnn_header(system, "9.14.0")
    env = _gpu_host(tmp_path, "[global]\ndevice = cuda\n\n[dnn]\nenabled = true\n")
    findings = judge(look(tmp_path, env, include_dirs=(system,)))
    assert {"cudnn.too-new-for-theano", "config.invalid-value"} <= set(ids(findings))
    apply_fixes(fix_steps(findings, REGISTRY), tmp_path / "state")
    assert (Path(env["HOME"]) / ".theanorc").read_text() == \
        "[global]\ndevice = cuda\n\n[dnn]\nenabled = False\n"
    left = ids(judge(look(tmp_path, env, include_dirs=(system,))))
    assert "cudnn.too-new-for-theano" not in left and "config.invalid-value" not in left
