"""envforge lock: refusals before any resolution, --check, determinism, reuse, the conda path."""

from __future__ import annotations

import json
import re
import shutil
import tomllib
from pathlib import Path

import pytest

from envforge.app import locking as lock_command
from envforge.app.locksuite import lock_suite
from envforge.cli import main
from envforge.lockfile import load_lock
from envforge.packs.theano.expect import theano_expect
from tests.testing.conda_channel import conda_spec_text
from tests.testing.packs import REGISTRY

REPO = Path(__file__).resolve().parents[2]
THEANO_SDIST_SHA = "bb566fa62f7923351299dfcb8947e42523057df65e81be444eb8ef0c6e602bf4"

CUDNN8 = """\
[project]
name = "bad"
platforms = ["linux-64"]

[python]
version = "3.7"

[environment]
kind = "venv"

[pypi]
packages = ["numpy==1.19.5", "Theano-PyMC==1.0.5"]

[cuda]
version = "11.0"

[cudnn]
version = "8.0.5"
archive = "cudnn-11.0-linux-x64-v8.0.5.39.tgz"
sha256 = "{sha}"

[theano]
device = "cuda"
dnn = "{dnn}"
"""


def project_with(tmp_path: Path, name: str, text: str) -> Path:
    (tmp_path / "specs").mkdir(exist_ok=True)
    spec = tmp_path / "specs" / f"{name}.toml"
    spec.write_text(text)
    return spec


@pytest.fixture
def no_resolvers(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any attempt to resolve fails the test: what these tests check must happen before."""
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a resolver was called")

    monkeypatch.setattr(lock_command, "lock_platform", refuse)


@pytest.mark.parametrize("dnn", ["auto", "enabled"])
def test_cudnn8_with_theano_105_is_refused_before_resolving(
        dnn: str, tmp_path: Path, no_resolvers: None, capsys: pytest.CaptureFixture[str]) -> None:
    spec = project_with(tmp_path, "bad", CUDNN8.format(sha="0" * 64, dnn=dnn))
    assert main(["lock", str(spec)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "cuDNN" in err and "source:" in err and "fix:" in err
    assert not (tmp_path / "locks").exists()


CUDNN8_CUDA111 = """\
[project]
name = "cudnn8"
platforms = ["linux-64"]

[python]
version = "3.7"

[environment]
kind = "venv"

[pypi]
packages = ["numpy==1.19.5", "Theano-PyMC==1.0.5"]

[cuda]
version = "11.1"

[cudnn]
version = "8.0.5.39"

[theano]
device = "cuda"
dnn = "disabled"
"""


@pytest.mark.network
def test_cudnn_8_0_5_with_cuda_11_1_locks(tmp_path: Path) -> None:
    """A valid pair (Spack's cudnn 8.0.5.39-11.1) that the 8.0.* row used to refuse; the
    archive comes from the knowledge base's artifacts, with its hash."""
    spec = project_with(tmp_path, "cudnn8", CUDNN8_CUDA111)
    assert main(["lock", str(spec), "--quiet"]) == 0
    (cudnn,) = [a for a in load_lock(tmp_path / "locks" / "cudnn8.lock", REGISTRY)
                .platforms["linux-64"].artifacts if a.role == "cudnn"]
    assert cudnn.filename == "cudnn-11.1-linux-x64-v8.0.5.39.tgz"
    assert cudnn.sha256 == "1d046bfa79399dabcc6f6cb1507918754439442ea0ca9e0fbecdd446f9b00cce"


TORCH110 = (REPO / "specs" / "torch14-cpu.toml").read_text().replace(
    '"torch==1.4.0", "torchvision==0.5.0", "numpy>=1.18,<1.19"', '"torch==1.10.2"')


@pytest.mark.network
def test_torch_1_10_is_locked_with_the_setuptools_its_import_needs(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Real uv: torch 1.10.2's metadata requires no setuptools while `import torch` imports
    pkg_resources (huggingface/torchMoji failed there); the torch pack's pitfall cap has lock
    add setuptools<80.9 and say why."""
    assert '"torch==1.10.2"' in TORCH110
    spec = project_with(tmp_path, "torch110", TORCH110)
    assert main(["lock", str(spec), "--json"]) == 0
    [result] = json.loads(capsys.readouterr().out)["results"]
    assert any(note.startswith("linux-64: added setuptools<80.9: torch/torch_version.py:3")
               for note in result["notes"]), result["notes"]
    locked = {f.name: f.version for f in load_lock(
        tmp_path / "locks" / "torch110.lock", REGISTRY).platforms["linux-64"].pypi}
    assert locked["torch"] == "1.10.2"
    assert int(locked["setuptools"].split(".")[0]) < 80


TF115 = re.sub(r"\n\[keras\]\n(.+\n)+", "\n", (REPO / "specs" / "tf1-keras-cpu.toml").read_text()
               .replace('"tensorflow==1.15.5", "keras==2.3.1", "numpy<1.19", "h5py<3", '
                        '"protobuf<4"', '"tensorflow==1.15.5", "numpy<1.19", "protobuf<4"'))


@pytest.mark.network
def test_tensorflow_1_15_is_locked_with_the_h5py_its_keras_reads(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Real uv: TensorFlow 1.15.5 requires no h5py but keras-applications' unpinned one, and
    uv takes h5py 3, whose strings tf.keras's load_model cannot decode; the TensorFlow pack's
    pitfall cap has lock add h5py<3 and say why."""
    assert '"tensorflow==1.15.5", "numpy<1.19"' in TF115 and "[keras]" not in TF115
    spec = project_with(tmp_path, "tf115", TF115)
    assert main(["lock", str(spec), "--json", "--platform", "linux-64"]) == 0
    [result] = json.loads(capsys.readouterr().out)["results"]
    assert any(note.startswith("linux-64: added h5py<3: tensorflow/python/keras/saving/"
                               "hdf5_format.py:160") for note in result["notes"]), result["notes"]
    locked = {f.name: f.version for f in load_lock(
        tmp_path / "locks" / "tf115.lock", REGISTRY).platforms["linux-64"].pypi}
    assert locked["tensorflow"] == "1.15.5" and locked["h5py"].startswith("2.")


def test_theano_and_theano_pymc_together_refused_before_resolving(
        tmp_path: Path, no_resolvers: None, capsys: pytest.CaptureFixture[str]) -> None:
    text = CUDNN8_CUDA111.replace('"Theano-PyMC==1.0.5"]', '"Theano-PyMC==1.0.5", "Theano==1.0.5"]')
    spec = project_with(tmp_path, "both", text)
    assert main(["lock", str(spec)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "both install the `theano` package" in err and "fix: drop Theano==1.0.5" in err
    assert not (tmp_path / "locks").exists()


def test_a_refused_pin_is_named_at_its_own_line_in_a_multi_line_array(
        tmp_path: Path, no_resolvers: None, capsys: pytest.CaptureFixture[str]) -> None:
    """Not at the line of ``packages = [``, where the user would have to look for it."""
    text = CUDNN8_CUDA111.replace('packages = ["numpy==1.19.5", "Theano-PyMC==1.0.5"]',
                                  'packages = [\n    "numpy==1.19.5",  # BLAS\n'
                                  '    "Theano-PyMC==1.0.5",\n    "Theano==1.0.5",\n]')
    spec = project_with(tmp_path, "both", text)
    assert main(["lock", str(spec)]) == 2
    err = capsys.readouterr().err.strip()
    line = text.splitlines().index('    "Theano==1.0.5",') + 1
    assert err.startswith(f"error: {spec}:{line}: pypi.packages: "), err


def test_check_is_fresh_then_stale_without_network(tmp_path: Path, no_resolvers: None,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "specs").mkdir()
    (tmp_path / "locks").mkdir()
    spec = tmp_path / "specs" / "theano-cpu.toml"
    shutil.copy(REPO / "specs" / "theano-cpu.toml", spec)
    shutil.copy(REPO / "locks" / "theano-cpu.lock", tmp_path / "locks" / "theano-cpu.lock")
    assert main(["lock", "--check", str(spec)]) == 0
    spec.write_text(spec.read_text().replace("scipy==1.7.3", "scipy==1.7.2"))
    assert main(["lock", "--check", str(spec), "--json"]) == 3
    document = json.loads(capsys.readouterr().out)
    assert document["results"][0]["fresh"] is False
    assert "spec changed" in document["results"][0]["reasons"][0]


def test_unchanged_spec_relocks_without_resolving(tmp_path: Path, no_resolvers: None) -> None:
    (tmp_path / "specs").mkdir()
    (tmp_path / "locks").mkdir()
    spec = tmp_path / "specs" / "theano-cpu.toml"
    shutil.copy(REPO / "specs" / "theano-cpu.toml", spec)
    committed = (REPO / "locks" / "theano-cpu.lock").read_text()
    (tmp_path / "locks" / "theano-cpu.lock").write_text(committed)
    spec.write_text("# a new comment changes nothing locked\n" + spec.read_text())
    assert main(["lock", str(spec), "-q"]) == 0
    assert (tmp_path / "locks" / "theano-cpu.lock").read_text() == committed


def test_a_lock_of_another_spec_at_the_lock_path_is_refused_and_kept(
        tmp_path: Path, no_resolvers: None, capsys: pytest.CaptureFixture[str]) -> None:
    """Two repositories' ``envforge.toml`` lock to one ``../locks/envforge.lock``: the second
    lock once took the first's versions as preferences and overwrote it (facenet's and
    bilm-tf's, side by side). It is refused, naming both, and the lock left as it was."""
    (tmp_path / "locks").mkdir()
    committed = (REPO / "locks" / "theano-cpu.lock").read_bytes()
    (tmp_path / "locks" / "envforge.lock").write_bytes(committed)
    text = (REPO / "specs" / "theano-cpu.toml").read_text()
    for repo, name in (("first", "theano-cpu"), ("second", "second")):
        (tmp_path / repo).mkdir()
        (tmp_path / repo / "envforge.toml").write_text(
            text.replace('name = "theano-cpu"', f'name = "{name}"'))
    capsys.readouterr()
    assert main(["lock", str(tmp_path / "second" / "envforge.toml"), "-q"]) == 2
    said = capsys.readouterr().err
    assert f"{tmp_path / 'locks' / 'envforge.lock'} is the lock of another spec, " \
           "'theano-cpu'" in " ".join(said.split()) and "--locks-dir" in said
    assert (tmp_path / "locks" / "envforge.lock").read_bytes() == committed
    assert main(["lock", str(tmp_path / "first" / "envforge.toml"), "-q"]) == 0  # its own
    from envforge.app.project import Project

    renamed = tmp_path / "first" / "envforge.toml"  # the file the lock now names
    renamed.write_text(renamed.read_text().replace('name = "theano-cpu"', 'name = "renamed"'))
    assert Project.load(renamed).lock_to_replace() is not None  # renamed: its lock still


def test_lock_ends_with_the_command_to_run_next_but_not_quiet_or_in_json(
        tmp_path: Path, no_resolvers: None, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "specs").mkdir()
    spec = tmp_path / "specs" / "theano-cpu.toml"
    shutil.copy(REPO / "specs" / "theano-cpu.toml", spec)
    shutil.copytree(REPO / "locks", tmp_path / "locks")
    capsys.readouterr()
    assert main(["lock", str(spec)]) == 0
    assert capsys.readouterr().err.splitlines()[-1] == f"next: envforge apply {spec}"
    assert main(["lock", str(spec), "-q"]) == 0
    assert "next:" not in capsys.readouterr().err
    assert main(["lock", str(spec), "--json"]) == 0
    out, err = capsys.readouterr()
    assert "next:" not in out + err and json.loads(out)["exit_code"] == 0


def _format_2(text: str) -> str:
    """A lock of format 3 as format 2 wrote it: no apply tables, no rc-file scope."""
    text = re.sub(r"(?m)^\[platforms\.[a-z0-9-]+\.apply(\.compiler)?\]\n(?:[^\[\n].*\n)*\n",
                  "", text)
    assert "apply" not in text
    return text.replace('theanorc = "env"\n', "").replace("version = 3\n", "version = 2\n", 1)


def test_a_format_2_lock_is_stale_until_lock_completes_it_without_resolving(
        tmp_path: Path, no_resolvers: None, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Format 2 did not record what apply reads of the spec: such a lock still loads (doctor
    and status read it), plan calls it stale (exit 3) naming the fix, and `envforge lock`
    completes it from its spec, offline, into the bytes a fresh lock has."""
    monkeypatch.setenv("ENVFORGE_HOME", str(tmp_path / "home"))
    spec = project_with(tmp_path, "keras-theano-cpu",
                        (REPO / "specs" / "keras-theano-cpu.toml").read_text())
    committed = (REPO / "locks" / "keras-theano-cpu.lock").read_text()
    lock_file = tmp_path / "locks" / "keras-theano-cpu.lock"
    lock_file.parent.mkdir()
    lock_file.write_text(_format_2(committed))
    assert all(p.apply is None for p in load_lock(lock_file, REGISTRY).platforms.values())
    assert main(["plan", str(spec), "--prefix", str(tmp_path / "env")]) == 3
    err = capsys.readouterr().err
    assert "format (2) does not record what apply reads" in err
    assert f"run `envforge lock {spec}`" in err
    assert main(["lock", "--check", str(spec)]) == 3
    assert main(["lock", str(spec), "-q"]) == 0
    assert lock_file.read_text() == committed
    assert main(["lock", "--check", str(spec)]) == 0


@pytest.mark.parametrize(("old", "new", "key"), [
    ('[platforms.linux-64.apply.compiler]\nkind = "gcc"\n\n', "",
     "platforms.linux-64.apply.compiler"),
    ('keras_json = "{prefix}/keras/keras.json"', 'keras_json = "~/.keras/keras.json"',
     "platforms.linux-64.expect.keras.keras_json"),
])
def test_check_refuses_a_lock_whose_apply_inputs_were_edited(
        tmp_path: Path, no_resolvers: None, capsys: pytest.CaptureFixture[str], old: str,
        new: str, key: str) -> None:
    """What apply reads is the lock's, so `lock --check` (CI's) judges it against the spec
    too: one line naming the lock's line and key, exit 2."""
    spec = project_with(tmp_path, "keras-theano-cpu",
                        (REPO / "specs" / "keras-theano-cpu.toml").read_text())
    text = (REPO / "locks" / "keras-theano-cpu.lock").read_text()
    assert old in text
    lock_file = tmp_path / "locks" / "keras-theano-cpu.lock"
    lock_file.parent.mkdir()
    lock_file.write_text(text.replace(old, new, 1))
    assert main(["lock", "--check", str(spec)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f" {key}: " in err, err
    assert re.search(rf"{re.escape(str(lock_file))}:\d+: ", err), err


def test_committed_locks_match_their_specs() -> None:
    assert main(["lock", "--check", str(REPO / "specs" / "theano-cpu.toml"),
                 str(REPO / "specs" / "theano-gpu-linux.toml")]) == 0


@pytest.mark.network
def test_theano_cpu_lock_pins_each_platforms_files_deterministically(tmp_path: Path) -> None:
    spec = project_with(tmp_path, "theano-cpu", (REPO / "specs" / "theano-cpu.toml").read_text())
    assert main(["lock", str(spec), "-q"]) == 0
    lock_file = tmp_path / "locks" / "theano-cpu.lock"
    first = lock_file.read_bytes()
    lock = load_lock(lock_file, REGISTRY)
    for platform, suffix in (("linux-64", "-cp37-cp37m-manylinux2010_x86_64.whl"),
                             ("win-64", "-cp37-cp37m-win_amd64.whl")):
        files = {f.name: f for f in lock.platforms[platform].pypi}  # type: ignore[index]
        assert files["numpy"].filename == "numpy-1.19.5" + suffix
        assert (files["theano-pymc"].kind, files["theano-pymc"].sha256) == ("sdist",
                                                                            THEANO_SDIST_SHA)
        # Theano imports pkg_resources undeclared (knowledge): 68.0.0 is the last for 3.7.
        assert (files["setuptools"].version, files["setuptools"].kind) == ("68.0.0", "wheel")
    assert [d.name for d in lock.platforms["linux-64"].deb] == [
        "libgfortran5", "libopenblas0-pthread", "libquadmath0"]
    assert lock.platforms["win-64"].deb == ()
    lock_file.unlink()
    assert main(["lock", str(spec), "-q"]) == 0  # resolved again from scratch
    assert lock_file.read_bytes() == first
    assert "pypi.org/simple" in first.decode() and "file://" not in first.decode()


@pytest.mark.network
def test_gpu_spec_locks_debian_bullseyes_stack(tmp_path: Path) -> None:
    """Python 3.9.2, NumPy 1:1.19.5 and pygpu from bullseye; from PyPI only Theano and
    setuptools (pkg_resources); the lock's expectations carry the stack's versions."""
    spec = project_with(tmp_path, "theano-gpu-linux",
                        (REPO / "specs" / "theano-gpu-linux.toml").read_text())
    assert main(["lock", str(spec), "-q"]) == 0
    lock = load_lock(tmp_path / "locks" / "theano-gpu-linux.lock", REGISTRY)
    assert lock.meta.debian_suite == "bullseye"
    linux = lock.platforms["linux-64"]
    assert (linux.python, linux.environment) == ("3.9.2", "debian")
    debs = {d.name: d for d in linux.deb}
    assert debs["python3-numpy"].version == "1:1.19.5-1"
    assert debs["python3-scipy"].version.startswith("1.6.0-")
    assert debs["python3-pygpu"].version.startswith("0.7.6-")
    assert debs["python3.9-dev"].version == "3.9.2-1"
    assert {"python3-distutils", "libpython3.9-dev", "libgpuarray-dev"} <= set(debs)
    files = {f.name: f for f in linux.pypi}
    assert sorted(files) == ["setuptools", "theano-pymc"]
    assert files["theano-pymc"].sha256 == THEANO_SDIST_SHA
    assert {k: linux.expect.versions[k] for k in ("python", "numpy", "scipy", "pygpu")} == {
        "python": "3.9.2", "numpy": "1.19.5", "scipy": "1.6.0", "pygpu": "0.7.6"}
    assert theano_expect(linux.expect).flags["dnn.enabled"] == "False"


def test_conda_spec_locks_against_a_local_channel(tmp_path: Path, conda_channel: Path) -> None:
    text = conda_spec_text(conda_channel, extra='''
[conda.platform.win-64]
packages = ["m2w64-toolchain"]
''')
    spec = project_with(tmp_path, "condaenv", text)
    assert main(["lock", str(spec), "-q"]) == 0
    lock = load_lock(tmp_path / "locks" / "condaenv.lock", REGISTRY)
    linux = {p.name: p for p in lock.platforms["linux-64"].conda}
    win = {p.name: p for p in lock.platforms["win-64"].conda}
    assert linux["pygpu"].version == "0.7.6" and linux["libgpuarray"].version == "0.7.6"
    assert linux["pygpu"].subdir == "linux-64" and win["pygpu"].subdir == "win-64"
    assert "m2w64-toolchain" in win and "m2w64-toolchain" not in linux
    assert lock.platforms["linux-64"].expect.versions["pygpu"] == "0.7.6"
    raw = tomllib.loads((tmp_path / "locks" / "condaenv.lock").read_text())
    record = raw["platforms"]["linux-64"]["conda"][0]
    assert len(record["sha256"]) == 64 and len(record["md5"]) == 32


def test_an_unreachable_channel_fails_that_spec_only(tmp_path: Path, conda_channel: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    good = project_with(tmp_path, "good", f"""\
[project]
name = "good"
platforms = ["linux-64"]
[python]
version = "3.7"
[environment]
kind = "conda"
channels = ["{conda_channel.as_uri()}"]
[conda]
packages = ["python=3.7"]
""")
    bad = project_with(tmp_path, "bad", good.read_text().replace(
        conda_channel.as_uri(), (tmp_path / "no-such-channel").as_uri()).replace(
        'name = "good"', 'name = "bad"'))
    assert main(["lock", str(bad), str(good)]) == 1
    assert "no-such-channel" in capsys.readouterr().err
    assert (tmp_path / "locks" / "good.lock").is_file()
    assert not (tmp_path / "locks" / "bad.lock").exists()


@pytest.mark.network
def test_the_suite_group_is_resolved_for_pypi_s_python_and_records_it() -> None:
    """The group lockcheck can tell apart: it carries the Python it was resolved for, the
    same full version as the environment's PyPI packages."""
    from envforge.lockcheck import check_lock
    from envforge.spec import load_spec

    spec = load_spec(REPO / "specs" / "theano-cpu.toml", REGISTRY)
    lock = load_lock(REPO / "locks" / "theano-cpu.lock", REGISTRY)
    plock = lock.platforms["linux-64"]
    suite = lock_suite(spec.for_platform("linux-64"), REGISTRY, plock.pypi,
                       {"theano": "1.0.5"},
                       python="3.7.16")
    assert suite is not None and suite.python == "3.7.16"
    assert {"pytest", "pytest-xdist"} <= {f.name for f in suite.runner}
    recorded = plock.model_copy(update={"suite": suite, "pypi_python": "3.7.16"})
    check_lock(spec, lock.model_copy(update={"platforms": {**lock.platforms,
                                                           "linux-64": recorded}}),
               REPO / "locks" / "theano-cpu.lock", REGISTRY)


@pytest.mark.network
def test_a_suite_runner_beside_the_environments_own_older_pytest_locks_and_round_trips(
        tmp_path: Path) -> None:
    """Lasagne's 2019 tree pins pytest 5.3 (its extra [testing]): the runner's pytest 7.4.4
    and pytest-xdist 3.5.0 (which needs pytest >= 6.2) gave way to an unresolvable lock."""
    from envforge.lockfile import LockedPypiFile, dumps_lock
    from envforge.spec import load_spec

    spec = load_spec(REPO / "specs" / "theano-cpu.toml", REGISTRY)
    lock = load_lock(REPO / "locks" / "theano-cpu.lock", REGISTRY)
    plock = lock.platforms["linux-64"]
    pytest_5 = LockedPypiFile(
        name="pytest", version="5.3.0", kind="wheel", filename="pytest-5.3.0-py3-none-any.whl",
        url="https://files.pythonhosted.org/packages/30/c5/cf0d56d9e0458f66cfef10bc74b375597c"
            "34e53e522e23e817673e83f1b9/pytest-5.3.0-py3-none-any.whl",
        sha256="f6a567e20c04259d41adce9a360bd8991e6aa29dd9695c5e6bd25a9779272673", size=233718)
    suite = lock_suite(spec.for_platform("linux-64"), REGISTRY, (*plock.pypi, pytest_5),
                       {"theano": "1.0.5"}, python="3.7.16")
    assert suite is not None
    runner = {f.name: f.version for f in suite.runner}
    assert "pytest" not in runner and runner["pytest-xdist"].split(".")[0] == "1"
    written = lock.model_copy(update={"platforms": {**lock.platforms, "linux-64": plock.model_copy(
        update={"suite": suite.model_copy(update={"runner": ()})})}})
    path = tmp_path / "empty-runner.lock"
    path.write_text(dumps_lock(written), encoding="utf-8")
    reread = load_lock(path, REGISTRY).platforms["linux-64"].suite
    assert reread is not None and reread.runner == ()


def test_a_conda_relock_keeps_the_locks_versions_and_upgrades_move_them(
        tmp_path: Path, conda_channel: Path) -> None:
    text = conda_spec_text(conda_channel, name="keep", platforms=("linux-64",)).replace(
        'packages = ["python=3.7", "theano-pymc=1.0.5"]', 'packages = ["libgpuarray ==0.7.6"]')
    assert '"libgpuarray ==0.7.6"' in text
    spec = project_with(tmp_path, "keep", text)

    def libgpuarray() -> str:
        lock = load_lock(tmp_path / "locks" / "keep.lock", REGISTRY)
        return {p.name: p.version for p in lock.platforms["linux-64"].conda}["libgpuarray"]

    assert main(["lock", str(spec), "-q"]) == 0
    assert libgpuarray() == "0.7.6"
    spec.write_text(text.replace('"libgpuarray ==0.7.6"', '"libgpuarray"'))
    assert main(["lock", str(spec), "-q"]) == 0
    assert libgpuarray() == "0.7.6"  # 0.8.0 exists: the lock's version was preferred
    lock = tmp_path / "locks" / "keep.lock"
    kept = lock.read_bytes()
    assert main(["lock", str(spec), "-q", "-P", "libgpuarray"]) == 0  # only it is let go
    assert libgpuarray() == "0.8.0"
    lock.write_bytes(kept)
    assert main(["lock", str(spec), "-q", "--upgrade"]) == 0
    assert libgpuarray() == "0.8.0"


def test_upgrading_a_package_the_lock_does_not_hold_is_refused_before_any_work(
        tmp_path: Path, conda_channel: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = project_with(tmp_path, "condaenv", conda_spec_text(conda_channel))
    assert main(["lock", str(spec), "-q"]) == 0
    lock = tmp_path / "locks" / "condaenv.lock"
    before = lock.read_bytes()
    capsys.readouterr()
    assert main(["lock", str(spec), "-q", "-P", "pygpu", "-P", "nmupy"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--upgrade-package nmupy: not in" in err
    assert "pygpu" not in err.split("not in")[0] and lock.read_bytes() == before


@pytest.mark.network
def test_a_platform_locked_with_older_knowledge_is_locked_again_keeping_its_versions(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A table lock derives with envforge's knowledge differs from the one the lock holds
    (as torch 1.1.0's CUDA build did once the torch pack learnt it): `envforge lock` said
    "unchanged" and apply refused the lock as edited; now that platform is locked again,
    its versions kept, and the other platform reused."""
    (tmp_path / "specs").mkdir()
    (tmp_path / "locks").mkdir()
    spec = tmp_path / "specs" / "theano-cpu.toml"
    shutil.copy(REPO / "specs" / "theano-cpu.toml", spec)
    committed = (REPO / "locks" / "theano-cpu.lock").read_text()
    lock_file = tmp_path / "locks" / "theano-cpu.lock"
    lock_file.write_text(committed.replace('allow_gc = "True"', 'allow_gc = "False"', 1))
    assert main(["plan", str(spec), "--prefix", str(tmp_path / "env")]) == 2
    assert "allow_gc" in capsys.readouterr().err
    assert main(["lock", "--check", str(spec)]) == 2  # as an edit: which it is, no one knows
    assert "written by an envforge whose knowledge differs" in capsys.readouterr().err
    assert main(["lock", str(spec), "-q"]) == 0
    assert main(["lock", "--check", str(spec)]) == 0
    relocked = load_lock(lock_file, REGISTRY)
    before = load_lock(REPO / "locks" / "theano-cpu.lock", REGISTRY)
    for platform in ("linux-64", "win-64"):
        assert relocked.platforms[platform].expect.versions == \
            before.platforms[platform].expect.versions
    assert 'allow_gc = "True"' in lock_file.read_text()
    assert main(["plan", str(spec), "--prefix", str(tmp_path / "env")]) in (0, 3)
