"""A pack shipped as its own distribution (tests/packs/thirdparty/envforge_six: its own
pyproject.toml and ``envforge.packs`` entry point), built and installed with envforge from
this tree into a venv of their own, goes init -> spec -> lock -> apply -> verify -> doctor
through that venv's ``envforge`` command: real uv, the real Python 3.7, six 1.12.0 from
PyPI, no file of envforge/ edited and nothing patched."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
PACK = Path(__file__).resolve().parent / "thirdparty" / "envforge_six"
SPEC = """\
# six 1.12.0 (of 2019) on Python 3.7, judged by the envforge-six pack.
[project]
name = "six-moves"
platforms = ["linux-64"]

[python]
version = "3.7"

[environment]
kind = "venv"

[pypi]
packages = ["six==1.12.0"]

[six]
moves = ["urllib.parse", "queue"]

[verify]
kernels = []
"""

pytestmark = [pytest.mark.slow, pytest.mark.network,
              pytest.mark.posix_only("applies the Linux Python 3.7 from pyenv")]


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """envforge (this tree, with its resolve extra) and envforge-six, installed side by side
    as a user would: neither editable, the pack found only through its entry point."""
    folder = tmp_path_factory.mktemp("venv") / "venv"
    # Both built from copies: setuptools leaves build/ in the source folder, whose stale
    # files a later build would package.
    pack = shutil.copytree(PACK, folder.parent / "envforge_six")
    source = folder.parent / "envforge"
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z", "--",
                             "pyproject.toml", "README.md", "envforge"], cwd=REPO, check=True,
                            capture_output=True, text=True).stdout
    for name in filter(None, listed.split("\0")):
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, source / name)
    uv = shutil.which("uv", path=str(Path(sys.executable).parent)) or "uv"
    subprocess.run([uv, "venv", "-q", "--python", sys.executable, str(folder)], check=True)
    subprocess.run([uv, "pip", "install", "-q", "--python", str(folder / "bin" / "python"),
                    f"{source}[resolve]", str(pack)], check=True, capture_output=True)
    return folder


def _envforge(venv: Path, home: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(home), "ENVFORGE_HOME": str(home / "envforge"),
           "PYENV_ROOT": os.environ.get("PYENV_ROOT", str(Path.home() / ".pyenv"))}
    env.pop("VIRTUAL_ENV", None)
    return subprocess.run([str(venv / "bin" / "envforge"), *args], cwd=cwd, env=env,
                          capture_output=True, text=True, check=False)


def _json(done: subprocess.CompletedProcess[str]) -> Any:
    return json.loads(done.stdout)


def test_the_pack_is_installed_apart_from_envforge(venv: Path) -> None:
    done = subprocess.run([str(venv / "bin" / "python"), "-c",
                           "import envforge, envforge_six; print(envforge.__file__); "
                           "print(envforge_six.__file__)"],
                          capture_output=True, text=True, check=True, cwd=venv)
    for line in done.stdout.splitlines():
        assert line.startswith(str(venv)), line  # installed copies, not this tree


def test_init_mounts_the_packs_section(venv: Path, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "requirements.txt").write_text("six==1.12.0\n", encoding="utf-8")
    done = _envforge(venv, tmp_path, "init", str(repo), "-o", str(tmp_path / "six.toml"),
                     cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    text = (tmp_path / "six.toml").read_text(encoding="utf-8")
    assert "\n[six]\n# the requirements name six" in text
    assert "(the six pack)" in text


def test_spec_lock_apply_verify_doctor(venv: Path, tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "specs").mkdir(parents=True)
    spec = project / "specs" / "six-moves.toml"
    spec.write_text(SPEC, encoding="utf-8")
    prefix = tmp_path / "prefix"

    done = _envforge(venv, tmp_path, "lock", str(spec), cwd=project)
    assert done.returncode == 0, done.stderr
    lock = (project / "locks" / "six-moves.lock").read_text(encoding="utf-8")
    assert '[platforms.linux-64.expect.six]\nmoves = [\n    "urllib.parse",\n' in lock
    assert _envforge(venv, tmp_path, "lock", "--check", str(spec), cwd=project).returncode == 0

    bad = project / "specs" / "bad.toml"
    bad.write_text(SPEC.replace("moves =", "movse ="), encoding="utf-8")
    done = _envforge(venv, tmp_path, "lock", str(bad), cwd=project)
    assert done.returncode == 2
    assert "bad.toml:16: six.movse" in done.stderr

    done = _envforge(venv, tmp_path, "apply", str(spec), "--yes", "--prefix", str(prefix),
                     cwd=project)
    assert done.returncode == 0, done.stderr

    done = _envforge(venv, tmp_path, "verify", str(spec), "--prefix", str(prefix), "--json",
                     cwd=project)
    rows = {row["name"]: row["status"] for row in _json(done)["rows"]}
    assert done.returncode == 0, rows
    assert rows["version.six"] == rows["six.moves.urllib.parse"] == "pass"
    assert rows["six.moves.queue"] == rows["six.release"] == "pass"

    done = _envforge(venv, tmp_path, "doctor", str(spec), "--prefix", str(prefix), "--json",
                     cwd=project)
    findings = {(f["id"], f["title"]) for f in _json(done)["findings"]}
    assert done.returncode == 0, findings
    assert ("six.moves", "six 1.12.0 has no six.moves.collections_abc (added in 1.13.0)") \
        in findings
