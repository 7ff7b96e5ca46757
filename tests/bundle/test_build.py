"""``envforge bundle`` of a committed lock leaves the repository as it was (issue 25): the wheel
built from a locked sdist is the host's, so its sha256 goes to the bundle's manifest and the
host's cache, never into the lock."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from envforge.bundle.manifest import read_manifest
from tests.bundle.test_sources import envforge, project

pytestmark = [pytest.mark.slow, pytest.mark.network]


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c",
                           "user.email=t@example.invalid", *args], capture_output=True,
                          text=True, check=True).stdout


def test_bundle_of_a_committed_lock_leaves_git_status_clean(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    project(repo, "speedups", 'packages = ["MarkupSafe==0.23"]\nno_binary = ["MarkupSafe"]\n')
    (repo / ".gitignore").write_text("lock-home/\n")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "spec and lock")
    lock = repo / "locks" / "speedups.lock"
    for home in ("home", "other-home"):  # a second host builds its own wheel: still clean
        bundle = tmp_path / f"bundle-{home}"
        made = envforge("bundle", str(lock), "-o", str(bundle), home=tmp_path / home)
        assert made.returncode == 0, made.stderr
        assert "building MarkupSafe 0.23 from source…" in made.stderr
        assert git(repo, "status", "--porcelain") == ""
        [wheel] = [f for f in read_manifest(bundle).files if f.built_from is not None]
        assert wheel.path.endswith("-cp37-cp37m-linux_x86_64.whl")
        assert (bundle / read_manifest(bundle).lock).read_bytes() == lock.read_bytes()
