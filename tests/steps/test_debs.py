"""Debian packages locked with their dependency closure, unpacked with no root and run from
the environment: bookworm's ffmpeg (219 packages, 140 MB, as apt-get --no-install-recommends
installs it on an empty system but the base system's 15), which gym's video recorder runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from envforge.host import noopstamp
from envforge.lockfile import load_lock
from tests.testing.homes import home_sharing
from tests.testing.packs import REGISTRY
from tests.testing.specs import venv_spec_text

SPEC = venv_spec_text("ffmpeg", "packages = []\n") + """
[debian]
suite = "bookworm"
packages = ["ffmpeg"]
dependencies = "closure"
"""


def _envforge(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "envforge", *args], env=env,
                          capture_output=True, text=True, check=False, timeout=600)


@pytest.mark.network
@pytest.mark.slow
def test_ffmpeg_locks_with_its_closure_applies_and_encodes(tmp_path: Path) -> None:
    (tmp_path / "specs").mkdir()
    spec = tmp_path / "specs" / "ffmpeg.toml"
    spec.write_text(SPEC)
    env = {**os.environ}
    prefix = tmp_path / "env"
    locked = _envforge("lock", str(spec), "-q", env=env)
    assert locked.returncode == 0, locked.stderr
    debs = {d.name: d for d in load_lock(tmp_path / "locks" / "ffmpeg.lock", REGISTRY)
            .platforms["linux-64"].deb}
    assert debs["ffmpeg"].required_by is None
    assert debs["libavcodec59"].required_by == "ffmpeg"
    assert debs["libx264-164"].required_by == "libavcodec59"
    assert "libva2" in debs and "libsdl2-2.0-0" in debs
    # the base system is the host's: glibc, libstdc++, zlib, Essential and required packages
    assert not {"libc6", "libstdc++6", "zlib1g", "dpkg", "tzdata", "gcc-12-base"} & set(debs)
    assert len(debs) > 150
    applied = _envforge("apply", str(spec), "--yes", "-q", "--prefix", str(prefix), env=env)
    assert applied.returncode == 0, applied.stderr

    version = _envforge("run", str(spec), "--prefix", str(prefix), "--", "ffmpeg", "-version",
                        env=env)
    assert version.returncode == 0, version.stdout + version.stderr
    assert version.stdout.startswith(f"ffmpeg version {debs['ffmpeg'].version.split(':')[-1]}")
    out = tmp_path / "out.mp4"
    encoded = _envforge("run", str(spec), "--prefix", str(prefix), "--", "ffmpeg",
                        "-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i",
                        "testsrc=duration=1:size=64x64:rate=10", str(out), env=env)
    assert encoded.returncode == 0, encoded.stdout + encoded.stderr
    assert out.stat().st_size > 1000 and out.read_bytes()[4:8] == b"ftyp"
    # every library ffmpeg loads but the base system's comes from the environment
    ldd = _envforge("run", str(spec), "--prefix", str(prefix), "--", "sh", "-c",
                    'ldd "$(command -v ffmpeg)"', env=env)
    assert ldd.returncode == 0 and "not found" not in ldd.stdout, ldd.stdout
    host = {line.split()[0] for line in ldd.stdout.splitlines()
            if "=>" in line and str(prefix) not in line}
    assert host <= {"libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2", "librt.so.1",
                    "libresolv.so.2", "libstdc++.so.6", "libgcc_s.so.1", "libz.so.1",
                    "libbz2.so.1.0", "liblzma.so.5", "libzstd.so.1", "libncursesw.so.6",
                    "libtinfo.so.6", "libpcre2-8.so.0", "libselinux.so.1", "libcrypt.so.1",
                    "libuuid.so.1"}, host


GRAPHVIZ = venv_spec_text("graphviz", 'packages = ["pydot==1.4.2"]\n') + """
[debian]
suite = "bookworm"
packages = ["graphviz"]
dependencies = "closure"
"""


@pytest.mark.network
@pytest.mark.slow
def test_graphviz_gets_the_plugin_configuration_its_maintainer_script_makes(
        tmp_path: Path, shared_cache: Path) -> None:
    """libgvc6's postinst makes Graphviz's plugin list (config6a); envforge runs no maintainer
    script, and unpacked alone `dot -Tsvg` says 'Format: "svg" not recognized' (what
    carpedm20/ENAS-pytorch's trainer and pydot met). Apply plans and runs what the script
    runs (debian.toml's ``[[configure]]`` row), activation sets GVBINDIR, a file removed is
    made again, journaled as made, and rollback leaves nothing."""
    (tmp_path / "specs").mkdir()
    spec = tmp_path / "specs" / "graphviz.toml"
    spec.write_text(GRAPHVIZ)
    home = home_sharing(tmp_path / "envforge-home", shared_cache)
    env, prefix = {**os.environ, "ENVFORGE_HOME": str(home)}, tmp_path / "env"
    assert _envforge("lock", str(spec), "-q", env=env).returncode == 0
    config = prefix / "deb" / "usr" / "lib" / "x86_64-linux-gnu" / "graphviz" / "config6a"
    planned = _envforge("plan", str(spec), "--prefix", str(prefix), "--json", env=env)
    assert planned.returncode == 3, planned.stderr  # changes pending
    assert str(config) in planned.stdout and "libgvc6-config-update -c" in planned.stdout
    applied = _envforge("apply", str(spec), "--yes", "-q", "--prefix", str(prefix), env=env)
    assert applied.returncode == 0, applied.stderr
    assert config.is_file() and "libgvplugin_core.so" in config.read_text()

    svg = _envforge("run", str(spec), "--prefix", str(prefix), "--", "python", "-c",
                    "import pydot; print(pydot.graph_from_dot_data('digraph{a->b}')[0]"
                    ".create_svg().decode())", env=env)
    assert svg.returncode == 0, svg.stdout + svg.stderr
    assert "<svg" in svg.stdout and "a&#45;&gt;b" in svg.stdout

    # past the no-op stamp's racy window, a no-op apply stamps the environment: a file made
    # for a package that then goes missing must still void the stamp
    time.sleep(noopstamp.RACY_NS / 1e9 + 0.1)
    for _ in range(2):
        noop = _envforge("apply", str(spec), "--yes", "--prefix", str(prefix), env=env)
        assert noop.returncode == 0 and "nothing to do" in noop.stderr, noop.stderr
    config.unlink()
    again = _envforge("apply", str(spec), "--yes", "-q", "--prefix", str(prefix), env=env)
    assert again.returncode == 0, again.stderr
    assert config.is_file()
    (journal,) = home.glob("state/**/journal.jsonl")
    records = [json.loads(line) for line in journal.read_text().splitlines()]
    assert {"op": "backup", "path": str(config), "kind": "absent"}.items() <= next(
        r for r in records if r.get("path") == str(config)).items()
    rolled = _envforge("rollback", str(spec), "--prefix", str(prefix), "-q", env=env)
    assert rolled.returncode == 0, rolled.stderr
    assert not prefix.exists()
