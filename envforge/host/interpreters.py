"""Find an interpreter of a given Python version: PATH, pyenv, uv-managed, the Windows launcher.

Candidate locations are computed by a pure function over an injected environment, so the
order and the Windows rules are tested anywhere; only ``query_version`` runs a process.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import assert_never

from envforge.errors import EnvforgeError, StepError, ToolError
from envforge.host import proc
from envforge.platforms import Os, TargetPlatform, host_platform

_VERSION_SCRIPT = ("import json, sys; print(json.dumps({'version': "
                   "'%d.%d.%d' % sys.version_info[:3], 'executable': sys.executable}))")


@dataclass(frozen=True)
class Interpreter:
    executable: Path
    version: str  # e.g. 3.7.16
    found_by: str  # PATH, pyenv, uv, py-launcher

    @property
    def minor(self) -> str:
        return ".".join(self.version.split(".")[:2])


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


def query_version(executable: Path) -> Interpreter | None:
    """Ask an interpreter what it is; None when it does not run."""
    try:
        done = proc.run([executable, "-c", _VERSION_SCRIPT], timeout=30)
        info = json.loads(done.stdout)
    except (EnvforgeError, ValueError):
        return None
    return Interpreter(Path(info["executable"]), info["version"], "")


def find_interpreter(minor: str, *, environ: Mapping[str, str] | None = None,
                     home: Path | None = None) -> Interpreter:
    """The first working interpreter of that minor version, or StepError listing where we looked."""
    env = os.environ if environ is None else environ
    platform = host_platform()
    looked: list[str] = []
    seen: set[Path] = set()  # real paths: /bin/python3 is /usr/bin/python3 on a merged /usr
    for candidate in candidates(minor, env, platform=platform, home=home or Path.home()):
        if not candidate.path.is_file() or (real := candidate.path.resolve()) in seen:
            continue
        seen.add(real)
        looked.append(str(candidate.path))
        found = query_version(candidate.path)
        if found is not None and found.minor == minor:
            return Interpreter(candidate.path, found.version, candidate.found_by)
    if platform.os is Os.WINDOWS:  # the py launcher
        launched = _py_launcher(minor)
        if launched is not None:
            return launched
    tried = f" (tried {', '.join(looked)})" if looked else ""
    raise StepError(f"no Python {minor} found on PATH, in pyenv or among uv's Pythons{tried}; "
                    f"install one, e.g. `uv python install {minor}` or `pyenv install {minor}`")


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
