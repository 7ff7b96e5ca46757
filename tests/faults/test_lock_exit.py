"""``lock`` with conda unreachable ends with its one-line error, never a native crash
(issue 10 #10: SIGABRT "PyGILState_Release" or SIGSEGV in 4 of 39 runs before the fix,
rattler's threads finishing while the interpreter finalised)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent.parent
RUNS = 40


@pytest.mark.slow
def test_lock_with_conda_unreachable_never_dies_of_a_signal(tmp_path: Path) -> None:
    spec = (REPO / "specs" / "theano-cuda102.toml").read_text(encoding="utf-8")
    spec = spec.replace('channels = ["conda-forge"]', 'channels = ["https://conda.invalid/cf"]')
    spec = spec.replace('channels = ["conda-forge", "msys2"]',
                        'channels = ["https://conda.invalid/cf", "https://conda.invalid/m"]')
    path = tmp_path / "specs" / "theano-cuda102.toml"
    path.parent.mkdir()
    path.write_text(spec, encoding="utf-8")
    env = {**os.environ, "ENVFORGE_HOME": str(tmp_path / "home")}
    codes: Counter[int] = Counter()
    for _ in range(RUNS):
        # About 1 s each (180 s in all under make test until a failed lock killed the
        # kernels' references' child rather than waiting for it: app/references.py); the
        # bound is for a hang, not for speed.
        done = subprocess.run([sys.executable, "-m", "envforge", "lock", str(path)], env=env,
                              capture_output=True, text=True, check=False, timeout=600)
        codes[done.returncode] += 1
        assert "Fatal Python error" not in done.stderr, done.stderr
        assert "conda.invalid" in done.stderr
    print(f"\nlock with conda unreachable: {RUNS} runs, exit codes {dict(codes)}")
    assert codes == Counter({1: RUNS})
