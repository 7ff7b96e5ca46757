"""Locking PyPI packages as the environment will see them: its Python patch version, the
project's era (``[pypi] as_of``) and one clear line when a pin cannot be satisfied."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pytest
from packaging.version import Version

from envforge.app.locking import lock_spec
from envforge.cli import main
from envforge.lockfile import load_lock
from envforge.spec import load_spec, parse_spec
from tests.testing.packs import REGISTRY

SPEC = """\
[project]
name = "{name}"
platforms = ["linux-64"]

[python]
version = "{python}"

[environment]
kind = "venv"

[pypi]
{as_of}packages = [
{packages}
]
"""

# DeepSurv's requirements.txt as init writes it: lasagne (git-only) aside, its theano>=0.8.2
# mapped to Theano-PyMC==1.0.5 (lock refuses the original Theano)
DEEPSURV = ["Theano-PyMC==1.0.5", "h5py", "lifelines", "Optunity", "tensorboard_logger"]


def spec_text(name: str, packages: list[str], *, python: str = "3.7",
              as_of: str | None = None) -> str:
    return SPEC.format(name=name, python=python,
                       as_of=f'as_of = "{as_of}"\n' if as_of else "",
                       packages="\n".join(f'    "{p}",' for p in packages))


def write(tmp_path: Path, name: str, text: str) -> Path:
    (tmp_path / "specs").mkdir(exist_ok=True)
    path = tmp_path / "specs" / f"{name}.toml"
    path.write_text(text)
    return path


def test_as_of_is_a_date_and_part_of_the_spec_hash() -> None:
    plain = parse_spec(spec_text("p", ["six"]), source="p.toml", registry=REGISTRY)
    dated = parse_spec(spec_text("p", ["six"], as_of="2019-09-01"), source="p.toml",
                       registry=REGISTRY)
    assert dated.for_platform("linux-64").pypi.as_of == date(2019, 9, 1)
    assert plain.content_hash != dated.content_hash


def test_an_invalid_as_of_names_its_line(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "bad", spec_text("bad", ["six"], as_of="June 2018"))
    assert main(["lock", str(path)]) == 2
    assert f"{path}:12: pypi.as_of:" in capsys.readouterr().err


@pytest.mark.network
def test_a_minor_only_spec_resolves_for_the_hosts_patch_version(tmp_path: Path) -> None:
    """pandas 1.3.5 requires >= 3.7.1; with "3.7" the host's 3.7.x is what uv sees."""
    spec = load_spec(write(tmp_path, "pandas", spec_text("pandas", ["pandas==1.3.5"])), REGISTRY)
    notes: list[str] = []
    lock = lock_spec(spec, REGISTRY, notes=notes)
    plock = lock.platforms["linux-64"]
    assert plock.pypi_python is not None and plock.pypi_python.startswith("3.7.")
    assert "pandas" in {f.name for f in plock.pypi}
    assert any("found on this host" in n for n in notes)


@pytest.mark.network
def test_torchvision_before_0_5_is_locked_with_the_pillow_its_code_imports(
        tmp_path: Path) -> None:
    """AntixK/PyTorch-VAE's pins (2020-03-02): torchvision 0.4.0 asks pillow>=4.1.1 and
    imports PILLOW_VERSION, which Pillow 7.0.0 (that day's) removed: the torch pack's pitfall
    caps it, the lock resolves Pillow 6 and says why."""
    spec = load_spec(write(tmp_path, "vae", spec_text(
        "vae", ["torch==1.2.0", "torchvision==0.4.0"], as_of="2020-03-02")), REGISTRY)
    notes: list[str] = []
    plock = lock_spec(spec, REGISTRY, notes=notes).platforms["linux-64"]
    pillow = next(f for f in plock.pypi if f.name == "pillow")
    assert Version(pillow.version) < Version("7")
    assert any("added pillow<7: torchvision/transforms/functional.py:5" in n for n in notes)


@pytest.mark.network
def test_an_unsatisfiable_pin_is_one_line_with_file_line_versions_and_fix(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "ll", spec_text("ll", ["numpy==1.19.5", "lifelines==0.28.0"],
                                           python="3.7.16"))
    assert main(["lock", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert err.startswith(f"error: {path}:14: pypi.packages: lifelines==0.28.0 cannot be "
                          "installed on Python 3.7.16 (linux-64)")
    assert "0.27.8" in err and 'pin one of those ("lifelines==0.27.8")' in err
    assert "[python] version" in err and "--python-version" not in err
    assert not (tmp_path / "locks" / "ll.lock").exists()


@pytest.mark.network
@pytest.mark.posix_only("pyenv's Python 3.6 builds the sdist's metadata")
def test_a_build_todays_back_end_breaks_names_the_eras_constraint_and_it_locks(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """MarkupSafe 1.0's setup.py imports setuptools' Feature, gone in 46.0, and the build
    floats to today's setuptools: lock had shown uv's traceback; it names the build constraint
    builds.toml's row gives, and the spec given it locks. (A home of its own: the run's cache
    keeps the metadata a build made, and uv would not build again.)"""
    monkeypatch.setenv("ENVFORGE_HOME", str(tmp_path / "envforge-home"))
    text = spec_text("mk", ["markupsafe==1.0"], python="3.6")
    path = write(tmp_path, "mk", text)
    assert main(["lock", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    line = text.splitlines().index('    "markupsafe==1.0",') + 1
    assert len(err.splitlines()) == 1 and err.startswith(
        f"error: {path}:{line}: pypi.packages: markupsafe 1.0 is built from its sdist")
    assert err.endswith('fix: set [pypi] build_constraints = ["setuptools<46"]'), err
    fixed = text.replace("\n]\n", '\n]\nbuild_constraints = ["setuptools<46"]\n', 1)
    assert fixed != text
    write(tmp_path, "mk", fixed)
    assert main(["lock", str(path), "-q"]) == 0


@pytest.mark.network
def test_an_exact_pin_newer_than_as_of_names_its_day_as_the_fix(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """DeepMoji's era (2018-09) with tensorflow==1.13.1 (the first TensorFlow 1.x with a cp37
    wheel, of 2019-02-26) added: the pin is taken whatever its day, its keras-applications
    only as of 2018-09-14; the fix is the pin's day, which uv's reason does not name."""
    path = write(tmp_path, "dm", spec_text("dm", ["Keras==2.0.9", "tensorflow==1.13.1"],
                                           python="3.7.16", as_of="2018-09-14"))
    assert main(["lock", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "keras-applications" in err
    assert "fix: set [pypi] as_of to 2019-02-26 or later (tensorflow==1.13.1 is of " \
           "2019-02-26" in err


@pytest.mark.network
@pytest.mark.slow
def test_as_of_resolves_deepsurv_in_its_era(tmp_path: Path) -> None:
    """Without a date, tensorboard_logger gets protobuf 4.x (whose generated code it cannot
    import); as of 2019-09-01 it gets protobuf 3.x, and the lock records the date."""
    now_path = write(tmp_path, "now", spec_text("now", DEEPSURV, python="3.7.16"))
    now = lock_spec(load_spec(now_path, REGISTRY), REGISTRY)
    then_path = write(tmp_path, "then", spec_text("then", DEEPSURV, python="3.7.16",
                                                  as_of="2019-09-01"))
    assert main(["lock", str(then_path)]) == 0
    then = load_lock(tmp_path / "locks" / "then.lock", REGISTRY)
    version = {f.name: f.version for f in now.platforms["linux-64"].pypi}
    dated = {f.name: f.version for f in then.platforms["linux-64"].pypi}
    assert version["protobuf"].startswith("4.") and dated["protobuf"].startswith("3.")
    assert then.meta.pypi_as_of == "2019-09-01" and now.meta.pypi_as_of is None
    assert Version(dated["h5py"]) < Version(version["h5py"])
    assert dated["theano-pymc"] == "1.0.5"  # an exact pin newer than the day is taken as is


@pytest.mark.network
def test_an_edited_spec_keeps_the_locks_versions_and_upgrade_resolves_afresh(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """As uv and pip-compile keep their output's: the edit moves only what it needs."""
    monkeypatch.chdir(tmp_path)
    path = write(tmp_path, "keep", spec_text("keep", ["requests==2.27.1", "idna==3.3"],
                                             python="3.7.16"))
    assert main(["lock", str(path), "-q"]) == 0

    def idna() -> str:
        return {f.name: f.version
                for f in load_lock(tmp_path / "locks" / "keep.lock",
                                   REGISTRY).platforms["linux-64"].pypi
                }["idna"]

    assert idna() == "3.3"
    path.write_text(spec_text("keep", ["requests==2.27.1"], python="3.7.16"))  # idna unpinned
    assert main(["lock", str(path), "-q"]) == 0
    assert idna() == "3.3"
    capsys.readouterr()
    assert main(["lock", str(path), "--json", "--upgrade"]) == 0
    assert Version(idna()) > Version("3.3")
    [result] = json.loads(capsys.readouterr().out)["results"]
    assert {"platform": "linux-64", "source": "pypi", "name": "idna", "before": "3.3",
            "after": idna()} in result["moved"]


def test_check_and_upgrade_together_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["lock", "--check", "--upgrade"])
    assert exc.value.code == 2 and "not allowed with argument" in capsys.readouterr().err


@pytest.mark.network
def test_upgrade_of_one_platform_leaves_the_other_as_locked(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    text = spec_text("two", ["requests==2.27.1"], python="3.7.16").replace(
        'platforms = ["linux-64"]', 'platforms = ["linux-64", "win-64"]')
    path = write(tmp_path, "two", text)
    assert main(["lock", str(path), "-q"]) == 0
    before = load_lock(tmp_path / "locks" / "two.lock", REGISTRY)
    assert main(["lock", str(path), "-q", "--platform", "linux-64", "--upgrade"]) == 0
    after = load_lock(tmp_path / "locks" / "two.lock", REGISTRY)
    assert after.platforms.keys() == {"linux-64", "win-64"}
    assert after.platforms["win-64"] == before.platforms["win-64"]


@pytest.mark.network
def test_upgrade_package_moves_only_the_named_one(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    path = write(tmp_path, "one", spec_text(
        "one", ["requests==2.27.1", "idna==3.3", "urllib3==1.26.8"], python="3.7.16"))
    assert main(["lock", str(path), "-q"]) == 0
    path.write_text(spec_text("one", ["requests==2.27.1"], python="3.7.16"))
    assert main(["lock", str(path), "-q"]) == 0  # both kept: preferred

    def versions() -> dict[str, str]:
        lock = load_lock(tmp_path / "locks" / "one.lock", REGISTRY)
        return {f.name: f.version for f in lock.platforms["linux-64"].pypi}

    assert (versions()["idna"], versions()["urllib3"]) == ("3.3", "1.26.8")
    assert main(["lock", str(path), "-q", "--upgrade-package", "IDNA"]) == 0  # unchanged spec
    assert Version(versions()["idna"]) > Version("3.3") and versions()["urllib3"] == "1.26.8"


def test_as_of_packages_are_names_with_days_named_by_their_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Keys compare as PEP 503 normalizes them; a name given twice so, or a key that is not
    a project name, is refused with its line; the days are part of the spec's hash."""
    text = spec_text("p", ["six"], as_of="2018-10-03")
    dated = text.replace("packages = [", "as_of_packages = { TensorFlow = 2019-10-03 }\n"
                         "packages = [")
    parsed = parse_spec(dated, source="p.toml", registry=REGISTRY).for_platform("linux-64")
    assert parsed.pypi.as_of_packages == {"tensorflow": date(2019, 10, 3)}
    assert parse_spec(text, source="p.toml", registry=REGISTRY).content_hash != \
        parse_spec(dated, source="p.toml", registry=REGISTRY).content_hash
    for table in ('{ tensorflow = 2019-10-03, TensorFlow = 2019-11-03 }',
                  '{ "tensor flow" = 2019-10-03 }'):
        bad = write(tmp_path, "bad", text.replace(
            "packages = [", f"as_of_packages = {table}\npackages = ["))
        assert main(["lock", str(bad)]) == 2
        assert f"{bad}:13: pypi.as_of_packages:" in capsys.readouterr().err
        assert not (tmp_path / "locks" / "bad.lock").exists()


@pytest.mark.network
def test_as_of_packages_give_only_the_named_packages_a_later_day(tmp_path: Path) -> None:
    """Keras 2.2.4's day (2018-10-03) has no TensorFlow wheel for Python 3.7: with TensorFlow
    and the two packages its first such release needs given a later day, everything else
    keeps the repository's day (PyYAML 3.13, not 5.1, whose ``yaml.load`` refuses what
    Keras 2.2.4 writes), and the lock records the days."""
    packages = ["keras==2.2.4", "tensorflow<2", "pyyaml", "numpy"]
    plain = write(tmp_path, "k", spec_text("k", packages, python="3.7.16", as_of="2018-10-03"))
    assert main(["lock", str(plain)]) == 2  # no day but a later one resolves it whole
    later = plain.read_text().replace("packages = [", (
        'as_of_packages = { tensorflow = 2019-10-03, tensorboard = 2019-10-03, '
        '"tensorflow-estimator" = 2019-10-03 }\npackages = ['))
    assert main(["lock", str(write(tmp_path, "k", later))]) == 0
    lock = load_lock(tmp_path / "locks" / "k.lock", REGISTRY)
    versions = {f.name: f.version for f in lock.platforms["linux-64"].pypi}
    assert Version(versions["tensorflow"]).major == 1
    assert versions["pyyaml"] == "3.13" and versions["numpy"] == "1.15.2"
    assert lock.meta.pypi_as_of == "2018-10-03"
    assert lock.meta.pypi_as_of_packages == {"tensorboard": "2019-10-03",
                                             "tensorflow": "2019-10-03",
                                             "tensorflow-estimator": "2019-10-03"}


@pytest.mark.network
def test_as_of_packages_hold_without_as_of(tmp_path: Path) -> None:
    """Only the named package is limited to its day; the others resolve to today's."""
    text = spec_text("n", ["six", "packaging"], python="3.7.16").replace(
        "packages = [", "as_of_packages = { six = 2016-01-01 }\npackages = [")
    assert main(["lock", str(write(tmp_path, "n", text))]) == 0
    versions = {f.name: f.version for f in
                load_lock(tmp_path / "locks" / "n.lock", REGISTRY).platforms["linux-64"].pypi}
    assert versions["six"] == "1.10.0" and Version(versions["packaging"]) >= Version("24.0")


def test_extra_build_dependencies_are_keyed_by_project_and_named_by_their_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Keys compare as PEP 503 normalizes them; a name given twice so, or a value that is not
    a requirement, is refused with its line and nothing written."""
    text = spec_text("p", ["six"])
    given = text.replace("packages = [", 'extra_build_dependencies = { PyCocoTools = '
                         '["Cython", "numpy>=1.11"] }\npackages = [')
    parsed = parse_spec(given, source="p.toml", registry=REGISTRY).for_platform("linux-64")
    assert parsed.pypi.extra_build_dependencies == {"pycocotools": ("Cython", "numpy>=1.11")}
    for table in ('{ pycocotools = ["Cython"], PyCocoTools = ["numpy"] }',
                  '{ pycocotools = ["Cython >> 1"] }'):
        bad = write(tmp_path, "bad", text.replace(
            "packages = [", f"extra_build_dependencies = {table}\npackages = ["))
        assert main(["lock", str(bad)]) == 2
        assert f"{bad}:12: pypi.extra_build_dependencies" in capsys.readouterr().err
        assert not (tmp_path / "locks" / "bad.lock").exists()


@pytest.mark.network
@pytest.mark.posix_only("pyenv's Pythons 3.7 and 3.8 on this host")
def test_a_lock_of_another_python_is_no_preference(tmp_path: Path) -> None:
    """A spec whose Python moved (a spec file written again at the same path, init's
    `--force` among them) keeps no release its old lock chose for the other Python: NumPy
    1.17.2, which has no Python 3.8 wheel, was kept and apply failed building it; as of
    2019-11-20 Python 3.8 takes 1.17.4, the first release with its wheels being 1.17.3."""
    path = write(tmp_path, "moved", spec_text("moved", ["numpy==1.17.2"], python="3.7",
                                              as_of="2019-11-20"))
    assert main(["lock", str(path), "-q"]) == 0
    path.write_text(spec_text("moved", ["numpy"], python="3.8", as_of="2019-11-20"))
    assert main(["lock", str(path), "-q"]) == 0
    locked = load_lock(tmp_path / "locks" / "moved.lock", REGISTRY).platforms["linux-64"]
    [numpy] = [f for f in locked.pypi if f.name == "numpy"]
    assert (numpy.version, numpy.kind) == ("1.17.4", "wheel")
