"""Exports are read back by the tools they are for: conda-lock's parser, packaging's pylock, uv."""

from __future__ import annotations

import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest
from conda_lock.lockfile import parse_conda_lock_file
from packaging.pylock import Pylock

from envforge.app.locking import lock_spec
from envforge.cli import main
from envforge.errors import InputError
from envforge.export import export_lock
from envforge.host.interpreters import find_interpreter
from envforge.host.uv import uv_binary
from envforge.lockfile import Lockfile, load_lock
from envforge.spec import parse_spec
from tests.testing.conda_channel import conda_spec_text
from tests.testing.packs import REGISTRY

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def cpu_lock() -> Lockfile:
    return load_lock(REPO / "locks" / "theano-cpu.lock", REGISTRY)


@pytest.fixture(scope="module")
def conda_lock(conda_channel: Path) -> Lockfile:
    spec = parse_spec(conda_spec_text(conda_channel), source="condaenv.toml", registry=REGISTRY)
    return lock_spec(spec, REGISTRY)


def test_conda_lock_v1_is_read_by_conda_lock(conda_lock: Lockfile, tmp_path: Path) -> None:
    path = tmp_path / "conda-lock.yml"
    path.write_text(export_lock(conda_lock, "conda-lock"))
    parsed = parse_conda_lock_file(path)
    assert sorted(parsed.metadata.platforms) == ["linux-64", "win-64"]
    by_key = {(p.name, p.platform): p for p in parsed.package}
    pygpu = by_key[("pygpu", "linux-64")]
    locked = next(p for p in conda_lock.platforms["linux-64"].conda if p.name == "pygpu")
    assert (pygpu.version, pygpu.url, pygpu.hash.sha256, pygpu.hash.md5) == (
        locked.version, locked.url, locked.sha256, locked.md5)
    assert pygpu.dependencies["libgpuarray"] == ">=0.7.6,<0.8"


def test_explicit_lists_every_record_with_md5(conda_lock: Lockfile) -> None:
    text = export_lock(conda_lock, "explicit", "win-64")
    lines = [line for line in text.splitlines() if not line.startswith("#")]
    assert lines[0] == "@EXPLICIT"
    records = conda_lock.platforms["win-64"].conda
    assert lines[1:] == [f"{r.url}#{r.md5}" for r in records]


def test_pylock_is_valid_pep751(cpu_lock: Lockfile) -> None:
    for platform in ("linux-64", "win-64"):
        pylock = Pylock.from_dict(tomllib.loads(export_lock(cpu_lock, "pylock", platform)))
        names = {p.name: p for p in pylock.packages}
        assert names["numpy"].version is not None and str(names["numpy"].version) == "1.19.5"
        assert names["theano-pymc"].sdist is not None
        wheel = names["numpy"].wheels[0]  # type: ignore[index]
        assert wheel.name.endswith("win_amd64.whl" if platform == "win-64" else "x86_64.whl")


def test_per_platform_formats_need_a_platform(cpu_lock: Lockfile) -> None:
    with pytest.raises(InputError, match="--platform"):
        export_lock(cpu_lock, "requirements")
    with pytest.raises(InputError, match="no conda packages"):
        export_lock(cpu_lock, "explicit", "linux-64")


@pytest.mark.network
@pytest.mark.slow
def test_requirements_and_pylock_install_with_uv(cpu_lock: Lockfile, tmp_path: Path) -> None:
    python = find_interpreter("3.7").executable
    venv = tmp_path / "venv"
    subprocess.run([uv_binary(), "venv", "-q", "--python", str(python), str(venv)], check=True)
    req = tmp_path / "requirements.txt"
    assert main(["export", str(REPO / "locks" / "theano-cpu.lock"), "--format", "requirements",
                 "--platform", "linux-64", "-o", str(req)]) == 0
    pylock = tmp_path / "pylock.toml"
    pylock.write_text(export_lock(cpu_lock, "pylock", "linux-64"))
    for source in (["--require-hashes", "--no-deps", "-r", str(req)], ["-r", str(pylock)]):
        done = subprocess.run([uv_binary(), "pip", "install", "--dry-run", "--no-config",
                               "--python", str(venv / "bin" / "python"), *source],
                              capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stderr
        assert "numpy==1.19.5" in done.stderr and "theano-pymc==1.0.5" in done.stderr


def test_git_and_local_files_export_as_pep751_sources(cpu_lock: Lockfile) -> None:
    from envforge.lockfile import LockedPypiFile

    commit = "a" * 40
    extra = (
        LockedPypiFile(name="lasagne", version="0.2.dev1", kind="sdist",
                       filename="lasagne-0.2.dev1.tar.gz", url=f"git+file:///src/lasagne@{commit}",
                       sha256="b" * 64, origin="git", commit=commit),
        LockedPypiFile(name="tiny", version="1.0", kind="sdist", filename="tiny-1.0.tar.gz",
                       url="file:///src/tiny-1.0.tar.gz", sha256="c" * 64, origin="path"))
    plock = cpu_lock.platforms["linux-64"]
    lock = cpu_lock.model_copy(update={"platforms": {"linux-64": plock.model_copy(
        update={"pypi": (*plock.pypi, *extra)})}})
    parsed = Pylock.from_dict(tomllib.loads(export_lock(lock, "pylock", "linux-64")))
    by_name = {str(p.name): p for p in parsed.packages}
    vcs = by_name["lasagne"].vcs
    assert vcs is not None and (vcs.url, vcs.commit_id) == ("file:///src/lasagne", commit)
    archive = by_name["tiny"].archive
    assert archive is not None and archive.hashes == {"sha256": "c" * 64}
    assert by_name["numpy"].index == "https://pypi.org/simple"
    with pytest.raises(InputError, match="git dependency"):
        export_lock(lock, "requirements", "linux-64")
    only_path = lock.model_copy(update={"platforms": {"linux-64": plock.model_copy(
        update={"pypi": (*plock.pypi, extra[1])})}})
    assert "tiny @ file:///src/tiny-1.0.tar.gz \\\n    --hash=sha256:" + "c" * 64 in \
        export_lock(only_path, "requirements", "linux-64")


@pytest.mark.parametrize("where", ["the lock", "its hard link", "a folder", "a missing folder"])
def test_export_o_onto_its_own_lock_a_folder_or_into_a_missing_folder_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], where: str) -> None:
    """Issue 29, findings 4 and 9: ``export locks/x.lock -o locks/x.lock`` replaced the lock
    (exit 0); a folder was a traceback. Now: exit 2, one line, nothing written."""
    lock = tmp_path / "locks" / "x.lock"
    lock.parent.mkdir()
    shutil.copyfile(REPO / "locks" / "theano-cpu.lock", lock)
    (tmp_path / "hard.lock").hardlink_to(lock)
    output = {"the lock": tmp_path / "locks" / ".." / "locks" / "x.lock",
              "its hard link": tmp_path / "hard.lock", "a folder": tmp_path / "locks",
              "a missing folder": tmp_path / "missing" / "r.txt"}[where]
    untouched = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    capsys.readouterr()
    assert main(["export", str(lock), "--format", "requirements", "-o", str(output)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: -o {output}: ") and err.count("\n") == 1, err
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == untouched


def test_export_given_a_folder_for_the_lock_is_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["export", str(tmp_path), "--format", "requirements"]) == 2
    assert capsys.readouterr().err == (f"error: {tmp_path}: a folder, not a regular file: a "
                                       "lock is one\n")
