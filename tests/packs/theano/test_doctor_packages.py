"""Doctor's Theano package rules (packs/theano/doctor_packages.py): installed packages against
the Theano release, and the BLAS flags it links with."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.doctor.layouts import conda_env, home, ids, judge, look, only, venv


def _env(tmp_path: Path, packages: dict[str, str], theanorc: str | None = None,
         python: str = "3.7.16") -> dict[str, str]:
    prefix = venv(tmp_path / "env", {"Theano-PyMC": "1.0.5", **packages}, python=python)
    return {"HOME": str(home(tmp_path, theanorc)), "VIRTUAL_ENV": str(prefix)}


def test_pygpu_outside_0_7(tmp_path: Path) -> None:
    prefix = conda_env(tmp_path / "conda", {"theano-pymc": "1.0.5", "pygpu": "0.6.9"})
    env = {"HOME": str(home(tmp_path)), "CONDA_PREFIX": str(prefix)}
    finding = only(judge(look(tmp_path, env)), "packages.pygpu")
    assert finding.title.startswith("pygpu 0.6.9 is outside >=0.7,<0.8")
    assert finding.evidence[0].where.endswith("pygpu-0.6.9-0.json")
    (prefix / "conda-meta" / "pygpu-0.6.9-0.json").rename(
        prefix / "conda-meta" / "pygpu-0.7.6-0.json")
    (prefix / "conda-meta" / "pygpu-0.7.6-0.json").write_text(
        '{"name": "pygpu", "version": "0.7.6"}')
    assert "packages.pygpu" not in ids(judge(look(tmp_path, env)))


def test_numpy_that_breaks_theano(tmp_path: Path) -> None:
    finding = only(judge(look(tmp_path, _env(tmp_path, {"numpy": "1.24.4"}))), "packages.numpy")
    assert "np.bool and np.complex were removed" in finding.title


@pytest.mark.posix_only("observes a linux-64 host: its '/'-joined paths, ':' lists and sh fixes")
def test_numpy_1_22_needs_blas_flags(tmp_path: Path) -> None:
    libs = tmp_path / "usr" / "lib"
    libs.mkdir(parents=True)
    (libs / "libopenblas.so").write_bytes(b"\x7fELF")
    env = _env(tmp_path, {"numpy": "1.23.5"}, "[global]\nfloatX = float32\n", python="3.11.2")
    finding = only(judge(look(tmp_path, env, lib_dirs=(libs,))), "blas.flags-missing")
    assert finding.fix is not None
    assert finding.fix.text == f"set [blas] ldflags = -L{libs} -lopenblas"
    (Path(env["HOME"]) / ".theanorc").write_text(
        f"[global]\nfloatX = float32\n\n[blas]\nldflags = -L{libs} -lopenblas\n")
    assert not {"blas.flags-missing", "blas.flags-broken"} & \
        set(ids(judge(look(tmp_path, env, lib_dirs=(libs,)))))


@pytest.mark.posix_only("observes a linux-64 host: its '/'-joined paths, ':' lists and sh fixes")
def test_blas_flags_name_a_missing_folder(tmp_path: Path) -> None:
    env = _env(tmp_path, {"numpy": "1.19.5"},
               f"[blas]\nldflags = -L{tmp_path}/gone -lopenblas\n")
    findings = [f for f in judge(look(tmp_path, env)) if f.id == "blas.flags-broken"]
    assert [f.title.split(",")[0] for f in findings] == [
        f"blas.ldflags names -L{tmp_path}/gone", "blas.ldflags links -lopenblas"]


@pytest.mark.posix_only("observes a linux-64 host: its '/'-joined paths, ':' lists and sh fixes")
def test_blas_flags_need_the_unversioned_name(tmp_path: Path) -> None:
    """-lopenblas needs libopenblas.so; Debian's runtime package only has .so.0 (GPU.md)."""
    folder = tmp_path / "env" / "deb" / "usr" / "lib" / "x86_64-linux-gnu" / "openblas-pthread"
    folder.mkdir(parents=True)
    (folder / "libopenblas.so.0").write_bytes(b"\x7fELF openblas")
    env = _env(tmp_path, {"numpy": "1.19.5"},
               f"[blas]\nldflags = -L{folder} -Wl,-rpath,{folder} -lopenblas\n")
    finding = only(judge(look(tmp_path, env)), "blas.flags-broken")
    assert finding.fix is not None
    assert finding.fix.text == f"ln -s libopenblas.so.0 {folder}/libopenblas.so"
    subprocess.run(finding.fix.text, shell=True, check=True)  # the fix, as the user runs it
    assert "blas.flags-broken" not in ids(judge(look(tmp_path, env)))


def test_python_without_distutils(tmp_path: Path) -> None:
    finding = only(judge(look(tmp_path, _env(tmp_path, {"numpy": "1.19.5"}, python="3.12.3"))),
                   "packages.python")
    assert "no distutils" in finding.title


def test_no_theano_no_package_rules(tmp_path: Path) -> None:
    """A venv without Theano (envforge's own, say) is not judged as Theano's."""
    prefix = venv(tmp_path / "env", {"numpy": "2.4.6"}, python="3.11.7")
    env = {"HOME": str(home(tmp_path)), "VIRTUAL_ENV": str(prefix)}
    found = ids(judge(look(tmp_path, env)))
    assert "packages.numpy" not in found and "env.no-theano" in found


def test_theano_and_theano_pymc_in_one_environment(tmp_path: Path) -> None:
    prefix = venv(tmp_path / "env", {"Theano": "1.0.4", "Theano-PyMC": "1.0.5"})
    env = {"VIRTUAL_ENV": str(prefix), "HOME": str(home(tmp_path))}
    finding = only(judge(look(tmp_path, env)), "packages.two-theanos")
    assert finding.severity == "error"
    assert "both install the `theano` package" in finding.title
    assert finding.fix is not None and finding.fix.text == (
        'pip uninstall -y Theano Theano-PyMC && pip install "Theano-PyMC==1.0.5"')


def test_original_theano_gets_the_legacy_mapping(tmp_path: Path) -> None:
    prefix = venv(tmp_path / "env", {"Theano": "0.8.2", "numpy": "1.19.5"})
    env = {"VIRTUAL_ENV": str(prefix), "HOME": str(home(tmp_path))}
    finding = only(judge(look(tmp_path, env)), "packages.original-theano")
    assert "the original Theano 0.8.2 (PyPI Theano)" in finding.title
    assert finding.fix is not None and 'pip install "Theano-PyMC==1.0.5"' in finding.fix.text
    prefix_ok = venv(tmp_path / "ok", {"Theano-PyMC": "1.0.5"})
    env["VIRTUAL_ENV"] = str(prefix_ok)
    assert not {"packages.original-theano", "packages.two-theanos"} & set(
        ids(judge(look(tmp_path, env))))
