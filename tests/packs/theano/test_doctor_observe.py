"""What doctor observes of Theano (packs/theano/doctor_observe.py): the .theanorc files,
THEANO_FLAGS and the cuda.root Theano defaults to, on real Linux- and Windows-shaped layouts."""

from __future__ import annotations

from pathlib import Path

import pytest

from envforge.packs.theano.doctor_common import theano_config
from envforge.packs.theano.doctor_flags import parse_theano_flags
from tests.doctor.layouts import gxx, gxx_mingw, home, linux_cuda, look, windows_cuda


def test_windows_nvcc_exe_is_not_theanos_nvcc(tmp_path: Path) -> None:
    cuda = windows_cuda(tmp_path, "10.2")
    facts = look(tmp_path, {"PATH": str(cuda / "bin"), "USERPROFILE": str(home(tmp_path))},
                 platform="win-64")
    assert theano_config(facts).cuda_root is None
    assert [t.found_by for t in facts.toolkits] == ["PATH (nvcc)"]


@pytest.mark.posix_only("its stand-in nvidia-smi, nvcc or g++ is an sh script")
def test_nvcc_wrapper_makes_theanos_root_its_parent(tmp_path: Path) -> None:
    """As on this project's build host: /usr/local/bin/nvcc is a wrapper script."""
    cuda = linux_cuda(tmp_path / "usr" / "local", "13.0.88")
    wrapper = tmp_path / "usr" / "local" / "bin"
    (wrapper).mkdir()
    (wrapper / "nvcc").write_text(f"#!/bin/sh\nexec {cuda}/bin/nvcc \"$@\"\n")
    facts = look(tmp_path, {"PATH": str(wrapper), "HOME": str(home(tmp_path))})
    assert theano_config(facts).cuda_root == str(tmp_path / "usr" / "local")


def test_theano_flags_split_like_theano() -> None:
    assert parse_theano_flags('device=cuda,floatX=float32,blas.ldflags="-L/a b -lblas",junk') \
        == [("device", "cuda"), ("floatX", "float32"), ("blas.ldflags", "-L/a b -lblas")]
    assert parse_theano_flags('device="cuda') == []  # shlex refuses, as Theano does


@pytest.mark.posix_only("observes a linux-64 host: its '/'-joined paths, ':' lists and sh fixes")
def test_cwd_theanorc_is_seen_but_not_read(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / ".theanorc").write_text("[global]\ndevice = cuda\n")
    facts = look(tmp_path, {"HOME": str(home(tmp_path))}, cwd=project)
    ignored = theano_config(facts).ignored
    assert ignored is not None and not ignored.read
    facts = look(tmp_path, {"HOME": str(home(tmp_path)),
                            "THEANORC": f"{tmp_path}/home/.theanorc:{project}/.theanorc"},
                 cwd=project)
    config = theano_config(facts)
    assert config.ignored is None and config.files[1].flags == {"device": "cuda"}


@pytest.mark.posix_only("its stand-in g++.exe is an sh script")
def test_windows_mingw_in_the_environment_is_theanos_fallback(tmp_path: Path) -> None:
    """No g++ on PATH: Theano on win32 takes <python dir>\\Library\\mingw-w64\\bin\\g++."""
    prefix = tmp_path / "env"
    gxx(prefix / "Library" / "mingw-w64" / "bin", gxx_mingw("posix"), name="g++.exe")
    facts = look(tmp_path, {"USERPROFILE": str(home(tmp_path))}, platform="win-64",
                 prefix=prefix)
    assert facts.gxx is not None and facts.gxx.path_index == -1
    assert facts.gxx.found_by.startswith("Theano's win32 fallback")
    assert facts.gxx.thread_model == "posix"
    assert look(tmp_path, {"USERPROFILE": str(home(tmp_path))}, platform="win-64").gxx is None
