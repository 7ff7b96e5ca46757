"""Theano's configuration as the installed release reads it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from envforge.app.doctorfixes import apply_fixes
from envforge.doctor import fix_steps
from envforge.packs.theano.doctor_common import theano_config
from tests.doctor.layouts import home, ids, judge, look, nvidia_smi, only, venv
from tests.testing.packs import REGISTRY

BLOG_THEANORC = """\
[global]
floatX = float32
device = gpu

[lib]
cnmem = 0.8

[cudnn]
enable = True

[nvcc]
fastmath = True
"""


def _env(tmp_path: Path, theanorc: str | None = None, theano: str = "1.0.5",
         **more: str) -> dict[str, str]:
    prefix = venv(tmp_path / "env", {"Theano-PyMC": theano, "numpy": "1.19.5"})
    return {"HOME": str(home(tmp_path, theanorc)), "VIRTUAL_ENV": str(prefix), **more}


@pytest.mark.posix_only("observes a linux-64 host: its '/'-joined paths, ':' lists and sh fixes")
def test_the_blogs_theanorc(tmp_path: Path) -> None:
    env = _env(tmp_path, BLOG_THEANORC)
    findings = judge(look(tmp_path, env))
    by_id = {f.id: f for f in findings if f.id.startswith("config.")}
    assert sorted(f.id for f in findings if f.id.startswith("config.")) == [
        "config.blog-form", "config.blog-form", "config.invalid-value", "config.removed-flag"]
    device = by_id["config.invalid-value"]
    assert device.evidence[0].where == f"{env['HOME']}/.theanorc:3"
    assert "old GPU back-end" in device.title and "device = cuda" in device.title
    blog = [f for f in findings if f.id == "config.blog-form"]
    assert [f.evidence[0].text for f in blog] == ["[lib] cnmem = 0.8", "[cudnn] enable = True"]
    assert all(f.fix is not None and f.fix.safe for f in blog)
    assert by_id["config.removed-flag"].title.endswith("Theano ignores it silently")

    apply_fixes(fix_steps(findings, REGISTRY), tmp_path / "state")

    fixed = (Path(env["HOME"]) / ".theanorc").read_text()
    assert fixed == """\
[global]
floatX = float32
device = cuda

[lib]
# envforge doctor: [lib] cnmem is not a Theano flag; moved to [gpuarray] preallocate
# cnmem = 0.8

[cudnn]
# envforge doctor: [cudnn] enable is not a Theano flag; moved to [dnn] enabled
# enable = True

[nvcc]
# envforge doctor: nvcc.fastmath was removed in Theano 1.0
# fastmath = True

[gpuarray]
preallocate = 0.8

[dnn]
enabled = True
"""
    left = judge(look(tmp_path, env))
    assert not [f.id for f in left if f.id.startswith("config.")]


def test_case_of_values(tmp_path: Path) -> None:
    """dnn.enabled is case-sensitive: `true` raises ValueError at import."""
    env = _env(tmp_path, "[dnn]\nenabled = true\n")
    finding = only(judge(look(tmp_path, env)), "config.invalid-value")
    assert finding.title.startswith("dnn.enabled='true' is not one of auto, True, False, no_check")
    assert finding.fix is not None and finding.fix.text.endswith("[dnn] enabled = True")
    apply_fixes(fix_steps([finding], REGISTRY), tmp_path / "state")
    assert (Path(env["HOME"]) / ".theanorc").read_text() == "[dnn]\nenabled = True\n"
    assert "config.invalid-value" not in ids(judge(look(tmp_path, env)))


def test_theano_flags_in_the_other_releases_spelling(tmp_path: Path) -> None:
    env = _env(tmp_path, THEANO_FLAGS="blas__ldflags=-lblas,floatX=float32,lib.cnmem=0.5")
    findings = judge(look(tmp_path, env))
    spelling = only(findings, "config.wrong-spelling")
    assert spelling.title.startswith("THEANO_FLAGS spells blas__ldflags; Theano 1.0.5 reads "
                                     "blas.ldflags")
    assert spelling.source.startswith("[TP] theano/configparser.py")
    assert only(findings, "config.blog-form").evidence[0].text == "lib.cnmem=0.5"
    assert spelling.fix is not None
    env["THEANO_FLAGS"] = re.fullmatch(r"export THEANO_FLAGS=(.*)", spelling.fix.text)[1]
    assert env["THEANO_FLAGS"] == "blas.ldflags=-lblas,floatX=float32,gpuarray.preallocate=0.5"
    left = ids(judge(look(tmp_path, env)))
    assert "config.wrong-spelling" not in left and "config.blog-form" not in left


def test_theano_1_1_wants_double_underscores(tmp_path: Path) -> None:
    env = _env(tmp_path, theano="1.1.2", THEANO_FLAGS="blas.ldflags=-lblas")
    finding = only(judge(look(tmp_path, env)), "config.wrong-spelling")
    assert "reads blas__ldflags" in finding.title


@pytest.mark.posix_only("observes a linux-64 host: its '/'-joined paths, ':' lists and sh fixes")
def test_unknown_flags(tmp_path: Path) -> None:
    env = _env(tmp_path, "[global]\ndevise = cuda\n", THEANO_FLAGS="nonsense=1")
    found = [f for f in judge(look(tmp_path, env)) if f.id == "config.unknown-flag"]
    assert [f.title for f in found] == [
        f"{env['HOME']}/.theanorc: Theano 1.0.5 has no flag devise; Theano ignores it silently",
        "THEANO_FLAGS: Theano 1.0.5 has no flag nonsense; Theano warns \"does not recognise "
        "this flag\" and ignores it"]
    assert found[0].fix is not None and found[0].fix.text == "remove it, or did you mean device?"


def test_theano_flags_override_the_file(tmp_path: Path) -> None:
    env = _env(tmp_path, "[global]\nfloatX = float32\n", THEANO_FLAGS="floatX=float64")
    finding = only(judge(look(tmp_path, env)), "config.env-overrides-file")
    assert finding.title.startswith("THEANO_FLAGS sets floatX=float64, overriding float32")
    env["THEANO_FLAGS"] = "floatX=float32"
    assert "config.env-overrides-file" not in ids(judge(look(tmp_path, env)))


@pytest.mark.posix_only("observes a linux-64 host: its '/'-joined paths, ':' lists and sh fixes")
def test_theanorc_in_the_current_folder(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / ".theanorc").write_text("[global]\ndevice = cpu\n")
    env = _env(tmp_path, "[global]\nfloatX = float32\n")
    finding = only(judge(look(tmp_path, env, cwd=project)), "config.cwd-theanorc-ignored")
    assert finding.fix is not None
    theanorc = re.match(r"export THEANORC=(\S+)", finding.fix.text)
    assert theanorc and theanorc[1] == f"{env['HOME']}/.theanorc:{project}/.theanorc"
    env["THEANORC"] = theanorc[1]
    facts = look(tmp_path, env, cwd=project)
    assert "config.cwd-theanorc-ignored" not in ids(judge(facts))
    assert theano_config(facts).files[-1].flags == {"device": "cpu"}


@pytest.mark.posix_only("its stand-in nvidia-smi, nvcc or g++ is an sh script")
def test_preallocation_above_the_free_memory(tmp_path: Path) -> None:
    nvidia_smi(tmp_path / "bin", query="NVIDIA GeForce GTX 1660 SUPER, 7.5, 6144 MiB, 2048 MiB\n")
    env = _env(tmp_path, "[global]\ndevice = cuda\n\n[gpuarray]\npreallocate = 0.9\n",
               PATH=str(tmp_path / "bin"))
    finding = only(judge(look(tmp_path, env)), "config.preallocate-exceeds-free")
    assert "asks for 5530 MiB of GPU 0" in finding.title and "2048 MiB are free" in finding.title
    assert finding.fix is not None
    assert finding.fix.text.startswith("set [gpuarray] preallocate = 0.3 ")
    (Path(env["HOME"]) / ".theanorc").write_text(
        "[global]\ndevice = cuda\n\n[gpuarray]\npreallocate = 0.3\n")
    assert "config.preallocate-exceeds-free" not in ids(judge(look(tmp_path, env)))


@pytest.mark.posix_only("its stand-in nvidia-smi, nvcc or g++ is an sh script")
def test_preallocate_one_is_95_percent_not_one_megabyte(tmp_path: Path) -> None:
    """`if preallocate <= 1` is a fraction (capped 0.95): 1 asks for 5837 MiB of 6144."""
    nvidia_smi(tmp_path / "bin", query="NVIDIA GeForce GTX 1660 SUPER, 7.5, 6144 MiB, 2048 MiB\n")
    env = _env(tmp_path, "[global]\ndevice = cuda\n\n[gpuarray]\npreallocate = 1\n",
               PATH=str(tmp_path / "bin"))
    finding = only(judge(look(tmp_path, env)), "config.preallocate-exceeds-free")
    assert "asks for 5837 MiB of GPU 0" in finding.title
    assert "gpuarray/__init__.py:153-159" in finding.source


def test_floatx_32_is_not_an_error(tmp_path: Path) -> None:
    """Theano 1.0.5 converts "32" to float32 (floatX_convert)."""
    env = _env(tmp_path, "[global]\nfloatX = 32\n")
    assert not [f for f in judge(look(tmp_path, env)) if f.id.startswith("config.")]
    (Path(env["HOME"]) / ".theanorc").write_text("[global]\nfloatX = 33\n")
    finding = only(judge(look(tmp_path, env)), "config.invalid-value")
    assert "floatX='33'" in finding.title


def test_compiler_is_the_blogs_name_for_cxx(tmp_path: Path) -> None:
    env = _env(tmp_path, "[global]\ncompiler = g++\n")
    findings = judge(look(tmp_path, env))
    finding = only(findings, "config.blog-form")
    assert "`[global] compiler = g++`" in finding.title and "[global] cxx = g++" in finding.title
    assert finding.fix is not None and "`[global] cxx = g++`" in finding.fix.text
    assert "compiledir" not in finding.fix.text
    apply_fixes(fix_steps(findings, REGISTRY), tmp_path / "state")
    assert "cxx = g++" in (Path(env["HOME"]) / ".theanorc").read_text()


def test_unparsable_theanorc(tmp_path: Path) -> None:
    env = _env(tmp_path, "device = cuda\n")  # no section header
    finding = only(judge(look(tmp_path, env)), "config.unparsable")
    assert "no section headers" in finding.evidence[0].text.lower()
