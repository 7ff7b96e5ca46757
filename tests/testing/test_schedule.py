"""make test's scheduler in a real xdist run of two workers: a free worker takes the next file,
the file behind a long test is a quick one, and a split file's tests go to both workers."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

CONFTEST = """
from tests.testing.schedule import FreeWorkerScheduling

def pytest_xdist_make_scheduler(config, log):
    return FreeWorkerScheduling(config, log, long={"b_long.py"}, split={"a_split.py"})
"""
TEST = """
import os
from pathlib import Path

def test_{name}(request):
    with open(Path(__file__).parent / "ran.txt", "a") as ran:
        ran.write(request.node.nodeid + " " + os.environ["PYTEST_XDIST_WORKER"] + "\\n")
"""


def test_a_file_waits_behind_no_long_test_and_a_split_files_tests_spread(tmp_path: Path) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    (tmp_path / "conftest.py").write_text(CONFTEST, encoding="utf-8")
    (tmp_path / "a_split.py").write_text(TEST.format(name="one") + TEST.format(name="two"),
                                         encoding="utf-8")
    for name in ("b_long", "c_mid", "d_next", "e_quick"):
        (tmp_path / f"{name}.py").write_text(TEST.format(name=name), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-n", "2", "--dist", "loadfile", "--no-loadscope-reorder",
                           *(str(p.name) for p in sorted(tmp_path.glob("[a-e]_*.py")))],
                          cwd=tmp_path, env=env, capture_output=True, text=True, check=False,
                          timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    worker = dict(line.split() for line in
                  (tmp_path / "ran.txt").read_text(encoding="utf-8").splitlines())
    assert worker["a_split.py::test_one"] != worker["a_split.py::test_two"]
    # loadfile gave d_next to the worker that held b_long's one test, behind it
    assert worker["d_next.py::test_d_next"] == worker["c_mid.py::test_c_mid"]
    assert worker["e_quick.py::test_e_quick"] == worker["b_long.py::test_b_long"]
