"""The spec's build constraints shape every build of a locked sdist: apply online, bundle.

Real packages, real builds: a build dependency at 1.0 and 2.0 in a find-links folder, and a
local sdist whose ``setup.py`` imports it and writes the version it saw into its own metadata.
Unconstrained, the build takes 2.0; with ``build_constraints = ["…==1.0"]`` the wheel that
apply installs and the wheel a bundle carries say 1.0, the lock records the build table, and
the bundle's manifest records the build environment beside the built wheel's sha256.
"""

from __future__ import annotations

import json
import subprocess
import zipfile
from pathlib import Path

import pytest

from envforge.bundle.manifest import read_manifest
from envforge.bundle.wheels import build_environment
from envforge.cli import main
from envforge.lockfile import load_lock
from envforge.paths import envforge_dirs
from tests.testing.localindex import write_tar
from tests.testing.packs import REGISTRY
from tests.testing.specs import venv_spec_text

DEP = "envforge-builddep-fixture"
CONSUMER = "envforge-consumer-fixture"
CONSUMER_SETUP = f"""\
import envforge_builddep_fixture as dep
from setuptools import setup
setup(name="{CONSUMER}", version="0.1", py_modules=["envforge_consumer_fixture"],
      description="built with builddep " + dep.VERSION)
"""
PYPROJECT = f"""\
[build-system]
requires = ["setuptools", "{DEP}"]
build-backend = "setuptools.build_meta"
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, Path]:
    """(root, find-links folder with the dependency's two wheels, the consumer's sdist)."""
    from envforge.host.uv import uv_binary

    monkeypatch.setenv("ENVFORGE_HOME", str(tmp_path / "envforge-home"))
    links = tmp_path / "links"
    for version in ("1.0", "2.0"):
        source = tmp_path / f"dep-{version}"
        source.mkdir()
        (source / "setup.py").write_text(
            f'from setuptools import setup\nsetup(name="{DEP}", version="{version}", '
            'py_modules=["envforge_builddep_fixture"])\n')
        (source / "envforge_builddep_fixture.py").write_text(f'VERSION = "{version}"\n')
        subprocess.run([uv_binary(), "build", "--wheel", "-q", "--no-config", "-o", str(links),
                        str(source)], check=True)
    top = "envforge_consumer_fixture-0.1"
    sdist = tmp_path / f"{top}.tar.gz"
    write_tar(sdist, top, {"setup.py": CONSUMER_SETUP, "pyproject.toml": PYPROJECT,
                      "envforge_consumer_fixture.py": "X = 1\n",
                      "PKG-INFO": f"Metadata-Version: 2.1\nName: {CONSUMER}\nVersion: 0.1\n"})
    (tmp_path / "specs").mkdir()
    return tmp_path, links, sdist


def _spec(root: Path, links: Path, sdist: Path, name: str, extra: str = "") -> Path:
    path = root / "specs" / f"{name}.toml"
    path.write_text(venv_spec_text(name, f'packages = ["{CONSUMER} @ {sdist.as_uri()}"]\n'
                                         f'find_links = ["{links}"]\n{extra}'))
    return path


def _summary(wheel_or_site: Path) -> str:
    if wheel_or_site.suffix == ".whl":
        with zipfile.ZipFile(wheel_or_site) as zf:
            [meta] = [n for n in zf.namelist() if n.endswith(".dist-info/METADATA")]
            text = zf.read(meta).decode()
    else:
        [meta] = wheel_or_site.glob("lib/python3.7/site-packages/envforge_consumer_fixture-"
                                    "0.1.dist-info/METADATA")
        text = meta.read_text()
    return next(line for line in text.splitlines() if line.startswith("Summary:"))


@pytest.mark.network
@pytest.mark.slow
def test_build_constraints_shape_apply_and_bundle_builds(
        project: tuple[Path, Path, Path]) -> None:
    root, links, sdist = project
    free = _spec(root, links, sdist, "free")
    assert main(["lock", str(free), "-q"]) == 0
    assert main(["apply", str(free), "--yes", "--prefix", str(root / "free-env"), "-q"]) == 0
    assert _summary(root / "free-env") == "Summary: built with builddep 2.0"  # the control

    pinned = _spec(root, links, sdist, "pinned", extra=f'build_constraints = ["{DEP}==1.0"]\n')
    assert main(["lock", str(pinned), "-q"]) == 0
    lock_path = root / "locks" / "pinned.lock"
    plock = load_lock(lock_path, REGISTRY).platforms["linux-64"]
    assert plock.build is not None and plock.build.constraints == (f"{DEP}==1.0",)
    assert plock.build.find_links == (str(links),)
    # The same sdist, built again under the constraint: the cache's unconstrained wheel is
    # not reused.
    assert main(["apply", str(pinned), "--yes", "--prefix", str(root / "env"), "-q"]) == 0
    assert _summary(root / "env") == "Summary: built with builddep 1.0"
    records = [json.loads(r.read_text())
               for r in (envforge_dirs().cache / "built").glob("*/*/built.json")]
    # One sdist, two build environments: two cache entries, each with what its build held.
    assert sorted(next(p for p in r["build_requires"] if p.startswith(DEP))
                  for r in records) == [f"{DEP}==1.0", f"{DEP}==2.0"]

    bundle = root / "bundle"
    before = lock_path.read_bytes()
    assert main(["bundle", str(lock_path), "-o", str(bundle), "-q"]) == 0
    assert lock_path.read_bytes() == before  # the lock is not the cache
    [wheel] = (bundle / "pypi").glob("envforge_consumer_fixture-*.whl")
    assert _summary(wheel) == "Summary: built with builddep 1.0"
    [carried] = [f for f in read_manifest(bundle).files if f.built_from is not None]
    assert carried.built_from is not None
    assert f"{DEP}==1.0" in carried.built_from.build_requires
    assert any(r.startswith("setuptools==") for r in carried.built_from.build_requires)


@pytest.mark.network
def test_an_edited_build_constraint_is_refused(project: tuple[Path, Path, Path],
                                               capsys: pytest.CaptureFixture[str]) -> None:
    root, links, sdist = project
    pinned = _spec(root, links, sdist, "pinned", extra=f'build_constraints = ["{DEP}==1.0"]\n')
    assert main(["lock", str(pinned), "-q"]) == 0
    lock_path = root / "locks" / "pinned.lock"
    text = lock_path.read_text()
    lock_path.write_text(text.replace(f'"{DEP}==1.0"', f'"{DEP}==2.0"', 1))
    capsys.readouterr()
    assert main(["plan", str(pinned)]) == 2
    err = capsys.readouterr().err
    assert f"{lock_path}:" in err and "platforms.linux-64.build.constraints" in err


def test_uv_s_log_gives_the_whole_build_environment() -> None:
    log = ("DEBUG Installing `b==1.0`, `setuptools==68.0.0` in `/tmp/x`\n"
           "DEBUG Installing build requirements: b==1.0, setuptools==68.0.0\n"
           "DEBUG Installing `setuptools==68.0.0`, `b==1.0`, `wheel==0.42.0` in `/tmp/x`\n")
    assert build_environment(log) == ("b==1.0", "setuptools==68.0.0", "wheel==0.42.0")
