"""Offline bundles: made from the real locks with real downloads, applied with no network.

The fast tests use the committed CPU spec and lock (with a cuDNN archive added where a user
artifact is the point) and fail before any download. The slow ones build real bundles and
apply them inside a user+network namespace (``unshare -rn``), where no socket can reach out.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from envforge.bundle.build import MiB, fetch_all
from envforge.bundle.manifest import MANIFEST, BundleFile, Manifest, read_manifest, write_manifest
from envforge.bundle.sources import bundle_lookup
from envforge.cli import main
from envforge.envlayout import layout_for
from envforge.errors import InputError, StepError
from envforge.host.archives import sha256_file
from envforge.host.fetch import FileRef, cache_path, download, obtain
from envforge.host.interpreters import find_interpreter
from envforge.lockfile import LockedArtifact, load_lock, write_lock
from envforge.ui import UI
from tests.conftest import CONDA_CHANNEL
from tests.testing.homes import home_sharing, home_sharing_modules
from tests.testing.packs import REGISTRY

REPO = Path(__file__).resolve().parents[1]
CPU_SPEC = REPO / "specs" / "theano-cpu.toml"
CPU_LOCK = REPO / "locks" / "theano-cpu.lock"
GPU_LOCK = REPO / "locks" / "theano-gpu-linux.lock"
LIMIT = 64 * MiB  # what can be carried to the closed GPU host


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """envforge's folders (cache included) empty and private to the test."""
    root = tmp_path / "envforge-home"
    monkeypatch.setenv("ENVFORGE_HOME", str(root))
    return root


def cached_files(home: Path) -> list[Path]:
    files = home / "cache" / "files"
    return sorted(p for p in files.rglob("*") if p.is_file()) if files.is_dir() else []


def lock_with_artifacts(tmp_path: Path, artifacts: Sequence[LockedArtifact], *,
                        keep_packages: bool = True) -> Path:
    """The committed CPU spec and lock copied to ``tmp_path``, with artifacts added to linux-64."""
    (tmp_path / "specs").mkdir(exist_ok=True)
    shutil.copy(CPU_SPEC, tmp_path / "specs" / CPU_SPEC.name)
    lock = load_lock(CPU_LOCK, REGISTRY)
    linux = lock.platforms["linux-64"]
    changes: dict[str, object] = {"artifacts": tuple(artifacts)}
    if not keep_packages:
        changes.update(pypi=(), deb=())
    platforms = {**lock.platforms, "linux-64": linux.model_copy(update=changes)}
    path = tmp_path / "locks" / CPU_LOCK.name
    write_lock(lock.model_copy(update={"platforms": platforms}), path)
    return path


def cudnn(sha256: str, filename: str = "cudnn-10.2-linux-x64-v7.6.5.32.tgz") -> LockedArtifact:
    return LockedArtifact(role="cudnn", filename=filename,
                          url="https://developer.nvidia.com/rdp/cudnn-archive", sha256=sha256,
                          source="NVIDIA download site", user_supplied=True)


def test_missing_user_artifact_is_one_clear_error_before_any_download(
        tmp_path: Path, home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lock = lock_with_artifacts(tmp_path, [cudnn("600267f2caaed2fd58eb214ba669d8ea35f396a7d19b9"
                                                "4822e6b36f9f7088c20")])
    out = tmp_path / "bundle"

    assert main(["bundle", str(lock), "-o", str(out), "--platform", "linux-64"]) == 2

    err = capsys.readouterr().err
    assert err.count("\n") == 1  # one line
    assert ("cudnn archive cudnn-10.2-linux-x64-v7.6.5.32.tgz (sha256 600267f2caaed2fd58eb214ba6"
            "69d8ea35f396a7d19b94822e6b36f9f7088c20) is not at hand: download it from "
            "https://developer.nvidia.com/rdp/cudnn-archive and pass --artifact cudnn=PATH") in err
    assert cached_files(home) == []  # the lock's wheels and debs were not fetched first
    assert not (out / MANIFEST).exists()


def test_a_supplied_artifact_that_is_not_the_locked_one_is_refused(
        tmp_path: Path, home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lock = lock_with_artifacts(tmp_path, [cudnn("0" * 64)], keep_packages=False)
    other = tmp_path / "cudnn.tgz"
    other.write_bytes(b"not the archive the lock names")

    assert main(["bundle", str(lock), "-o", str(tmp_path / "b"), "--platform", "linux-64",
                 "--artifact", f"cudnn={other}"]) == 2
    assert f"is not the lock's {'0' * 64}" in capsys.readouterr().err


@pytest.fixture
def artifact_bundle(tmp_path: Path, home: Path) -> tuple[Path, Path, Path]:
    """(lock, bundle, archive): a bundle of one user-supplied archive, made with no network."""
    archive = tmp_path / "downloads" / "cudnn-test.tgz"
    archive.parent.mkdir()
    archive.write_bytes(os.urandom(200_000))
    lock = lock_with_artifacts(tmp_path, [cudnn(sha256_file(archive), archive.name)],
                               keep_packages=False)
    bundle = tmp_path / "bundle"
    assert main(["bundle", str(lock), "-o", str(bundle), "--platform", "linux-64",
                 "--artifact", f"cudnn={archive}"]) == 0
    return lock, bundle, archive


def test_supplied_artifact_is_carried_cached_and_checked(
        artifact_bundle: tuple[Path, Path, Path], home: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    lock, bundle, archive = artifact_bundle
    manifest = read_manifest(bundle)
    [carried] = manifest.files
    assert (carried.path, carried.source, carried.role) == ("artifacts/cudnn-test.tgz",
                                                            "artifact", "cudnn")
    assert sha256_file(bundle / carried.path) == sha256_file(archive) == carried.sha256
    assert (bundle / manifest.lock).read_bytes() == lock.read_bytes()
    assert (bundle / manifest.spec).read_bytes() == CPU_SPEC.read_bytes()
    ref = FileRef("", carried.sha256, archive.name)
    assert sha256_file(cache_path(home / "cache", ref)) == carried.sha256
    assert main(["bundle", "--check", str(bundle)]) == 0

    # Made again without --artifact: the cache has the archive now.
    archive.unlink()
    again = lock.parent.parent / "again"
    assert main(["bundle", str(lock), "-o", str(again), "--platform", "linux-64"]) == 0
    assert read_manifest(again).files == manifest.files
    capsys.readouterr()


def test_check_names_a_tampered_and_a_missing_file(
        artifact_bundle: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    _, bundle, _ = artifact_bundle
    capsys.readouterr()
    carried = bundle / "artifacts" / "cudnn-test.tgz"
    data = bytearray(carried.read_bytes())
    data[1000] ^= 0xFF
    carried.write_bytes(bytes(data))

    assert main(["bundle", "--check", str(bundle), "--json"]) == 1
    captured = capsys.readouterr()
    document = json.loads(captured.out)
    assert document["ok"] is False
    assert [(f["path"], f["status"]) for f in document["files"]] == [
        ("artifacts/cudnn-test.tgz", "altered")]
    assert "artifacts/cudnn-test.tgz: altered" in captured.err

    carried.unlink()
    assert main(["bundle", "--check", str(bundle)]) == 1
    assert "artifacts/cudnn-test.tgz: missing" in capsys.readouterr().err


def test_check_refuses_a_manifest_that_points_outside(
        artifact_bundle: tuple[Path, Path, Path]) -> None:
    _, bundle, _ = artifact_bundle
    manifest = json.loads((bundle / MANIFEST).read_text())
    manifest["files"][0]["path"] = "../outside.tgz"
    (bundle / MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(InputError, match=r"files\.0\.path: .*leads outside"):
        read_manifest(bundle)


def _untouched(home: Path, prefix: Path) -> bool:
    state = home / "state"
    return not prefix.exists() and not (state.exists() and any(state.iterdir()))


@pytest.mark.posix_only("applies theano-cpu's linux-64 lock: the host's platform")
def test_apply_from_a_bundle_missing_the_locks_files_changes_nothing(
        artifact_bundle: tuple[Path, Path, Path], home: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    _, bundle, _ = artifact_bundle  # made for the same spec, but holding no package
    capsys.readouterr()
    prefix = tmp_path / "env"

    assert main(["apply", str(CPU_SPEC), "--bundle", str(bundle), "--yes",
                 "--prefix", str(prefix)]) == 2
    err = capsys.readouterr().err
    assert "nothing was changed" in err
    assert "numpy-1.19.5-cp37-cp37m-manylinux2010_x86_64.whl (sha256 6149a185" in err
    assert "Theano-PyMC-1.0.5.tar.gz" in err and "libquadmath0" in err
    assert _untouched(home, prefix)


@pytest.mark.posix_only("applies theano-cpu's linux-64 lock: the host's platform")
def test_offline_apply_with_an_empty_cache_changes_nothing(
        home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prefix = tmp_path / "env"
    assert main(["apply", str(CPU_SPEC), "--offline", "--yes", "--prefix", str(prefix)]) == 2
    err = capsys.readouterr().err
    assert "--offline: envforge's cache" in err and "nothing was changed" in err
    assert "scipy-1.7.3-cp37-cp37m-manylinux_2_12_x86_64.manylinux2010_x86_64.whl: not in " \
           "the cache" in err
    assert "Theano-PyMC-1.0.5.tar.gz: no wheel built from it" in err
    assert _untouched(home, prefix)


@pytest.mark.network
def test_download_resumes_a_partial_file(tmp_path: Path) -> None:
    deb = next(d for d in load_lock(CPU_LOCK, REGISTRY).platforms["linux-64"].deb
               if d.name == "libquadmath0")
    ref = FileRef(deb.url, deb.sha256, Path(deb.filename).name, deb.size)
    whole = tmp_path / "whole.deb"
    download(ref, whole)
    target = tmp_path / "resumed" / ref.filename
    target.parent.mkdir()
    half = deb.size // 2
    target.with_name(target.name + ".part").write_bytes(whole.read_bytes()[:half])
    fetched: list[int] = []

    download(ref, target, progress=fetched.append)

    assert sum(fetched) == deb.size - half  # only the rest crossed the network
    assert sha256_file(target) == deb.sha256
    assert not target.with_name(target.name + ".part").exists()


@pytest.mark.posix_only(CONDA_CHANNEL)
def test_conda_packages_are_fetched_in_parallel_then_installed_from_the_bundle(
        tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> None:
    """Real conda packages from an HTTP channel: fetched into the cache, carried in a bundle,
    installed with the channel gone, and conda-meta still names the channel's URL."""
    from envforge.host.conda_install import install_conda
    from envforge.resolve.conda import solve_conda
    from tests.testing.conda_channel import serve, shared_channel

    cache = tmp_path / "cache"
    with serve(shared_channel(tmp_path_factory)) as url:
        records = solve_conda(["theano-pymc"], [url], "linux-64", python="3.7",
                              cache_dir=tmp_path / "solve")
        fetched = fetch_all([FileRef(r.url, r.sha256, r.filename, r.size) for r in records],
                            cache=cache, ui=UI(quiet=True), jobs=4)
    assert len(records) > 3 and set(fetched) == {r.sha256 for r in records}

    bundle = tmp_path / "bundle"
    files = []
    for r in records:
        (bundle / "conda").mkdir(parents=True, exist_ok=True)
        shutil.copy(fetched[r.sha256], bundle / "conda" / r.filename)
        files.append(BundleFile(path=f"conda/{r.filename}", source="conda", role="conda",
                                name=r.name, sha256=r.sha256, size=r.size or 0))
    write_manifest(Manifest(envforge="test", spec_name="conda", spec_hash="sha256:x",
                            spec="specs/x.toml", lock="locks/x.lock", lock_sha256="0" * 64,
                            platform="linux-64", python="3.7", files=tuple(files)), bundle)
    local = {r.sha256: obtain(FileRef(r.url, r.sha256, r.filename), cache=tmp_path / "empty",
                              bundle=bundle_lookup(bundle)) for r in records}
    assert all(path.parent == bundle / "conda" for path in local.values())

    prefix = tmp_path / "env"
    install_conda(records, prefix, cache_dir=tmp_path / "empty",
                  fetch=lambda ref: obtain(ref, cache=tmp_path / "empty",
                                           bundle=bundle_lookup(bundle)))
    for r in records:
        meta = json.loads((prefix / "conda-meta" / f"{r.name}-{r.version}-{r.build}.json")
                          .read_text())
        assert (meta["url"], meta["sha256"]) == (r.url, r.sha256)


# -- real bundles, applied with no network ----------------------------------------------------

def _no_network_prefix() -> list[str]:
    """The command prefix that runs a process with no network: a user+net namespace."""
    for prefix in (["unshare", "-rn"], ["unshare", "-n"]):
        done = subprocess.run([*prefix, "true"], capture_output=True, check=False)
        if done.returncode == 0:
            return prefix
    pytest.skip("no network namespace here: `unshare -rn true` failed (and not root)")


def _envforge_python() -> str:
    """The closed GPU host runs envforge on 3.12; fall back to this Python where none is."""
    try:
        return find_interpreter("3.12", environ=dict(os.environ)).minor
    except StepError:
        return f"{sys.version_info.major}.{sys.version_info.minor}"


def run_envforge(args: Sequence[str], *, env: dict[str, str], offline: bool = False,
                 python: Path | None = None) -> subprocess.CompletedProcess[str]:
    command = [str(python or sys.executable), "-m", "envforge", *args]
    if offline:
        command = [*_no_network_prefix(), *command]
    return subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True,
                          check=False, timeout=1200)


def _env(home: Path, **extra: str) -> dict[str, str]:
    return {**os.environ, "ENVFORGE_HOME": str(home), **extra}


def project_copy(root: Path, lock: Path) -> Path:
    """A copy of a lock and its spec, as a user's project holds them."""
    for folder, name in (("specs", f"{lock.stem}.toml"), ("locks", lock.name)):
        (root / folder).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(REPO / folder / name, root / folder / name)
    return root / "locks" / lock.name


@pytest.fixture(scope="module")
def cpu_bundle(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path, dict]]:
    """(bundle, the home whose cache made it, the --json document) for the CPU lock."""
    root = tmp_path_factory.mktemp("cpu-bundle")
    home, bundle = root / "home", root / "bundle"
    lock = project_copy(root / "project", CPU_LOCK)
    done = run_envforge(["bundle", str(lock), "-o", str(bundle), "--with-envforge",
                         "--envforge-python", _envforge_python(), "--json"], env=_env(home))
    assert done.returncode == 0, done.stderr
    yield bundle, home, json.loads(done.stdout)


@pytest.mark.slow
@pytest.mark.network
def test_cpu_bundle_holds_every_locked_file_and_a_built_theano_wheel(
        cpu_bundle: tuple[Path, Path, dict]) -> None:
    bundle, _, document = cpu_bundle
    manifest = read_manifest(bundle)
    assert (manifest.platform, manifest.spec_hash) == ("linux-64",
                                                       load_lock(CPU_LOCK, REGISTRY).meta.spec_hash)
    [built] = [f for f in manifest.files if f.role == "built-wheel"]
    assert built.built_from is not None and built.built_from.pure
    assert built.built_from.filename == "Theano-PyMC-1.0.5.tar.gz"
    assert built.path.endswith("-1.0.5-py3-none-any.whl")
    assert built.built_from.python.startswith("3.7.")  # the exact minor was found
    assert [o.filename for o in manifest.omitted] == ["Theano-PyMC-1.0.5.tar.gz"]
    assert (bundle / manifest.lock).read_bytes() == CPU_LOCK.read_bytes()  # not written to
    assert any(r.startswith("setuptools==") for r in built.built_from.build_requires)
    assert not list(bundle.rglob("*.tar.gz"))
    names = {Path(f.path).name.split("-")[0].lower() for f in manifest.files
             if f.source == "envforge"}
    assert {"envforge", "pydantic", "pydantic_core", "rich", "requests", "installer"} <= names
    assert not names & {"uv", "py_rattler", "numpy"}  # the resolve extra stays home
    assert document["total_bytes"] == manifest.total_size
    assert set(document["sizes"]) == {"pypi", "deb", "envforge"}
    readme = (bundle / "README.md").read_text()
    assert ('python3 -m pip install --no-index --find-links "$BUNDLE/envforge-wheels" envforge'
            in readme)
    for source, info in document["sizes"].items():
        print(f"{source}: {info['files']} files, {info['bytes'] / MiB:.1f} MiB")


@pytest.mark.slow
@pytest.mark.network
def test_cpu_bundle_applies_and_verifies_with_no_network(
        cpu_bundle: tuple[Path, Path, dict], tmp_path: Path, shared_cache: Path) -> None:
    bundle, _, _ = cpu_bundle
    # An empty cache: only the bundle can serve. Theano's compiled modules are the run's
    # (g++'s work, which no bundle carries), so verify compiles only what names the prefix.
    env = _env(home_sharing_modules(tmp_path / "fresh-home", shared_cache))
    prefix = tmp_path / "env"
    probe = subprocess.run([*_no_network_prefix(), sys.executable, "-c",
                            "import socket; socket.create_connection(('pypi.org', 443), 5)"],
                           capture_output=True, text=True, check=False)
    assert probe.returncode != 0  # the namespace really has no network

    spec = str(bundle / "specs" / "theano-cpu.toml")  # the manifest hashes the built wheel
    applied = run_envforge(["apply", spec, "--bundle", str(bundle), "--yes",
                            "--prefix", str(prefix)], env=env, offline=True)
    assert applied.returncode == 0, applied.stderr
    verified = run_envforge(["verify", spec, "--prefix", str(prefix),
                             "--json"], env=env, offline=True)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    installer = prefix / "lib" / "python3.7" / "site-packages" / "six-1.16.0.dist-info"
    assert (installer / "INSTALLER").read_bytes() == b"envforge"  # not uv's


@pytest.mark.slow
@pytest.mark.network
def test_envforge_from_the_bundle_runs_without_uv_and_applies_offline(
        cpu_bundle: tuple[Path, Path, dict], tmp_path: Path, shared_cache: Path) -> None:
    """What the closed host does: install envforge from the bundle's wheels, then apply."""
    bundle, _, _ = cpu_bundle
    manifest = read_manifest(bundle)
    assert manifest.envforge_wheels is not None
    base = find_interpreter(manifest.envforge_wheels.python, environ=dict(os.environ))
    venv = tmp_path / "envforge-venv"
    subprocess.run([str(base.executable), "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    pip = subprocess.run([*_no_network_prefix(), str(python), "-m", "pip", "install", "-q",
                          "--no-index", "--find-links", str(bundle / "envforge-wheels"),
                          "envforge"], capture_output=True, text=True, check=False)
    assert pip.returncode == 0, pip.stderr
    missing = subprocess.run([str(python), "-c", "import uv"], capture_output=True, check=False)
    assert missing.returncode != 0  # no resolver came along

    env = _env(home_sharing_modules(tmp_path / "fresh-home", shared_cache))
    spec = str(bundle / manifest.spec)  # the bundle's own copy: no repository needed
    prefix = tmp_path / "env"
    checked = run_envforge(["bundle", "--check", str(bundle)], env=env, offline=True,
                           python=python)
    assert checked.returncode == 0, checked.stderr
    applied = run_envforge(["apply", spec, "--bundle", str(bundle), "--yes", "--prefix",
                            str(prefix)], env=env, offline=True, python=python)
    assert applied.returncode == 0, applied.stderr
    verified = run_envforge(["verify", spec, "--prefix", str(prefix)], env=env, offline=True,
                            python=python)
    assert verified.returncode == 0, verified.stdout + verified.stderr


@pytest.mark.slow
@pytest.mark.network
def test_a_tampered_bundle_is_refused_before_anything_changes(
        cpu_bundle: tuple[Path, Path, dict], tmp_path: Path) -> None:
    source, _, _ = cpu_bundle
    bundle = tmp_path / "bundle"
    shutil.copytree(source, bundle)
    deb = bundle / "deb" / "libopenblas0-pthread_0.3.21+ds-4_amd64.deb"
    data = bytearray(deb.read_bytes())
    data[len(data) // 2] ^= 0x01
    deb.write_bytes(bytes(data))
    home, prefix = tmp_path / "home", tmp_path / "env"

    checked = run_envforge(["bundle", "--check", str(bundle)], env=_env(home))
    assert checked.returncode == 1
    assert "deb/libopenblas0-pthread_0.3.21+ds-4_amd64.deb: altered" in checked.stderr
    applied = run_envforge(["apply", str(bundle / "specs" / "theano-cpu.toml"), "--bundle",
                            str(bundle), "--yes", "--prefix", str(prefix)], env=_env(home),
                           offline=True)
    assert applied.returncode == 2
    assert "deb/libopenblas0-pthread_0.3.21+ds-4_amd64.deb: altered" in applied.stderr
    assert "nothing was changed" in applied.stderr
    assert _untouched(home, prefix)


@pytest.mark.slow
@pytest.mark.network
def test_offline_apply_uses_the_cache_a_bundle_filled(
        cpu_bundle: tuple[Path, Path, dict], tmp_path: Path) -> None:
    _, home, _ = cpu_bundle
    prefix = tmp_path / "env"
    applied = run_envforge(["apply", "specs/theano-cpu.toml", "--offline", "--yes",
                            "--prefix", str(prefix)], env=_env(home), offline=True)
    assert applied.returncode == 0, applied.stderr
    python = prefix / "bin" / "python"
    done = subprocess.run([str(python), "-c", "import numpy, scipy, six; print(numpy.__version__,"
                           " scipy.__version__, six.__version__)"],
                          capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["1.19.5", "1.7.3", "1.16.0"]
    site = prefix / "lib" / "python3.7" / "site-packages"
    assert (site / "theano" / "__init__.py").is_file()
    assert [p.name.lower() for p in site.glob("*heano*.dist-info")] == [
        "theano_pymc-1.0.5.dist-info"]


@pytest.mark.slow
@pytest.mark.network
def test_gpu_bundle_with_envforge_stays_under_64_mib_and_installs_into_debian_python(
        tmp_path: Path, shared_cache: Path) -> None:
    # made from the run's shared cache (its files are checked by hash as they go in): what
    # is tested is the bundle and its install, not how its files were fetched
    home, bundle = home_sharing(tmp_path / "home", shared_cache), tmp_path / "gpu"
    lock = project_copy(tmp_path / "project", GPU_LOCK)
    done = run_envforge(["bundle", str(lock), "-o", str(bundle), "--with-envforge",
                         "--envforge-python", "3.12", "--json"], env=_env(home))
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    on_disk = sum(p.stat().st_size for p in bundle.rglob("*") if p.is_file())
    for source, info in document["sizes"].items():
        print(f"{source:9} {info['files']:3} files {info['bytes'] / MiB:6.1f} MiB")
    print(f"on disk   {on_disk / MiB:.2f} MiB (manifest, README, spec and lock included)")
    assert on_disk < LIMIT
    manifest = read_manifest(bundle)
    assert manifest.envforge_wheels is not None
    assert "cp312" in " ".join(f.path for f in manifest.files if "pydantic_core" in f.path)
    [built] = [f for f in manifest.files if f.role == "built-wheel"]
    assert built.built_from is not None and built.built_from.pure

    # The PyPI part goes into a venv of Debian's Python 3.9 (system site-packages on),
    # from the bundle, with no uv involved; the CUDA steps need the GPU host.
    script = (
        "import sys; from pathlib import Path\n"
        "from envforge.app.context import prepare\n"
        "from envforge.executor import execute\n"
        "from envforge.steps.debs import DebUnpackStep\n"
        "from envforge.steps.env import EnvironmentStep\n"
        "from envforge.steps.pypi import PypiInstallStep\n"
        "from envforge.ui import UI\n"
        "ctx = prepare(Path(sys.argv[2]) / 'specs/theano-gpu-linux.toml',\n"
        "              prefix=Path(sys.argv[1]),\n"
        "              artifacts={}, bundle=Path(sys.argv[2]), offline=False, ui=UI(),\n"
        "              check_sources=True)\n"
        "print(execute(ctx, [DebUnpackStep(), EnvironmentStep(), PypiInstallStep()],\n"
        "              record={'spec': 'gpu'}))\n")
    prefix = tmp_path / "env"
    steps = subprocess.run([*_no_network_prefix(), sys.executable, "-c", script, str(prefix),
                            str(bundle)], cwd=REPO, env=_env(tmp_path / "fresh-home"),
                           capture_output=True, text=True, check=False)
    assert steps.returncode == 0, steps.stderr
    # Debian's NumPy links libblas.so.3, found through the library path activation sets.
    libs = layout_for("linux-64", "debian", prefix, "3.9").deb_lib_dirs
    check = subprocess.run(
        [str(prefix / "bin" / "python"), "-c",
         "import sys, numpy, scipy, pkg_resources, importlib.metadata as m; "
         "print(sys.version.split()[0], numpy.__version__, scipy.__version__, "
         "m.version('theano-pymc'), numpy.__file__)"],
        env={**os.environ, "LD_LIBRARY_PATH": os.pathsep.join(map(str, libs))},
        capture_output=True, text=True, check=True)
    python, numpy, scipy, theano, numpy_file = check.stdout.split()
    assert (python, numpy, scipy, theano) == ("3.9.2", "1.19.5", "1.6.0", "1.0.5")
    # NumPy is Debian bullseye's (the mission's 1.19.5), seen through the venv.
    assert numpy_file.startswith(str(prefix / "deb" / "usr" / "lib" / "python3" / "dist-packages"))


@pytest.mark.posix_only(reason="FIFOs")
def test_bundle_o_onto_a_fifo_a_file_or_the_locks_own_folder_is_refused_before_reading(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """-o goes through the one output guard: one line naming -o, exit 2, nothing written."""
    lock = project_copy(tmp_path / "project", CPU_LOCK)
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "file").write_text("mine\n")
    untouched = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    for output, says in ((tmp_path / "fifo", "a special file"),
                         (tmp_path / "file", "exists and is not a folder"),
                         (lock.parent, f"overlaps the command's input {lock}")):
        capsys.readouterr()
        assert main(["bundle", str(lock), "-o", str(output)]) == 2
        assert capsys.readouterr().err.startswith(f"error: -o {output}: {says}")
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == untouched
