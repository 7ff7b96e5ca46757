"""PyPI resolution with uv, for a target platform and Python that need not be this host's.

uv's ``pip compile --format pylock.toml`` resolves for the target and lists, per package,
the files that target can install with their hashes; this module picks the one file the
target would install (the best-ranked wheel, else the sdist) and nothing else.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import tomllib
from collections.abc import Iterable, Mapping
from datetime import date
from pathlib import Path
from typing import Any, Literal
from urllib.parse import unquote, urlsplit

from packaging.requirements import InvalidRequirement, Requirement
from packaging.tags import Tag, compatible_tags, cpython_tags
from packaging.utils import canonicalize_name, parse_wheel_filename

from envforge.errors import ResolveError
from envforge.host import proc
from envforge.lockfile import LockedPypiFile
from envforge.paths import envforge_dirs
from envforge.spec import Platform

# uv's name for each target, and the platform tags pip would accept there, best first.
_UV_PLATFORM: dict[Platform, str] = {
    "linux-64": "x86_64-manylinux_2_17",
    "win-64": "x86_64-pc-windows-msvc",
}
_PLATFORM_TAGS: dict[Platform, tuple[str, ...]] = {
    "linux-64": (
        "manylinux_2_17_x86_64", "manylinux2014_x86_64", "manylinux_2_12_x86_64",
        "manylinux2010_x86_64", "manylinux_2_5_x86_64", "manylinux1_x86_64", "linux_x86_64",
    ),
    "win-64": ("win_amd64",),
}


def target_tags(platform: Platform, python: str) -> list[Tag]:
    """The wheel tags an interpreter of ``python`` on ``platform`` accepts, most preferred first."""
    major, minor = (int(part) for part in python.split(".")[:2])
    abi = f"cp{major}{minor}{'m' if (major, minor) < (3, 8) else ''}"
    platforms = list(_PLATFORM_TAGS[platform])
    tags = list(cpython_tags((major, minor), abis=[abi, "abi3", "none"], platforms=platforms))
    tags += list(compatible_tags((major, minor), f"cp{major}{minor}", platforms=platforms))
    return tags


def uv_binary() -> str:
    """uv from this interpreter's environment (the ``uv`` wheel), else from PATH."""
    try:
        from uv import find_uv_bin

        return str(find_uv_bin())
    except (ImportError, FileNotFoundError):
        found = shutil.which("uv")
        if found is None:
            raise ResolveError("uv is needed to resolve PyPI packages: "
                               "pip install 'envforge[resolve]'") from None
        return found


def uv_environ(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for uv: no user config or index settings leak into a lock, and lock,
    apply and bundle share one uv cache inside envforge's (so --offline can rely on it)."""
    source = os.environ if base is None else base
    env = {k: v for k, v in source.items() if not k.startswith(("UV_", "PIP_"))}
    env["UV_NO_CONFIG"] = "1"
    env["UV_CACHE_DIR"] = str(envforge_dirs(dict(source)).cache / "uv")
    return env


# Build back-ends uv puts into the isolated build of a legacy sdist (``setuptools>=40.8.0``
# for a bare setup.py): exempt from ``as_of``, or any cut-off before 2018-04 fails every build.
BUILD_BACKENDS = ("setuptools", "wheel")


class UnsatisfiableError(ResolveError):
    """uv found no solution: the requirements themselves, not the host or the network."""

    def __init__(self, *, requirements: tuple[str, ...], platform: Platform, python: str,
                 index: str, as_of: date | None, uv_output: str) -> None:
        self.requirements = requirements
        self.platform = platform
        self.python = python
        self.index = index
        self.as_of = as_of
        self.uv_output = uv_output
        super().__init__(f"PyPI resolution for {platform} (Python {python}) found no solution")


def resolve_pypi(requirements: Iterable[str], *, platform: Platform, python: str,
                 index: str, exclude: Iterable[str] = (),
                 as_of: date | None = None) -> tuple[LockedPypiFile, ...]:
    """Resolve requirements for the target; one locked file per package, sorted by name.

    ``python`` is the full version the environment will have (``3.7.16``): uv reads ``3.7``
    as 3.7.0 and refuses anything that requires ``>=3.7.1`` (pandas 1.2-1.3.5)."""
    reqs = list(requirements)
    if not reqs:
        return ()
    with tempfile.TemporaryDirectory(prefix="envforge-pypi-") as tmp:
        req_in = Path(tmp) / "requirements.in"
        req_in.write_text("\n".join(reqs) + "\n", encoding="utf-8")
        out = Path(tmp) / "pylock.toml"
        args = [
            uv_binary(), "pip", "compile", str(req_in), "--quiet", "--no-header",
            "--format", "pylock.toml", "--output-file", str(out),
            "--python-version", python, "--python-platform", _UV_PLATFORM[platform],
            "--index-url", index, "--no-config",
        ]
        for name in exclude:
            args += ["--no-emit-package", name]
        if as_of is not None:
            args += ["--exclude-newer", as_of.isoformat()]
            for name in (*BUILD_BACKENDS, *exact_names(reqs)):
                args += ["--exclude-newer-package", f"{name}=false"]
        done = proc.run(args, env=uv_environ(), check=False)
        if done.returncode != 0:
            where = f"PyPI resolution for {platform} (Python {python})"
            if "No solution found" in done.stderr:
                raise UnsatisfiableError(requirements=tuple(reqs), platform=platform,
                                         python=python, index=index, as_of=as_of,
                                         uv_output=done.stderr)
            raise ResolveError(f"{where} failed: {proc.describe_failure(done)}")
        pylock = tomllib.loads(out.read_text(encoding="utf-8"))
    return pick_files(pylock, platform=platform, python=python)


def exact_names(requirements: Iterable[str]) -> list[str]:
    """The names pinned with ``==``: taken as written, whatever ``as_of`` says (their own
    dependencies still follow it), so a pin newer than the era does not need a later day."""
    names: list[str] = []
    for text in requirements:
        try:
            requirement = Requirement(text)
        except InvalidRequirement:
            continue
        if any(s.operator in ("==", "===") and "*" not in s.version
               for s in requirement.specifier):
            names.append(canonicalize_name(requirement.name))
    return names


def pick_files(pylock: Mapping[str, Any], *, platform: Platform,
               python: str) -> tuple[LockedPypiFile, ...]:
    """From a PEP 751 document, the one file per package that the target installs."""
    ranks = {tag: rank for rank, tag in enumerate(target_tags(platform, python))}
    locked = []
    for package in pylock.get("packages", []):
        name, version = package["name"], package["version"]
        best: tuple[int, Mapping[str, Any]] | None = None
        for wheel in package.get("wheels", []):
            filename = _filename(wheel)
            tags = parse_wheel_filename(filename)[3]
            rank = min((ranks[t] for t in tags if t in ranks), default=None)
            if rank is not None and (best is None or rank < best[0]):
                best = (rank, wheel)
        if best is not None:
            locked.append(_locked(name, version, "wheel", best[1]))
        elif "sdist" in package:
            locked.append(_locked(name, version, "sdist", package["sdist"]))
        else:
            raise ResolveError(f"{name} {version} has no file for {platform} "
                               f"(Python {python}) and no sdist")
    return tuple(sorted(locked, key=lambda f: f.name))


def _filename(entry: Mapping[str, Any]) -> str:
    if "name" in entry:
        return str(entry["name"])
    return unquote(urlsplit(str(entry["url"])).path.rsplit("/", 1)[-1])


def _locked(name: str, version: str, kind: Literal["wheel", "sdist"],
            entry: Mapping[str, Any]) -> LockedPypiFile:
    sha = entry.get("hashes", {}).get("sha256")
    if not sha:
        raise ResolveError(f"{name} {version}: the index gave no sha256 for {_filename(entry)}")
    return LockedPypiFile(name=name, version=version, kind=kind,
                          filename=_filename(entry), url=str(entry["url"]), sha256=sha,
                          size=entry.get("size"))


