from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from envforge.errors import ArtifactError
from envforge.host.conda_install import (
    conda_envs_dir,
    default_conda_roots,
    find_conda_envs_dir,
    install_conda,
)
from envforge.lockfile import LockedCondaPackage
from envforge.platforms import PLATFORMS
from envforge.resolve.conda import solve_conda
from tests.testing.conda_channel import archive, copy_channel, serve, sha256_of, shared_channel


@pytest.fixture(scope="module")
def conda_channel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return shared_channel(tmp_path_factory)


def _lock(channel: str | Path, tmp_path: Path, *specs: str,
          python: str | None = "3.7") -> tuple[LockedCondaPackage, ...]:
    return solve_conda(specs or ("theano-pymc",), [str(channel)], "linux-64", python=python,
                       cache_dir=tmp_path / "solve-cache")


def _installed(prefix: Path) -> set[str]:
    return {p.stem for p in (prefix / "conda-meta").glob("*.json")}


def test_installs_exactly_the_locked_records(conda_channel: Path, tmp_path: Path) -> None:
    records = _lock(conda_channel, tmp_path)
    prefix = tmp_path / "env"
    install_conda(records, prefix, cache_dir=tmp_path / "cache")

    assert _installed(prefix) == {f"{r.name}-{r.version}-{r.build}" for r in records}
    for record in records:
        marker = (prefix / "etc" / "envforge-test" / f"{record.name}.txt").read_text()
        # The build prefix inside the file was rewritten to this prefix when linking.
        assert marker == f"{record.name} {record.version} {record.subdir}\nprefix={prefix}\n"
        meta = json.loads((prefix / "conda-meta" /
                           f"{record.name}-{record.version}-{record.build}.json").read_text())
        assert (meta["url"], meta["channel"]) == (record.url, record.channel)
        assert (meta["sha256"], meta["md5"]) == (record.sha256, record.md5)
        assert meta["files"] == [f"etc/envforge-test/{record.name}.txt"]

    # Installing a smaller lock into the same prefix removes what it no longer lists.
    python_only = tuple(r for r in records if r.name == "python")
    install_conda(python_only, prefix, cache_dir=tmp_path / "cache")
    assert _installed(prefix) == {"python-3.7.16-" + python_only[0].build}
    assert sorted(p.name for p in (prefix / "etc" / "envforge-test").iterdir()) == ["python.txt"]


def test_tampered_package_is_refused_and_nothing_changes(conda_channel: Path,
                                                         tmp_path: Path) -> None:
    channel = copy_channel(conda_channel, tmp_path / "channel")
    records = _lock(channel, tmp_path)
    prefix = tmp_path / "env"
    install_conda(tuple(r for r in records if r.name == "python"), prefix,
                  cache_dir=tmp_path / "cache")
    before = sorted(str(p.relative_to(prefix)) for p in prefix.rglob("*"))

    # Swap in another real, valid package under the locked file name: rattler alone
    # would install it, since it checks no hash for file:// archives.
    locked = archive(channel, "linux-64", "libgpuarray", "0.7.6")
    locked.write_bytes(archive(channel, "linux-64", "libgpuarray", "0.8.0").read_bytes())
    expected = next(r.sha256 for r in records if r.name == "libgpuarray")
    with pytest.raises(ArtifactError) as caught:
        install_conda(records, prefix, cache_dir=tmp_path / "cache")

    message = str(caught.value)
    assert locked.name in message
    assert expected in message and sha256_of(locked) in message
    assert sorted(str(p.relative_to(prefix)) for p in prefix.rglob("*")) == before

    fresh = tmp_path / "fresh"
    with pytest.raises(ArtifactError):
        install_conda(records, fresh, cache_dir=tmp_path / "cache")
    assert not fresh.exists()


def test_an_altered_cached_archive_is_refused(conda_channel: Path, tmp_path: Path) -> None:
    """The cache is checked like every other source (fetch.obtain): never trusted, never used."""
    records = _lock(conda_channel, tmp_path, "libgpuarray <0.8", python=None)
    (record,) = records
    install_conda(records, tmp_path / "one", cache_dir=tmp_path / "cache")
    (cached,) = (tmp_path / "cache" / "files").rglob("*.conda")
    assert sha256_of(cached) == record.sha256
    cached.write_bytes(b"not a package")

    with pytest.raises(ArtifactError, match=f"does not match the lock's {record.sha256} "
                                            r"\(the cache copy was altered; refusing it\)"):
        install_conda(records, tmp_path / "two", cache_dir=tmp_path / "cache")
    assert not (tmp_path / "two").exists()


def test_install_from_an_http_channel(conda_channel: Path, tmp_path: Path) -> None:
    with serve(conda_channel) as url:
        records = _lock(url, tmp_path)
        install_conda(records, tmp_path / "env", cache_dir=tmp_path / "cache")
    meta = json.loads(next((tmp_path / "env" / "conda-meta").glob("pygpu-*.json")).read_text())
    assert meta["url"].startswith(url + "/linux-64/pygpu-0.7.6-")
    assert (tmp_path / "env" / "etc" / "envforge-test" / "pygpu.txt").is_file()


def test_missing_archive(conda_channel: Path, tmp_path: Path) -> None:
    channel = copy_channel(conda_channel, tmp_path / "channel")
    records = _lock(channel, tmp_path)
    archive(channel, "noarch", "theano-pymc", "1.0.5").unlink()
    with pytest.raises(ArtifactError,
                       match=r"cannot read .*/noarch/theano-pymc-1\.0\.5-.*: No such"):
        install_conda(records, tmp_path / "env", cache_dir=tmp_path / "cache")
    assert not (tmp_path / "env").exists()


# -- conda's envs folder ---------------------------------------------------------------------

def _conda_root(path: Path) -> Path:
    (path / "conda-meta").mkdir(parents=True)
    (path / "condabin").mkdir()
    return path


def _env(path: Path) -> Path:
    (path / "conda-meta").mkdir(parents=True)
    return path


def test_no_conda_anywhere(tmp_path: Path) -> None:
    plain_env = _env(tmp_path / "venvish")  # conda-meta alone is an environment, not conda
    assert find_conda_envs_dir({"CONDA_PREFIX": str(plain_env)}, home=tmp_path / "home",
                               roots=[tmp_path / "miniconda3"]) is None


def test_conda_exe_points_at_the_root(tmp_path: Path) -> None:
    root = _conda_root(tmp_path / "mc")
    other = _conda_root(tmp_path / "other")
    environ = {"CONDA_EXE": str(root / "bin" / "conda"), "CONDA_PREFIX": str(other)}
    assert find_conda_envs_dir(environ, home=tmp_path) == root / "envs"


@pytest.mark.parametrize("active", ["root", "named env"])
def test_conda_prefix_of_an_active_environment(tmp_path: Path, active: str) -> None:
    root = _conda_root(tmp_path / "anaconda3")
    prefix = root if active == "root" else _env(root / "envs" / "theano")
    assert find_conda_envs_dir({"CONDA_PREFIX": str(prefix)}, home=tmp_path) == root / "envs"


def test_environments_txt(tmp_path: Path) -> None:
    root = _conda_root(tmp_path / "somewhere" / "miniforge3")
    home = tmp_path / "home"
    (home / ".conda").mkdir(parents=True)
    (home / ".conda" / "environments.txt").write_text(
        f"{tmp_path / 'gone'}\n\n{root / 'envs' / 'py37'}\n")
    assert find_conda_envs_dir({}, home=home) == root / "envs"


def test_common_roots_in_order(tmp_path: Path) -> None:
    second = _conda_root(tmp_path / "b")
    _conda_root(tmp_path / "c")
    roots = [tmp_path / "a", second, tmp_path / "c"]
    assert find_conda_envs_dir({}, home=tmp_path, roots=roots) == second / "envs"


def test_envs_dirs_setting_wins(tmp_path: Path) -> None:
    root = _conda_root(tmp_path / "mc")
    environ = {"CONDA_ENVS_DIRS": os.pathsep.join(["/data/envs", "/other"]),
               "CONDA_EXE": str(root / "bin" / "conda")}
    assert find_conda_envs_dir(environ, home=tmp_path) == Path("/data/envs")


def test_read_only_install_falls_back_to_the_user_folder(tmp_path: Path) -> None:
    root = _conda_root(tmp_path / "ProgramData" / "Miniconda3")
    home = tmp_path / "home"
    found = find_conda_envs_dir({}, home=home, roots=[root],
                                writable=lambda path: not path.is_relative_to(root))
    assert found == home / ".conda" / "envs"


def test_default_roots(tmp_path: Path) -> None:
    windows = default_conda_roots({"ProgramData": "/pd", "LOCALAPPDATA": "/la"}, tmp_path,
                                  platform=PLATFORMS["win-64"])
    assert tmp_path / "miniconda3" in windows
    assert Path("/pd/Anaconda3") in windows and Path("/la/miniforge3") in windows
    assert Path("/opt/conda") not in windows
    linux = default_conda_roots({}, tmp_path, platform=PLATFORMS["linux-64"])
    assert linux[0] == tmp_path / "miniforge3" and Path("/opt/conda") in linux


def test_conda_envs_dir_reads_this_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _conda_root(tmp_path / "miniconda3")
    for var in ("CONDA_ENVS_DIRS", "CONDA_ENVS_PATH", "CONDA_PREFIX"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("CONDA_EXE", str(root / "bin" / "conda"))
    assert conda_envs_dir() == root / "envs"
