"""init's trial compile of the pure wheels a draft resolves to, by the Python the lock will
record: a release whose code does not parse there resolves and installs, then fails at import.

facebookresearch/DrQA pins ``pexpect==4.2.1`` (2016), a ``py2.py3-none-any`` wheel: its
``spawnbase.py`` has a parameter named ``async``, a keyword since Python 3.7 (PEP 492's
deprecation, made reserved in 3.7), so ``import pexpect`` is a SyntaxError on 3.7 and later;
pexpect 4.3.0 renamed it. Wheel tags and Requires-Python (4.2.1 declares none) cannot say so;
the interpreter can. Each exactly pinned pure wheel's modules are compiled (``compile()``,
nothing run or written) by the target Python in one child; files under a tests or examples
folder, which an install never imports, are not read. Within init's deadline only, on this
host's platform, with a Python of the target's minor here; otherwise nothing is said.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from envforge.errors import EnvforgeError

if TYPE_CHECKING:
    from envforge.lockfile import LockedPypiFile, PlatformLock
    from envforge.spec import Platform

COMPILE_S = 60.0  # the child's bound; a compile of every pure wheel takes seconds

# Run by the target Python (3.5 and later): the first SyntaxError of each wheel, as JSON.
_CHILD = r"""
import json, re, sys, zipfile
skip = re.compile(r"(^|/)(tests?|testing|examples?|docs?)/|(^|/)[^/]*py2[^/]*\.py$")
found = []
for path in sys.argv[1:]:
    with zipfile.ZipFile(path) as wheel:
        for name in wheel.namelist():
            if not name.endswith(".py") or ".data/" in name or skip.search(name):
                continue
            try:
                compile(wheel.read(name), name, "exec", dont_inherit=True)
            except SyntaxError as exc:
                found.append({"wheel": path, "member": name, "line": exc.lineno or 0,
                              "message": exc.msg})
                break
            except (ValueError, TypeError):
                continue
print(json.dumps(found))
"""


@dataclass(frozen=True)
class CompileFailure:
    """A locked pure wheel one of whose modules the target Python does not parse."""

    name: str
    version: str
    where: str  # member:line
    message: str


def pure_wheels(plock: PlatformLock, pinned: Mapping[str, str]) -> tuple[LockedPypiFile, ...]:
    """The lock's pure wheels of the releases ``pinned`` names (normalized name -> version):
    only an exact pin can be moved, so only those are downloaded and read (a corpus of 26
    repositories' inits took 313 s instead of 127 s when every pure wheel was)."""
    from packaging.utils import canonicalize_name

    return tuple(f for f in plock.pypi if f.kind == "wheel"
                 and f.filename.endswith("-none-any.whl")
                 and pinned.get(canonicalize_name(f.name)) == f.version)


def trial_compile(plock: PlatformLock, platform: Platform, pinned: Mapping[str, str], *,
                  environ: dict[str, str] | None = None) -> tuple[CompileFailure, ...]:
    """The pinned pure wheels of ``plock`` whose code the target Python does not parse; ()
    where none, or where this host cannot tell (another platform, no such Python, no
    download)."""
    from envforge.host.fetch import FileRef, obtain
    from envforge.host.interpreters import find_interpreter, minor
    from envforge.paths import envforge_dirs
    from envforge.platforms import host_platform

    files = pure_wheels(plock, pinned)
    if not files or platform != host_platform().name:
        return ()
    cache = envforge_dirs().cache
    env = dict(os.environ if environ is None else environ)
    try:
        python = find_interpreter(minor(plock.python), environ=env, cache=cache)
        paths = {str(obtain(FileRef(f.url, f.sha256, f.filename, f.size), cache=cache)): f
                 for f in files}
    except EnvforgeError:
        return ()
    rows = compile_failures(python.executable, list(paths))
    return tuple(CompileFailure(paths[row.wheel].name, paths[row.wheel].version,
                                f"{row.member}:{row.line}", row.message)
                 for row in rows if row.wheel in paths)


@dataclass(frozen=True)
class _Row:
    wheel: str
    member: str
    line: int
    message: str


def compile_failures(python: Path, wheels: list[str]) -> list[_Row]:
    """The first SyntaxError of each wheel at ``wheels``, as ``python`` compiles it; [] where
    the child cannot run or say."""
    try:
        done = subprocess.run([str(python), "-I", "-c", _CHILD, *wheels], capture_output=True,
                              text=True, timeout=COMPILE_S, check=False)
        rows = json.loads(done.stdout) if done.returncode == 0 else []
        return [_Row(str(r["wheel"]), str(r["member"]), int(r["line"]), str(r["message"]))
                for r in rows]
    except (OSError, subprocess.TimeoutExpired, ValueError, KeyError, TypeError):
        return []
