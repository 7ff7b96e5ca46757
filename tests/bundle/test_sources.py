"""Locked sdists with C code, from their real PyPI archives (issue 25): built before apply's
first change, in the build environment the lock pins, with a line each on stderr; installed
online, from a fresh home, and offline from a bundle; and a build that fails changes nothing.

PyYAML 5.3 and MarkupSafe 0.23 (``no_binary``: the lock holds their sdists) build C
extensions, so no file of their wheels is a file of the sdist. cymem 2.0.6's sdist holds only
``.pyx`` sources: it cannot build without Cython, which its ``build_constraints`` pin.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import tarfile
import threading
from pathlib import Path
from typing import Any

import pytest

import envforge.bundle.sources as sources
from envforge.bundle.manifest import read_manifest
from envforge.cli import main
from envforge.host.fetch import FileRef
from tests.testing.specs import venv_spec_text

pytestmark = [pytest.mark.slow, pytest.mark.network]

COMPILED = 'packages = ["PyYAML==5.3", "MarkupSafe==0.23"]\nno_binary = ["PyYAML", "MarkupSafe"]\n'
IMPORTS = "import yaml, markupsafe._speedups; print(yaml.__version__, yaml.CLoader.__name__)"


def envforge(*args: str, home: Path, offline: bool = False) -> subprocess.CompletedProcess[str]:
    """The real CLI in its own process; ``offline``: in a namespace with no network."""
    command = [sys.executable, "-m", "envforge", *args]
    if offline:
        from tests.test_bundle import _no_network_prefix

        command = [*_no_network_prefix(), *command]
    return subprocess.run(command, env={**os.environ, "ENVFORGE_HOME": str(home)},
                          capture_output=True, text=True, check=False, timeout=900)


def project(root: Path, name: str, pypi: str) -> Path:
    """``root/specs/NAME.toml`` locked into ``root/locks/NAME.lock``."""
    spec = root / "specs" / f"{name}.toml"
    spec.parent.mkdir(parents=True, exist_ok=True)
    spec.write_text(venv_spec_text(name, pypi))
    locked = envforge("lock", str(spec), "-q", home=root / "lock-home")
    assert locked.returncode == 0, locked.stderr
    return spec


def imports(prefix: Path, code: str) -> str:
    done = subprocess.run([str(prefix / "bin" / "python"), "-c", code], capture_output=True,
                          text=True, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return project(tmp_path_factory.mktemp("compiled"), "compiled", COMPILED)


def test_compiled_sdists_build_first_and_their_extensions_import(compiled: Path,
                                                                 tmp_path: Path) -> None:
    """In a fresh home, before the first change; then a re-lock of an edited spec keeps them."""
    home = tmp_path / "fresh-home"  # no cache: every wheel is built here
    applied = envforge("apply", str(compiled), "--yes", "--prefix", str(tmp_path / "env"),
                       home=home)
    assert applied.returncode == 0, applied.stderr
    lines = applied.stderr.splitlines()
    built = [n for n, line in enumerate(lines) if line.startswith("building ")]
    assert sorted(lines[n] for n in built) == [  # side by side, as each sdist lands
        "building MarkupSafe 0.23 from source…", "building PyYAML 5.3 from source…"]
    assert max(built) < lines.index("• prefix")  # before the first change
    assert imports(tmp_path / "env", IMPORTS) == "5.3 CLoader"
    # An edited spec, locked again: the same sdists, the same pinned build environment, so
    # the host's cache serves both (the lock never held their wheels).
    edited = compiled.with_name("edited.toml")
    edited.write_text(compiled.read_text().replace('"MarkupSafe==0.23"]',
                                                   '"MarkupSafe==0.23", "six==1.16.0"]', 1))
    assert "six==1.16.0" in edited.read_text()
    assert envforge("lock", str(edited), "-q", home=home).returncode == 0
    again = envforge("apply", str(edited), "--yes", "--prefix", str(tmp_path / "env2"),
                     home=home)
    assert again.returncode == 0, again.stderr
    assert "building" not in again.stderr
    assert imports(tmp_path / "env2", IMPORTS) == "5.3 CLoader"


def test_a_bundle_applies_offline_in_a_fresh_home(compiled: Path, tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    made = envforge("bundle", str(compiled.parent.parent / "locks" / "compiled.lock"), "-o",
                    str(bundle), home=tmp_path / "home")
    assert made.returncode == 0, made.stderr
    carried = {f.name: f for f in read_manifest(bundle).files if f.built_from is not None}
    assert sorted(carried) == ["markupsafe", "pyyaml"]
    assert all(not f.built_from.pure for f in carried.values() if f.built_from)
    spec = bundle / "specs" / "compiled.toml"
    applied = envforge("apply", str(spec), "--bundle", str(bundle), "--yes", "--prefix",
                       str(tmp_path / "env"), home=tmp_path / "closed-home", offline=True)
    assert applied.returncode == 0, applied.stderr
    assert "building" not in applied.stderr
    assert imports(tmp_path / "env", IMPORTS) == "5.3 CLoader"


def test_a_build_requirement_comes_from_the_locks_pins(tmp_path: Path) -> None:
    spec = project(tmp_path, "cy", 'packages = ["cymem==2.0.6"]\nno_binary = ["cymem"]\n'
                                   'build_constraints = ["cython==0.29.36"]\n')
    home = tmp_path / "home"
    applied = envforge("apply", str(spec), "--yes", "--prefix", str(tmp_path / "env"), home=home)
    assert applied.returncode == 0, applied.stderr
    assert "building cymem 2.0.6 from source…" in applied.stderr
    assert imports(tmp_path / "env", "import cymem.cymem; print(cymem.cymem.Pool.__name__)") \
        == "Pool"
    [record] = (home / "cache" / "built").glob("*/*/built.json")
    assert "cython==0.29.36" in json.loads(record.read_text())["build_requires"]


def test_the_build_python_is_searched_for_while_the_sdist_downloads(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each candidate Python runs once to say what it is (a tenth of a second cold): that
    search has begun before the sdist is fetched, so the build starts once it lands."""
    spec = project(tmp_path, "six", 'packages = ["six==1.16.0"]\nno_binary = ["six"]\n')
    searching = threading.Event()
    began: list[bool] = []
    search, fetch = sources.build_interpreter, sources.obtain

    def build_interpreter(*args: Any, **kwargs: Any) -> Any:
        searching.set()
        return search(*args, **kwargs)

    def obtain(ref: FileRef, **kwargs: Any) -> Path:
        if ref.filename.endswith(".tar.gz"):
            began.append(searching.wait(timeout=30))
        return fetch(ref, **kwargs)

    monkeypatch.setattr(sources, "build_interpreter", build_interpreter)
    monkeypatch.setattr(sources, "obtain", obtain)
    monkeypatch.setenv("ENVFORGE_HOME", str(tmp_path / "home"))
    assert main(["apply", str(spec), "--yes", "--quiet", "--prefix", str(tmp_path / "env")]) == 0
    assert began and all(began)  # every sdist the lock holds
    assert imports(tmp_path / "env", "import six; print(six.__version__)") == "1.16.0"


BROKEN_SETUP = """\
from setuptools import Extension, setup
setup(name="envforge-broken-fixture", version="0.1",
      ext_modules=[Extension("envforge_broken_fixture", ["broken.c"])])
"""


def test_a_failing_build_changes_nothing(tmp_path: Path) -> None:
    sdist = tmp_path / "envforge_broken_fixture-0.1.tar.gz"
    with tarfile.open(sdist, "w:gz") as tar:
        for name, text in (("setup.py", BROKEN_SETUP),
                           ("broken.c", "#error this sdist does not compile\n"),
                           ("PKG-INFO", "Metadata-Version: 2.1\nName: envforge-broken-fixture\n"
                                        "Version: 0.1\n")):
            info = tarfile.TarInfo(f"envforge_broken_fixture-0.1/{name}")
            info.size = len(text.encode())
            tar.addfile(info, io.BytesIO(text.encode()))
    spec = project(tmp_path, "broken", f'packages = ["six==1.16.0", '
                                       f'"envforge-broken-fixture @ {sdist.as_uri()}"]\n')
    home, prefix = tmp_path / "home", tmp_path / "env"
    applied = envforge("apply", str(spec), "--yes", "--prefix", str(prefix), home=home)
    assert applied.returncode == 1
    lines = applied.stderr.splitlines()
    building = lines.index("building envforge_broken_fixture 0.1 from source…")
    failed = next(line for line in lines[building:] if line.startswith("error:"))  # downloads
    assert re.fullmatch(r"error: building envforge_broken_fixture 0\.1 from source failed "
                        r"\(.+ exited \d+\); nothing was changed", failed), failed
    assert "#error this sdist does not compile" in applied.stderr  # the build's own words
    assert not prefix.exists()
    assert not (home / "state").exists() or not any((home / "state").rglob("*"))
    assert not list((home / "cache" / "built").rglob("*.whl"))
