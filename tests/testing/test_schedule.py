"""make test's scheduler in a real xdist run of two workers: a free worker takes the next file,
the only file that may wait behind a long test is the quick last one, and a split file's tests
go to both workers."""

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
import time
from pathlib import Path

def test_{name}(request):
    start = time.monotonic()
    time.sleep({seconds})
    # a file each: two workers appending to one lost a line under Wine
    with open(Path(__file__).parent / f"ran-{{request.node.name}}.txt", "w") as ran:
        ran.write(f"{{request.node.nodeid}} {{os.environ['PYTEST_XDIST_WORKER']}} {{start}} "
                  f"{{time.monotonic()}}\\n")
"""


def test_a_file_waits_behind_no_long_test_and_a_split_files_tests_spread(tmp_path: Path) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    (tmp_path / "conftest.py").write_text(CONFTEST, encoding="utf-8")
    split = TEST.format(name="one", seconds=0) + TEST.format(name="two", seconds=0)
    (tmp_path / "a_split.py").write_text(split, encoding="utf-8")
    for name in ("b_long", "c_mid", "d_next", "e_quick"):
        # b_long is long for real: the other worker's files are all handed out before it ends
        seconds = 5 if name == "b_long" else 0
        (tmp_path / f"{name}.py").write_text(TEST.format(name=name, seconds=seconds),
                                             encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-n", "2", "--dist", "loadfile", "--no-loadscope-reorder",
                           *(str(p.name) for p in sorted(tmp_path.glob("[a-e]_*.py")))],
                          cwd=tmp_path, env=env, capture_output=True, text=True, check=False,
                          timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    ran = "".join(p.read_text(encoding="utf-8") for p in sorted(tmp_path.glob("ran-*.txt")))
    rows = {nodeid: (worker, float(start), float(end))
            for nodeid, worker, start, end in (line.split() for line in ran.splitlines())}
    assert rows["a_split.py::test_one"][0] != rows["a_split.py::test_two"][0], ran
    # A worker starts a test only once it holds the next (pytest's nextitem), so one unit waits
    # behind b_long's test: the queue's last, the quick file. loadfile put a next file there
    # (d_next) while the other worker went idle.
    long_end = rows["b_long.py::test_b_long"][2]
    waited = {nodeid for nodeid, (_, start, _) in rows.items() if start >= long_end}
    assert waited <= {"e_quick.py::test_e_quick"}, ran
