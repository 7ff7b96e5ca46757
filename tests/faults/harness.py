"""The fault suite's world: a small real spec (a Python 3.7 venv, one wheel, one Debian
package, a ``~/.theanorc``) applied by the real CLI, and a child process that dies or stops
exactly when its journal reaches a given line.

The child replaces nothing but ``Journal._write_line``'s return: after the N-th line is
fsynced it SIGKILLs its whole process group (``kill``), SIGSTOPs itself (``stop``) or sends
its group SIGINT or SIGTERM, i.e. at the instant the change that line announces is about to
be made; or the same after the N-th file the PyPI install (pypa's installer) wrote.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

TINY = """\
[project]
name = "{name}"
platforms = ["linux-64"]

[python]
version = "3.7"

[environment]
kind = "venv"

[pypi]
# Theano-PyMC alone (its NumPy and SciPy left out, to stay fast): the lock then holds the
# flags each spec's .theanorc renders, as a real Theano spec's does.
packages = ["six==1.16.0", "Theano-PyMC==1.0.5"]
provided_elsewhere = ["numpy", "scipy"]

[debian]
suite = "bookworm"
packages = ["libquadmath0"]

[theano]
device = "cpu"
floatX = "{floatx}"
theanorc = "{theanorc}"
"""

# The user's own ~/.theanorc: odd bytes, CRLF, an unusual mode; it must come back exactly.
USER_RC = b"[global]\n# mine \xe2\x82\xac\r\nfloatX = float32\n"

CHILD = """\
import os, signal, sys
import envforge.host.wheelinstall as wheelinstall
import envforge.journal as journal
signal.signal(signal.SIGINT, signal.default_int_handler)  # even when started in background
at, action = int(os.environ["FAULT_AT"]), os.environ["FAULT_ACTION"]
where, seen = os.environ.get("FAULT_WHERE", "journal"), [0]
def milestone():
    seen[0] += 1
    if seen[0] != at:
        return
    if action == "kill":
        os.killpg(0, signal.SIGKILL)
    elif action == "stop":
        os.kill(os.getpid(), signal.SIGSTOP)
    else:
        os.killpg(0, getattr(signal, action))
if where == "journal":
    original = journal.Journal._write_line
    def write_line(self, line):
        original(self, line)
        milestone()
    journal.Journal._write_line = write_line
else:  # the k-th file installer writes whose path holds FAULT_WHERE ("/" is any file)
    def counted(original):
        def write(self, scheme, path, *args, **kwargs):
            written = original(self, scheme, path, *args, **kwargs)
            if where in "/" + str(path).replace(os.sep, "/"):
                milestone()
            return written
        return write
    def counted_members(original):  # a cache entry's members, queued a run at a time
        def link_members(self, scheme, entry, indexes, skip):
            original(self, scheme, entry, indexes, skip)
            for i in indexes:
                if i not in skip and where in "/" + entry.paths[i]:
                    milestone()
        return link_members
    wheelinstall._Destination.write_file = counted(wheelinstall._Destination.write_file)
    wheelinstall._Destination.link = counted(wheelinstall._Destination.link)  # cache entries
    wheelinstall._Destination.link_members = counted_members(
        wheelinstall._Destination.link_members)
from envforge.cli import main
sys.exit(main(sys.argv[1:]))
"""


def envforge(*args: str, env: dict[str, str],
             timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """The real CLI in a process of its own."""
    return subprocess.run([sys.executable, "-m", "envforge", *args], env=env, text=True,
                          capture_output=True, timeout=timeout, check=False,
                          stdin=subprocess.DEVNULL)


def faulty(args: list[str], *, env: dict[str, str], at: int, action: str,
           where: str = "journal") -> subprocess.Popen[str]:
    """``envforge ARGS`` that dies (``kill``), stops (``stop``) or sends its process group a
    signal (``SIGINT``, ``SIGTERM``) after journal line ``at``, or (``where`` a path part,
    ``/`` for any) after the ``at``-th such file the PyPI install writes."""
    return subprocess.Popen([sys.executable, "-c", CHILD, *args],
                            env={**env, "FAULT_AT": str(at), "FAULT_ACTION": action,
                                 "FAULT_WHERE": where},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, stdin=subprocess.DEVNULL)


def wait_stopped(child: subprocess.Popen[str], timeout: float = 120) -> None:
    """Until the child has stopped itself (state T in /proc)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert child.poll() is None, child.communicate()
        fields = Path(f"/proc/{child.pid}/stat").read_text().rsplit(")", 1)[1].split()
        if fields[0] == "T":
            return
        time.sleep(0.01)
    raise AssertionError("the child never reached its milestone")


def resume(child: subprocess.Popen[str]) -> tuple[int, str]:
    os.kill(child.pid, signal.SIGCONT)
    _, err = child.communicate(timeout=300)
    return child.returncode, err


def snapshot(*roots: Path) -> dict[str, str]:
    """Every path under each root with its bytes' hash, link target or mode."""
    found: dict[str, str] = {}
    for root in roots:
        if not os.path.lexists(root):
            continue
        for path in [root, *sorted(root.rglob("*"))]:
            st = path.lstat()
            if path.is_symlink():
                found[str(path)] = "link:" + str(path.readlink())
            elif path.is_file():
                found[str(path)] = (hashlib.sha256(path.read_bytes()).hexdigest()
                                    + f" {st.st_mode & 0o7777:o}")
            else:
                found[str(path)] = f"dir {st.st_mode & 0o7777:o}"
    return found


def journal_lines(state: Path) -> list[dict[str, object]]:
    """Every complete line of the only journal under ``state``."""
    found = list(state.glob("*/journal.jsonl"))
    if not found:
        return []
    (path,) = found
    return [json.loads(line) for line in path.read_bytes().split(b"\n")[:-1]]
