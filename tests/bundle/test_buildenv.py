"""An sdist whose setup.py imports what it does not declare: pycocotools 2.0.0 (Cython and
NumPy at its top), the COCO API of the era's detection repositories, locked and applied for
real; and the build requirements read from an sdist's own pyproject.toml."""

from __future__ import annotations

import json
import subprocess
import zipfile
from pathlib import Path

import pytest

from envforge.bundle.buildenv import LEGACY_BACKEND, declared_build_requires
from envforge.cli import main
from envforge.errors import ArtifactError
from envforge.lockfile import load_lock
from tests.testing.localindex import write_tar
from tests.testing.packs import REGISTRY
from tests.testing.specs import venv_spec_text

SPEC = venv_spec_text("coco", 'as_of = 2019-08-01\npackages = ["numpy==1.16.4", '
                      '"pycocotools==2.0.0"]\n')
GIVEN = 'extra_build_dependencies = { pycocotools = ["Cython", "numpy"] }\n'
AREA = ("from pycocotools import mask; import numpy as np; "
        "print(mask.area(mask.encode(np.asfortranarray(np.ones((4, 4), dtype=np.uint8)))))")


def sdist(path: Path, files: dict[str, str]) -> Path:
    """An sdist of ``files`` (names under its top folder), as a .tar.gz or a .zip."""
    if not path.name.endswith(".zip"):
        return write_tar(path, "p-1.0", files)
    with zipfile.ZipFile(path, "w") as archive:
        for name, text in files.items():
            archive.writestr(f"p-1.0/{name}", text)
    return path


def test_a_bare_setup_py_gets_the_legacy_backend(tmp_path: Path) -> None:
    """PEP 517's fallback for a tree without [build-system]: setuptools>=40.8.0 and wheel."""
    assert declared_build_requires(sdist(tmp_path / "p-1.0.tar.gz", {"setup.py": ""})) == \
        LEGACY_BACKEND
    no_table = sdist(tmp_path / "p-1.0.zip", {"setup.py": "", "pyproject.toml": "[tool.x]\n"})
    assert declared_build_requires(no_table) == LEGACY_BACKEND


def test_an_sdists_own_build_requirements_are_read_from_its_top_folder(tmp_path: Path) -> None:
    pyproject = '[build-system]\nrequires = ["setuptools<60", "cython<3"]\n'
    for name in ("p-1.0.tar.gz", "p-1.0.zip"):
        made = sdist(tmp_path / name, {"pyproject.toml": pyproject,
                                       "vendored/pyproject.toml": "[build-system]\n"
                                                                  "requires = ['x']\n"})
        assert declared_build_requires(made) == ("setuptools<60", "cython<3")


@pytest.mark.parametrize("text", ["[build-system\n", "[build-system]\nrequires = 'setuptools'\n"])
def test_a_broken_pyproject_is_an_artifact_error_naming_the_sdist(tmp_path: Path,
                                                                  text: str) -> None:
    made = sdist(tmp_path / "p-1.0.tar.gz", {"pyproject.toml": text})
    with pytest.raises(ArtifactError, match=r"^p-1\.0\.tar\.gz: "):
        declared_build_requires(made)


def refused_lock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                 capsys: pytest.CaptureFixture[str], name: str, text: str) -> tuple[Path, str]:
    """``text`` as ``project/specs/NAME.toml`` locked from an empty home (nothing kept: uv
    builds the sdist's metadata): refused with exit 2, no lock written; the spec and stderr."""
    monkeypatch.setenv("ENVFORGE_HOME", str(tmp_path / "home"))
    specs = tmp_path / "project" / "specs"
    specs.mkdir(parents=True)
    spec = specs / f"{name}.toml"
    spec.write_text(text)
    assert main(["lock", str(spec)]) == 2
    assert not (specs.parent / "locks").exists()
    return spec, capsys.readouterr().err


@pytest.mark.network
@pytest.mark.slow
@pytest.mark.posix_only("builds pycocotools' C extension with the Linux Python 3.7 and gcc")
def test_pycocotools_200_locks_and_builds_given_what_its_setup_py_imports(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Without the key, lock names the line and the fix (exit 2, no lock); with it, the lock
    pins NumPy at the environment's version (the ABI the extension is compiled against) and
    Cython as of the spec's day, and apply from an empty cache builds the extension in that
    environment: it imports and computes."""
    spec, err = refused_lock(tmp_path, monkeypatch, capsys, "coco", SPEC)
    assert f"{spec}:13: pypi.packages: pycocotools 2.0.0 is built from its sdist, whose " \
           "setup.py imports Cython without declaring it" in err
    assert 'fix: set [pypi] extra_build_dependencies = { "pycocotools" = ["Cython"] }' in err

    spec.write_text(SPEC + GIVEN)
    assert main(["lock", str(spec)]) == 0
    build = load_lock(spec.parent.parent / "locks" / "coco.lock",
                      REGISTRY).platforms["linux-64"].build
    assert build is not None
    assert build.extra_dependencies == {"pycocotools": ("Cython==0.29.13", "numpy==1.16.4")}
    assert build.runtime == ("numpy<=1.16.4",)  # every build: no NumPy newer than the env's
    prefix = tmp_path / "env"
    assert main(["apply", str(spec), "--yes", "--prefix", str(prefix)]) == 0
    assert "building pycocotools 2.0.0 from source" in capsys.readouterr().err
    done = subprocess.run([str(prefix / "bin" / "python"), "-c", AREA], capture_output=True,
                          text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "16"
    records = list((tmp_path / "home" / "cache" / "built").glob("*/*/built.json"))
    assert len(records) == 1
    used = json.loads(records[0].read_text())["build_requires"]
    assert {"cython==0.29.13", "numpy==1.16.4"} <= {pin.lower() for pin in used}


def test_a_build_that_fails_importing_an_undeclared_package_names_the_specs_fix() -> None:
    """apply's message for a lock whose build pins miss what the build imports (a build
    step past the metadata's: setup.py's build_ext), with what the lock gives it kept."""
    from envforge.bundle.wheels import _fix
    from envforge.lockfile import LockedPypiFile, PypiBuild

    sdist = LockedPypiFile(name="pycocotools", version="2.0.0", kind="sdist",
                           filename="pycocotools-2.0.0.tar.gz", sha256="0" * 64,
                           url="https://files.example/pycocotools-2.0.0.tar.gz")
    build = PypiBuild(index="https://pypi.org/simple",
                      extra_dependencies={"pycocotools": ("Cython==0.29.13",)})
    log = "  File \"setup.py\", line 2\nModuleNotFoundError: No module named 'numpy'\n"
    assert _fix(sdist, log, build) == (
        ": its build imports numpy, which the sdist does not declare; fix: set [pypi] "
        'extra_build_dependencies = { "pycocotools" = ["Cython", "numpy"] } in the spec and '
        "lock again")
    assert _fix(sdist, "error: gcc failed", build) == ""


def test_a_build_an_eras_back_end_cures_names_the_build_constraint() -> None:
    """A lock that read MarkupSafe 1.0's metadata kept from an earlier build (envforge keeps
    what uv built) resolves without the constraint its build needs; apply's build then fails
    on setuptools' Feature, and its message gives builds.toml's constraint beside the spec's."""
    from envforge.bundle.wheels import _fix
    from envforge.lockfile import LockedPypiFile, PypiBuild

    sdist = LockedPypiFile(name="MarkupSafe", version="1.0", kind="sdist",
                           filename="MarkupSafe-1.0.tar.gz", sha256="0" * 64,
                           url="https://files.example/MarkupSafe-1.0.tar.gz")
    build = PypiBuild(index="https://pypi.org/simple", constraints=("Cython<3",))
    log = ("    from setuptools import setup, Extension, Feature\n"
           "ImportError: cannot import name 'Feature'\n")
    assert _fix(sdist, log, build).endswith(
        'fix: set [pypi] build_constraints = ["Cython<3", "setuptools<46"] in the spec and '
        "lock again")


LAP = venv_spec_text("lap", 'as_of = 2020-04-01\npackages = ["numpy==1.18.1", "lap==0.4.0"]\n'
                     'extra_build_dependencies = { lap = ["numpy"] }\n').replace(
    'version = "3.7.16"', 'version = "3.8"')


@pytest.mark.network
@pytest.mark.posix_only("resolves with the Linux Python 3.8 from pyenv")
def test_a_module_a_later_setuptools_removed_is_named_with_the_knowledges_constraint(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """lap 0.4.0's numpy.distutils imports distutils.msvccompiler, which setuptools 74
    removed: no distribution gives it, so lock's fix is builds.toml's constraint, and the
    spec that sets it locks."""
    from envforge.errors import StepError
    from envforge.host.interpreters import find_interpreter

    try:
        find_interpreter("3.8")
    except StepError:
        pytest.skip("no Python 3.8 on this host: lap 0.4.0 builds for Python 3.7 as it is")
    spec, err = refused_lock(tmp_path, monkeypatch, capsys, "lap", LAP)
    assert f"{spec}:13: pypi.packages: lap 0.4.0 is built from its sdist, whose build " \
           "imports distutils.msvccompiler" in err
    assert 'fix: set [pypi] build_constraints to keep it, "setuptools<74" (https://' in err
    spec.write_text(LAP + 'build_constraints = ["setuptools<74"]\n')
    assert main(["lock", str(spec)]) == 0
