"""Doctor's rules about the C++ compiler Theano builds with (packs/theano/doctor_compilers.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.doctor.layouts import (
    expected,
    gxx,
    gxx_mingw,
    home,
    ids,
    judge,
    look,
    only,
    script,
)


@pytest.mark.posix_only("its stand-in nvidia-smi, nvcc or g++ is an sh script")
def test_no_gxx(tmp_path: Path) -> None:
    env = {"PATH": str(tmp_path / "bin"), "HOME": str(home(tmp_path, "[global]\ndevice = cuda\n"))}
    finding = only(judge(look(tmp_path, env)), "compiler.missing")
    assert finding.severity == "error"  # the GPU back-end refuses to start
    assert "The new gpu-backend need a c++ compiler" in finding.title
    assert finding.source.startswith("[TP] theano/configdefaults.py")
    (Path(env["HOME"]) / ".theanorc").write_text("[global]\ndevice = cpu\n")
    assert only(judge(look(tmp_path, env)), "compiler.missing").severity == "warning"
    gxx(tmp_path / "bin")
    assert "compiler.missing" not in ids(judge(look(tmp_path, env)))


def test_cxx_set_empty(tmp_path: Path) -> None:
    gxx(tmp_path / "bin")
    env = {"PATH": str(tmp_path / "bin"), "HOME": str(home(tmp_path, "[global]\ncxx =\n"))}
    finding = only(judge(look(tmp_path, env)), "compiler.missing")
    assert finding.title.startswith("cxx is set empty")
    assert finding.evidence[0].where.endswith(".theanorc:2")


def _windows(tmp_path: Path, threads: str = "posix") -> tuple[dict[str, str], Path, Path]:
    msvc = tmp_path / "VS" / "VC" / "Tools" / "MSVC" / "14.29.30133" / "bin" / "Hostx64" / "x64"
    script(msvc, "cl.exe", "echo 'Microsoft (R) C/C++ Optimizing Compiler Version 19.29'\n")
    mingw = tmp_path / "mingw64" / "bin"
    gxx(mingw, gxx_mingw(threads), name="g++.exe")
    return {"PATH": f"{msvc};{mingw};C:\\Windows", "USERPROFILE": str(home(tmp_path))}, msvc, mingw


def test_msvc_ahead_of_mingw(tmp_path: Path) -> None:
    env, msvc, mingw = _windows(tmp_path)
    finding = only(judge(look(tmp_path, env, platform="win-64")), "compiler.msvc-first")
    assert finding.evidence[0].where == "PATH[0]" and "cl.exe" in finding.evidence[0].text
    assert finding.fix is not None
    match = re.fullmatch(r'set "PATH=(.*)"', finding.fix.text)
    assert match and match[1] == f"{mingw};{msvc};C:\\Windows"
    env["PATH"] = match[1]
    assert "compiler.msvc-first" not in ids(judge(look(tmp_path, env, platform="win-64")))


@pytest.mark.posix_only("its stand-in nvidia-smi, nvcc or g++ is an sh script")
def test_mingw_with_win32_threads(tmp_path: Path) -> None:
    env, _, _ = _windows(tmp_path, threads="win32")
    facts = look(tmp_path, env, platform="win-64")
    finding = only(judge(facts), "compiler.mingw-threads")
    assert finding.severity == "warning"
    assert "Thread model: win32" in finding.evidence[0].text
    assert "x86_64-8.1.0-release-posix-seh-rt_v6-rev0.7z" in finding.source
    locked = expected(platform="win-64", compiler_threads="posix")
    assert only(judge(facts, locked), "compiler.mingw-threads").severity == "error"
    env, _, _ = _windows(tmp_path / "posix")
    assert "compiler.mingw-threads" not in ids(judge(look(tmp_path, env, platform="win-64")))
