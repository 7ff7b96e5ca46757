"""The fleet's bundle: made once per session, shared by the fleet and the image tests."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.testing import fleet

SPEC = "theano-cpu-debian"
REPO = fleet.REPO


@pytest.fixture(scope="session")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The spec's bundle with envforge's own wheels for the hosts' Python (3.11)."""
    work = tmp_path_factory.mktemp("fleet")
    out = work / "bundle"
    home = tmp_path_factory.mktemp("home")
    # Bundling records the built Theano wheel's sha256 in the lock it is given: a copy.
    for folder, name in (("specs", f"{SPEC}.toml"), ("locks", f"{SPEC}.lock")):
        (work / folder).mkdir()
        shutil.copy2(REPO / folder / name, work / folder / name)
    done = subprocess.run(
        [str(Path(shutil.which("envforge") or REPO / ".venv" / "bin" / "envforge")), "bundle",
         str(work / "locks" / f"{SPEC}.lock"), "-o", str(out), "--with-envforge",
         "--envforge-python", "3.11", "--quiet"],
        env={**fleet.environ(), "ENVFORGE_HOME": str(home)}, capture_output=True, text=True,
        check=False)
    assert done.returncode == 0, done.stderr
    return out
