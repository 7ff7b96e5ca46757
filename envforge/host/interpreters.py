"""Find an interpreter of a given Python version: PATH, pyenv, uv-managed, the Windows launcher.

Candidate locations are computed by a pure function over an injected environment, so the
order and the Windows rules are tested anywhere; only ``query_version`` runs a process, and
given envforge's cache it runs it once per interpreter file: the answer is kept keyed by the
path asked and its real file's stat (inode, size, mtime, ctime), as uv keeps its own
interpreter queries, so a replaced or upgraded interpreter is asked again (each query
starts a Python: a second or more of a warm apply on a loaded host). Within a process an
answer is also kept by the same key, so a search made early (apply's head start, while
planning imports its modules) serves the build's.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import assert_never

from envforge.errors import EnvforgeError, StepError, ToolError
from envforge.host import proc
from envforge.host.atomicfile import write_atomic
from envforge.platforms import Os, TargetPlatform, host_platform

_NAMED = re.compile(r"python(\d+\.\d+)")
_VERSION_SCRIPT = ("import json, sys; print(json.dumps({'version': "
                   "'%d.%d.%d' % sys.version_info[:3], 'executable': sys.executable}))")


def minor(version: str) -> str:
    """``3.7`` of ``3.7.16``: what interpreters are searched by."""
    return ".".join(version.split(".")[:2])


@dataclass(frozen=True)
class Interpreter:
    executable: Path
    version: str  # e.g. 3.7.16
    found_by: str  # PATH, pyenv, uv, py-launcher

    @property
    def minor(self) -> str:
        return minor(self.version)


@dataclass(frozen=True)
class Candidate:
    path: Path
    found_by: str


def candidates(minor: str, environ: Mapping[str, str], *, platform: TargetPlatform,
               home: Path) -> Iterator[Candidate]:
    """Where a ``minor`` interpreter may live, most explicit first; existence is not checked."""
    exe = platform.exe_suffix
    match platform.os:
        case Os.WINDOWS:  # no pythonX.Y.exe; pyenv-win and uv keep python.exe at the top
            names, pyenv_exe, uv_exe = [], f"python{exe}", f"python{exe}"
        case Os.LINUX:
            names, pyenv_exe, uv_exe = [f"python{minor}"], f"bin/python{minor}", \
                f"bin/python{minor}"
        case _:
            assert_never(platform.os)
    names += [f"python3{exe}", f"python{exe}"]
    for folder in environ.get("PATH", "").split(platform.pathsep):
        if folder and "shims" not in Path(folder).parts[-1:]:
            for name in names:
                yield Candidate(Path(folder) / name, "PATH")
    pyenv_root = Path(environ.get("PYENV_ROOT", str(home / ".pyenv")))
    versions = pyenv_root / "versions"
    if versions.is_dir():
        for entry in sorted(versions.iterdir(), key=lambda p: _version_key(p.name), reverse=True):
            if entry.name == minor or entry.name.startswith(f"{minor}."):
                yield Candidate(entry / pyenv_exe, "pyenv")
    uv_root = Path(environ.get("UV_PYTHON_INSTALL_DIR", str(_uv_python_dir(environ, home,
                                                                             platform))))
    if uv_root.is_dir():
        for entry in sorted(uv_root.iterdir(), key=lambda p: p.name, reverse=True):
            if entry.name.startswith(f"cpython-{minor}."):
                yield Candidate(entry / uv_exe, "uv")


def _uv_python_dir(environ: Mapping[str, str], home: Path, platform: TargetPlatform) -> Path:
    match platform.os:
        case Os.WINDOWS:
            data = environ.get("APPDATA", str(home / "AppData" / "Roaming"))
        case Os.LINUX:
            data = environ.get("XDG_DATA_HOME", str(home / ".local" / "share"))
        case _:
            assert_never(platform.os)
    return Path(data) / "uv" / "python"


def _version_key(name: str) -> tuple[int, ...]:
    parts = []
    for part in name.split("."):
        if not part.isdigit():
            break
        parts.append(int(part))
    return tuple(parts)


_QUERIES = "interpreters-v1.json"


# key (``_query_key``) -> the answer this process had for that very file: apply's head start
# asks while planning imports its modules (``host/headstart.py``), the build then takes it
_ASKED: dict[str, Interpreter] = {}


def query_version(executable: Path, *, cache: Path | None = None) -> Interpreter | None:
    """Ask an interpreter what it is; None when it does not run. With ``cache`` (envforge's
    cache folder), an answer kept there for this very file is used instead of running it,
    else one this process had for it (then kept there too)."""
    key = _query_key(executable)
    if cache is not None and key is not None:
        known = _read_queries(cache).get(key)
        if isinstance(known, dict) and {"executable", "version"} <= known.keys():
            return Interpreter(Path(str(known["executable"])), str(known["version"]), "")
    found = _ASKED.get(key) if key is not None else None
    if found is None:
        try:
            done = proc.run([executable, "-c", _VERSION_SCRIPT], timeout=30)
            info = json.loads(done.stdout)
            found = Interpreter(Path(info["executable"]), str(info["version"]), "")
        except (EnvforgeError, ValueError, KeyError, TypeError):
            return None
    if key is not None and key == _query_key(executable):  # the same file all along
        _ASKED[key] = found
        if cache is not None:
            _keep_query(cache, key, {"executable": str(found.executable),
                                     "version": found.version})
    return found


def _query_key(executable: Path) -> str | None:
    """The path asked (sys.executable echoes it) and its real file's stat; None if absent."""
    try:
        real = Path(executable).resolve()
        st = real.stat()
    except OSError:
        return None
    return (f"{Path(executable).absolute()}|{real}|{st.st_dev}:{st.st_ino}:{st.st_size}:"
            f"{st.st_mtime_ns}:{st.st_ctime_ns}")


def _read_queries(cache: Path) -> dict[str, object]:
    try:
        data = json.loads((cache / _QUERIES).read_bytes())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _keep_query(cache: Path, key: str, answer: dict[str, str]) -> None:
    """Add one answer, written whole (temporary file, then rename); a cache that cannot be
    written only means asking again next time."""
    queries = {k: v for k, v in _read_queries(cache).items()
               if k.partition("|")[0] != key.partition("|")[0]}  # the path's older answers go
    queries[key] = answer
    with contextlib.suppress(OSError):
        write_atomic(cache / _QUERIES, json.dumps(queries).encode("utf-8"))


def find_interpreter(minor: str, *, environ: Mapping[str, str] | None = None,
                     home: Path | None = None, cache: Path | None = None) -> Interpreter:
    """The first working interpreter of that minor version, or StepError listing where we
    looked; ``cache``: envforge's, where each interpreter's answer is kept (``query_version``)."""
    env = os.environ if environ is None else environ
    platform = host_platform()
    looked: list[str] = []
    seen: set[Path] = set()  # real paths: /bin/python3 is /usr/bin/python3 on a merged /usr
    for candidate in candidates(minor, env, platform=platform, home=home or Path.home()):
        if not candidate.path.is_file() or (real := candidate.path.resolve()) in seen:
            continue
        seen.add(real)
        looked.append(str(candidate.path))
        if named_minor(real) not in (None, minor):
            continue  # /usr/bin/python3 -> python3.11: not asked (a Python's start each)
        found = query_version(candidate.path, cache=cache)
        if found is not None and found.minor == minor:
            return Interpreter(candidate.path, found.version, candidate.found_by)
    if platform.os is Os.WINDOWS:  # the py launcher
        launched = _py_launcher(minor)
        if launched is not None:
            return launched
    tried = f" (tried {', '.join(looked)})" if looked else ""
    raise StepError(f"no Python {minor} found on PATH, in pyenv or among uv's Pythons{tried}; "
                    f"install one: {install_hint(minor)}")


# uv's own Pythons start at 3.8.2 (`uv python list --all-versions --only-downloads`, uv 0.13.9):
# an older one comes from pyenv (or the system's packages)
UV_OLDEST = (3, 8)


def install_hint(wanted: str) -> str:
    """How to install a Python of the minor ``wanted``: pyenv below what uv downloads."""
    if tuple(int(part) for part in minor(wanted).split(".")) < UV_OLDEST:
        return (f"`pyenv install {wanted}` (uv downloads CPython from 3.8.2 on, so "
                f"`uv python install {wanted}` cannot)")
    return f"`uv python install {wanted}` or `pyenv install {wanted}`"


def named_minor(real: Path) -> str | None:
    """The minor version an interpreter's real file is named for (``python3.11``: 3.11), as
    CPython's ``make install`` and Debian name it; None for ``python3``, ``python.exe`` and
    other names, which only asking can tell."""
    match = _NAMED.fullmatch(real.name)
    return match.group(1) if match else None


def _py_launcher(minor: str) -> Interpreter | None:  # pragma: no cover - Windows only
    try:
        done = proc.run(["py", f"-{minor}", "-c", _VERSION_SCRIPT], timeout=30)
    except ToolError:
        return None
    info = json.loads(done.stdout)
    return Interpreter(Path(info["executable"]), info["version"], "py-launcher")


def install_with_uv(minor: str, environ: Mapping[str, str]) -> Interpreter:
    """A uv-managed Python, downloaded where downloads are allowed; StepError naming uv's
    reason otherwise (python-build-standalone lives on GitHub, unreachable on closed hosts)."""
    from envforge.host.uv import uv_binary

    uv = uv_binary()
    env = {k: v for k, v in environ.items() if not k.startswith("UV_NO_")}
    try:
        proc.run([uv, "python", "install", minor], env=env, timeout=600)
        found = proc.run([uv, "python", "find", minor], env=env, timeout=60).stdout.strip()
    except ToolError as exc:
        said = (exc.stderr.strip() or exc.stdout.strip() or str(exc)).splitlines()
        reason = said[-1].strip() if said else str(exc)
        raise StepError(f"`uv python install {minor}` failed: {reason}") from None
    interpreter = query_version(Path(found))
    if interpreter is None or interpreter.minor != minor:
        raise StepError(f"uv installed a Python at {found} that does not run as {minor}")
    return Interpreter(Path(found), interpreter.version, "uv python install")
