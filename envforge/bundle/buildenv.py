"""The build environment of an sdist whose build imports what it does not declare.

pycocotools 2.0.0's setup.py imports Cython and NumPy at its top, and declares neither: an
isolated build (uv's, pip's) fails with ``No module named 'Cython'``. uv's remedy is
``extra-build-dependencies``, which its ``uv pip`` commands take from a config file, but
``uv build`` of an sdist given by path does not (uv 0.13.9: the same failure with either
key). So such an sdist gets an environment made for it, as uv's own hint says ("install it
into the environment and re-run with ``--no-build-isolation``"): a venv of the target's
Python holding the sdist's declared build requirements (PEP 518's ``[build-system]
requires``; for a bare setup.py, PEP 517's fallback: ``setuptools>=40.8.0`` and ``wheel``)
and the lock's pinned extra ones, under the lock's build constraints, in which uv builds
without isolation.
"""

from __future__ import annotations

import re
import tarfile
import tomllib
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from envforge.envlayout import EnvLayout
from envforge.errors import ArtifactError
from envforge.host import proc
from envforge.lockfile import PypiBuild
from envforge.platforms import host_platform

LEGACY_BACKEND = ("setuptools>=40.8.0", "wheel")  # PEP 517's fallback for a bare setup.py
_PYPROJECT = re.compile(r"^[^/]+/pyproject\.toml$")
_PYPROJECT_MAX = 1 << 20  # a pyproject.toml larger than this is not read


def declared_build_requires(sdist: Path) -> tuple[str, ...]:
    """The ``[build-system] requires`` of the sdist's top folder's pyproject.toml, else the
    legacy back-end's. ArtifactError for an archive or a pyproject.toml that cannot be read."""
    try:
        text = _pyproject_text(sdist)
        table = tomllib.loads(text).get("build-system", {}) if text is not None else {}
    except (OSError, tarfile.TarError, zipfile.BadZipFile, tomllib.TOMLDecodeError,
            UnicodeDecodeError) as exc:
        raise ArtifactError(f"{sdist.name}: cannot read its pyproject.toml ({exc})") from None
    requires = table.get("requires") if isinstance(table, dict) else None
    if requires is None:
        return LEGACY_BACKEND
    if not isinstance(requires, list) or not all(isinstance(r, str) for r in requires):
        raise ArtifactError(f"{sdist.name}: pyproject.toml's build-system.requires is not a "
                            "list of requirements")
    return tuple(requires)


def _pyproject_text(sdist: Path) -> str | None:
    if sdist.name.endswith(".zip"):
        with zipfile.ZipFile(sdist) as archive:
            for info in archive.infolist():
                if _PYPROJECT.match(info.filename) and info.file_size <= _PYPROJECT_MAX:
                    return archive.read(info).decode("utf-8")
        return None
    with tarfile.open(sdist) as archive:
        for member in archive:
            if _PYPROJECT.match(member.name) and member.isfile() \
                    and member.size <= _PYPROJECT_MAX:
                handle = archive.extractfile(member)
                return handle.read().decode("utf-8") if handle is not None else None
    return None


def prepare(uv: str, python: Path, folder: Path, requirements: Sequence[str], *,
            sources: PypiBuild, constraints: Path | None, env: Mapping[str, str]) -> Path:
    """A venv at ``folder`` of ``python`` holding ``requirements`` from the lock's build
    sources, ``constraints`` applied; its interpreter."""
    proc.run([uv, "venv", "--quiet", "--no-config", "--python", str(python), str(folder)],
             env=env)
    interpreter = Path(EnvLayout(host_platform(), "venv", folder, "").python)
    args = [uv, "pip", "install", "--quiet", "--no-config", "--python", str(interpreter),
            "--index-url", sources.index]
    for link in sources.find_links:
        args += ["--find-links", link]
    for extra in sources.extra_indexes:
        args += ["--extra-index-url", extra]
    if constraints is not None:
        args += ["--constraint", str(constraints)]
    proc.run([*args, *requirements], env=env)
    return interpreter


def installed(uv: str, interpreter: Path, env: Mapping[str, str]) -> tuple[str, ...]:
    """What the environment holds, ``name==version`` sorted by name, as a build reports it."""
    done = proc.run([uv, "pip", "freeze", "--quiet", "--no-config", "--python",
                     str(interpreter)], env=env)
    pins = [line.strip() for line in done.stdout.splitlines() if "==" in line]
    return tuple(sorted(pins, key=lambda pin: pin.split("==")[0].lower()))
