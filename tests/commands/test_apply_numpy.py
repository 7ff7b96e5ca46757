"""plan (= apply --dry-run) reads the lock and imports no NumPy, as a bundle's envforge must.

NumPy is envforge's ``resolve`` extra: what lock computes with it (the kernels' references,
Keras's trained model) is read from the lock afterwards. Here NumPy is made unimportable in
the process that plans each committed spec with a framework pack; planning must still
reach its plan (exit 3: changes pending, into an empty home).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
NO_NUMPY = ("import sys; sys.modules['numpy'] = None; from envforge.cli import main; "
            "sys.exit(main(sys.argv[1:]))")


@pytest.mark.posix_only("plans with the Linux Python 3.7 from pyenv")
@pytest.mark.parametrize("name", ["keras-theano-cpu", "tf1-keras-cpu", "tf114-keras22-cpu",
                                  "theano-cpu"])
def test_plan_needs_no_numpy(name: str, tmp_path: Path) -> None:
    env = {**os.environ, "HOME": str(tmp_path), "ENVFORGE_HOME": str(tmp_path / "ef"),
           "PYENV_ROOT": os.environ.get("PYENV_ROOT", str(Path.home() / ".pyenv"))}
    done = subprocess.run([sys.executable, "-c", NO_NUMPY, "plan",
                           str(REPO / "specs" / f"{name}.toml"), "--quiet"], cwd=REPO, env=env,
                          capture_output=True, text=True, check=False, timeout=300)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "numpy" not in done.stderr.lower()
