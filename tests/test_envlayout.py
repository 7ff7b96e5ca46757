"""The variables an activated environment gets for its unpacked Debian packages."""

from __future__ import annotations

from pathlib import Path

import pytest

from envforge.envlayout import env_edits, layout_for
from envforge.lockfile import load_lock
from tests.testing.packs import REGISTRY

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.posix_only("a linux-64 layout's paths are the host's: Debian packages unpack on "
                        "Linux only")
def test_debian_programs_and_libraries_are_found_after_the_environments_own() -> None:
    lock = load_lock(REPO / "locks" / "theano-cpu.lock", REGISTRY)
    layout = layout_for("linux-64", "venv", "/env", "3.7")
    edits = {e.name: e.value for e in env_edits(layout, lock.platforms["linux-64"])}
    assert edits["PATH"].split(":") == ["/env/bin", "/env/deb/usr/bin", "/env/deb/bin"]
    libs = edits["LD_LIBRARY_PATH"].split(":")
    multiarch = "/env/deb/usr/lib/x86_64-linux-gnu"
    # OpenBLAS's libblas.so.3 before the reference BLAS's alternative folder
    assert libs.index(f"{multiarch}/openblas-pthread") < libs.index(f"{multiarch}/blas")
    assert "/env/deb/lib/x86_64-linux-gnu" in libs  # libcap2, libexpat1: still in /lib
    without = lock.platforms["linux-64"].model_copy(update={"deb": ()})
    edits = {e.name: e.value for e in env_edits(layout, without)}
    assert edits["PATH"] == "/env/bin" and "deb" not in edits["LD_LIBRARY_PATH"]
