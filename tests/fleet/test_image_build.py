"""``envforge image`` for real: the theano-cpu-debian bundle built into an image on the fleet's
debootstrapped base with podman, verify run at build time and again inside, no network."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.testing import fleet

pytestmark = [pytest.mark.fleet, pytest.mark.slow]

TAG = "localhost/envforge-test-theano-cpu-debian:latest"


def test_image_builds_verifies_and_runs_verify_inside_with_no_network(
        bundle: Path, tmp_path: Path) -> None:
    fleet.prepare()
    context = tmp_path / "context"
    done = subprocess.run(
        [str(fleet.REPO / ".venv" / "bin" / "envforge"), "image", str(bundle), "--base",
         fleet.IMAGE, "-t", TAG, "-o", str(context), "--json"],
        env=fleet.environ(), capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    document = json.loads(done.stdout)
    assert document["built"] is True and (context / "envforge.def").is_file()
    try:
        labels = json.loads(fleet.podman("image", "inspect", TAG))[0]["Labels"]
        lock_sha = json.loads((bundle / "manifest.json").read_text())["lock_sha256"]
        assert labels["io.envforge.lock.sha256"] == lock_sha
        inside = fleet.podman("run", "--rm", "--network", "none", "--entrypoint",
                              "/opt/envforge/venv/bin/envforge", TAG, "verify",
                              "/opt/envforge/bundle/specs/theano-cpu-debian.toml", "--json")
        report = json.loads(inside)
        assert report["verdict"] == "pass" and report["counts"]["fail"] == 0
        built = json.loads(fleet.podman("run", "--rm", "--network", "none", "--entrypoint",
                                        "cat", TAG, "/opt/envforge/verify.json"))
        assert built["verdict"] == "pass"
        ran = fleet.podman("run", "--rm", "--network", "none", TAG, "python", "-c",
                           "import theano, numpy; print(theano.__version__)")
        assert ran.strip().endswith("1.0.5")
    finally:
        fleet.podman("rmi", "-f", TAG, check=False)
