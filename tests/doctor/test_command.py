"""``envforge doctor`` as a user runs it: a real process, a real home, real exit codes."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.doctor.layouts import gxx

REPO = Path(__file__).resolve().parents[2]
BLOG = "[global]\nfloatX = float32\ndevice = gpu\n\n[lib]\ncnmem = 0.8\n\n[dnn]\nenabled = true\n"


def _world(tmp_path: Path, theanorc: str | None = None) -> dict[str, str]:
    profile = tmp_path / "home"
    profile.mkdir()
    if theanorc is not None:
        (profile / ".theanorc").write_text(theanorc)
    gxx(tmp_path / "bin")
    # not tmp/envforge: `python -m envforge` run in tmp would import that folder instead
    return {"HOME": str(profile), "ENVFORGE_HOME": str(tmp_path / "ef-home"),
            "PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin", "SECRET_TOKEN": "hunter2"}


def doctor(env: dict[str, str], *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "envforge", "doctor", *args], env=env,
                          cwd=cwd, capture_output=True, text=True, timeout=120, check=False,
                          stdin=subprocess.DEVNULL)


def _json(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(done.stdout)
    return data


def test_findings_as_json_and_the_exit_code(tmp_path: Path) -> None:
    env = _world(tmp_path, BLOG)
    done = doctor(env, "--json", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    data = _json(done)
    assert data["kind"] == "doctor" and data["schema"] == 2
    found = {f["id"] for f in data["findings"]}
    assert {"config.invalid-value", "config.blog-form"} <= found
    assert data["errors"] == sum(f["severity"] == "error" for f in data["findings"])
    assert "SECRET_TOKEN" not in json.dumps(data["facts"])
    assert data["facts"]["gpu_frameworks"] == ["theano"]  # device = gpu: the GPU is wanted
    (Path(env["HOME"]) / ".theanorc").write_text("[global]\nfloatX = float32\n")
    assert doctor(env, cwd=tmp_path).returncode == 0


@pytest.mark.posix_only("observes a linux-64 host: its '/'-joined paths, ':' lists and sh fixes")
def test_fix_dry_run_yes_and_undo(tmp_path: Path) -> None:
    env = _world(tmp_path, BLOG)
    rc = Path(env["HOME"]) / ".theanorc"
    original = rc.read_bytes()

    dry = doctor(env, "--fix", "--dry-run", cwd=tmp_path)
    assert dry.returncode == 3, dry.stderr
    assert "-device = gpu\n+device = cuda\n" in dry.stderr  # the plan's diff
    assert rc.read_bytes() == original

    unasked = doctor(env, "--fix", cwd=tmp_path)  # no terminal to confirm on
    assert unasked.returncode == 3 and "pass --yes" in unasked.stderr
    assert rc.read_bytes() == original

    fixed = doctor(env, "--fix", "--yes", "--json", cwd=tmp_path)
    data = _json(fixed)
    assert data["fixed"] == [f"doctor: {rc}"]
    assert not [f for f in data["findings"] if f["fix"] and f["fix"]["actions"]]
    assert "device = cuda\n" in rc.read_text() and "preallocate = 0.8" in rc.read_text()

    undone = doctor(env, "--undo", cwd=tmp_path)
    assert undone.returncode == 0, undone.stderr
    assert rc.read_bytes() == original


def test_report_file(tmp_path: Path) -> None:
    env = _world(tmp_path, BLOG)
    doctor(env, "--report", "doctor.md", cwd=tmp_path)
    text = (tmp_path / "doctor.md").read_text(encoding="utf-8")
    assert text.startswith("# envforge doctor") and "`config.blog-form`" in text


def test_with_a_spec_and_its_lock(tmp_path: Path) -> None:
    (tmp_path / "specs").mkdir()
    (tmp_path / "locks").mkdir()
    shutil.copy(REPO / "specs" / "theano-cpu.toml", tmp_path / "specs")
    shutil.copy(REPO / "locks" / "theano-cpu.lock", tmp_path / "locks")
    env = _world(tmp_path)
    done = doctor(env, "specs/theano-cpu.toml", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    data = _json(done)
    not_applied = [f for f in data["findings"] if f["id"] == "env.not-applied"]
    assert len(not_applied) == 1
    assert data["facts"]["gpu_frameworks"] == []  # device = cpu
    assert not_applied[0]["fix"]["text"] == f"envforge apply {Path('specs/theano-cpu.toml')}"
    assert data["facts"]["env"]["prefix"] == str(
        Path(env["ENVFORGE_HOME"]) / "data" / "envs" / "theano-cpu")


def test_an_environment_given_by_prefix(tmp_path: Path) -> None:
    from tests.doctor.layouts import venv

    prefix = venv(tmp_path / "old-env", {"Theano-PyMC": "1.0.5", "numpy": "1.24.4"})
    env = _world(tmp_path)
    done = doctor(env, "--prefix", str(prefix), "--json", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    numpy = [f for f in _json(done)["findings"] if f["id"] == "packages.numpy"]
    assert len(numpy) == 1 and numpy[0]["evidence"][0]["text"] == "numpy 1.24.4"
