"""A bundle made ``--with-envforge`` applies with only its own envforge, and ``--check`` runs it.

Found on a closed host: ``[keras]`` specs crashed at apply with "No module named 'numpy'"
(the lock check recomputed Keras's trained-model reference with NumPy, which is envforge's
``resolve`` extra, not a bundle's envforge) while ``bundle --check`` passed. Here, for real:
each Keras spec's bundle (PyPI, Debian and envforge's wheels), a fresh Python 3.11 venv
holding only the bundle's envforge wheels (and no NumPy), an apply with no network and an
empty home, Keras imported through ``envforge run``, then verify from that envforge. A
bundle whose envforge reaches for NumPy when reading its lock is refused by ``bundle
--check``; where the check cannot run that envforge (no wheels, another platform, no such
Python) it says why.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from envforge.bundle.manifest import EnvforgeWheels, Manifest, read_manifest, write_manifest
from envforge.bundle.selfcheck import check_own_envforge
from envforge.host.archives import sha256_file
from envforge.platforms import host_platform
from tests.test_bundle import _env, _no_network_prefix, project_copy, run_envforge
from tests.testing.homes import home_sharing, home_sharing_modules
from tests.testing.packs import REGISTRY

REPO = Path(__file__).resolve().parents[2]
SPECS = ("keras-theano-cpu", "tf1-keras-cpu")
PYTHON = f"{sys.version_info.major}.{sys.version_info.minor}"  # the venv's: 3.11 here


def _bundle(root: Path, name: str, cache: Path) -> Path:
    """The spec's bundle, made from the run's shared cache (its files are checked by hash
    as they go in; what is tested is the bundle, not how its files were fetched)."""
    bundle = root / "bundle"
    lock = project_copy(root / "project", REPO / "locks" / f"{name}.lock")
    done = run_envforge(["bundle", str(lock), "-o", str(bundle), "--with-envforge",
                         "--envforge-python", PYTHON], env=_env(home_sharing(root / "home", cache)))
    assert done.returncode == 0, done.stderr
    return bundle


@pytest.fixture(scope="module", params=SPECS)
def bundle(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
           shared_cache: Path) -> Iterator[tuple[str, Path]]:
    name: str = request.param
    yield name, _bundle(tmp_path_factory.mktemp(name), name, shared_cache)


def _closed_host(root: Path, shared_cache: Path) -> dict[str, str]:
    """An empty home and cache, but for Theano's compiled modules: the run's store (g++'s
    work, which no bundle carries); pyenv's Python 3.7 is the host's one Python 3.7."""
    home = root / "home"
    home.mkdir()
    home_sharing_modules(home / "ef", shared_cache)
    return {"PATH": os.environ["PATH"], "HOME": str(home), "ENVFORGE_HOME": str(home / "ef"),
            "PYENV_ROOT": os.environ.get("PYENV_ROOT", str(Path.home() / ".pyenv"))}


@pytest.mark.slow
@pytest.mark.network
@pytest.mark.posix_only("applies the Linux Python 3.7 from pyenv")
def test_bundles_own_envforge_without_numpy_applies_it_offline(
        bundle: tuple[str, Path], tmp_path: Path, shared_cache: Path) -> None:
    name, folder = bundle
    checked = run_envforge(["bundle", "--check", str(folder)], env=_env(tmp_path / "checker"))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "its own envforge reads the spec and lock" in checked.stdout + checked.stderr

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python, envforge = venv / "bin" / "python", venv / "bin" / "envforge"
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-index", "--find-links",
                    str(folder / "envforge-wheels"), "envforge"], check=True)
    no_numpy = subprocess.run([str(python), "-c", "import numpy"], capture_output=True,
                              text=True, check=False)
    assert no_numpy.returncode != 0 and "No module named 'numpy'" in no_numpy.stderr

    env = _closed_host(tmp_path, shared_cache)
    spec = folder / "specs" / f"{name}.toml"
    applied = subprocess.run([*_no_network_prefix(), str(envforge), "apply", str(spec),
                              "--bundle", str(folder), "--offline", "--yes"], env=env,
                             capture_output=True, text=True, check=False, timeout=1200)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    keras = subprocess.run([*_no_network_prefix(), str(envforge), "run", str(spec), "--",
                            "python", "-c", "import keras; print(keras.__version__)"],
                           env=env, capture_output=True, text=True, check=False, timeout=600)
    assert keras.returncode == 0, keras.stderr
    assert keras.stdout.split()[-1] == "2.3.1"
    # verify, from the same envforge, compares the probe with the lock's references as read
    verified = subprocess.run([*_no_network_prefix(), str(envforge), "verify", str(spec),
                               "--json"], env=env, capture_output=True, text=True,
                              check=False, timeout=1200)
    assert verified.returncode == 0, verified.stdout[-4000:] + verified.stderr
    rows = {row["name"]: row["status"] for row in json.loads(verified.stdout)["rows"]}
    assert rows["keras.train.checksum"] == rows["keras.train.samples"] == "pass"


@pytest.mark.slow
@pytest.mark.network
@pytest.mark.posix_only("rewrites a Linux bundle's envforge wheel")
def test_check_refuses_a_bundle_whose_envforge_reaches_for_numpy(
        bundle: tuple[str, Path], tmp_path: Path) -> None:
    """The bundle's envforge wheel rewritten (and its manifest with it) so that reading a
    lock imports NumPy, as the envforge of the closed host's report did: every file matches
    the manifest, and --check still says it cannot apply, naming NumPy."""
    name, folder = bundle
    if name != SPECS[0]:
        pytest.skip("one bundle shows it")
    copy = tmp_path / "bundle"
    shutil.copytree(folder, copy, copy_function=os.link)
    manifest = read_manifest(copy)
    [own] = [f for f in manifest.files if f.source == "envforge" and f.role == "envforge"]
    wheel = copy / own.path
    original = io.BytesIO(wheel.read_bytes())
    wheel.unlink()  # a link to the first bundle's file: write a new one
    with zipfile.ZipFile(original) as src, zipfile.ZipFile(wheel, "w") as out:
        for item in src.infolist():
            data = src.read(item)
            if item.filename == "envforge/lockcheck.py":
                future = b"from __future__ import annotations\n"
                data = data.replace(future, future + b"import numpy\n", 1)
            out.writestr(item, data)
    files = tuple(f.model_copy(update={"sha256": sha256_file(wheel),
                                       "size": wheel.stat().st_size}) if f is own else f
                  for f in manifest.files)
    write_manifest(manifest.model_copy(update={"files": files}), copy)

    checked = run_envforge(["bundle", "--check", str(copy)], env=_env(tmp_path / "checker"))
    assert checked.returncode == 1, checked.stdout
    assert f"its own envforge (Python {PYTHON}, envforge-wheels/) cannot apply it" in (
        checked.stderr)
    assert "No module named 'numpy'" in checked.stderr


WHEELS = EnvforgeWheels(python="3.11", platform="x86_64-manylinux_2_17", folder="envforge-wheels",
                        install="python3 -m pip install ...")
OTHER = "win-64" if host_platform().name != "win-64" else "linux-64"


@pytest.mark.parametrize(("update", "says"), [
    ({"envforge_wheels": None}, "made without --with-envforge"),
    ({"platform": OTHER}, f"wheels are for {OTHER}, this host is not"),
    ({"envforge_wheels": WHEELS.model_copy(update={"python": "3.99"})}, "no Python 3.99 here"),
])
def test_check_says_why_it_did_not_run_the_bundles_envforge(
        tmp_path: Path, update: dict[str, object], says: str) -> None:
    manifest = Manifest(envforge="0.1.0", spec_name="x", spec_hash="sha256:" + "a" * 64,
                        spec="specs/x.toml", lock="locks/x.lock", lock_sha256="b" * 64,
                        platform=host_platform().name, python="3.7.16", files=(),
                        envforge_wheels=WHEELS).model_copy(update=update)
    problems, why = check_own_envforge(tmp_path, manifest, REGISTRY)
    assert problems == [] and why is not None and says in why
