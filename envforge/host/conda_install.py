"""Conda prefixes: install locked packages with rattler (no solve), and find conda's envs folder.

rattler checks no hash for ``file://`` archives, so every archive is first copied or
downloaded into envforge's cache and checked against the lock's sha256 here; only when
all of them match does rattler link the checked copies. The prefix then holds exactly
the locked records: rattler also removes packages the lock does not list.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, assert_never

import rattler
from rattler.exceptions import ExtractError, InstallerError, LinkError, TransactionError
from rattler.prefix import PrefixRecord

from envforge.confine import inside
from envforge.errors import ArtifactError, StepError
from envforge.host.fetch import FileRef, obtain
from envforge.lockfile import LockedCondaPackage
from envforge.platforms import Os, TargetPlatform, host_platform


def install_conda(records: Sequence[LockedCondaPackage], prefix: Path, *, cache_dir: Path,
                  bundle: Path | None = None, offline: bool = False) -> None:
    """Make ``prefix`` hold exactly ``records``; a tampered archive is refused before any change.

    Every archive comes through ``fetch.obtain`` (a bundle, envforge's cache, or its URL),
    hash-checked there: rattler itself checks nothing for ``file://`` channels."""
    subdirs = {r.subdir for r in records} - {"noarch"}
    if len(subdirs) > 1:
        raise ArtifactError(f"locked conda packages mix platforms ({', '.join(sorted(subdirs))})")
    archives = [obtain(FileRef(r.url, r.sha256, r.filename, r.size), cache=cache_dir,
                       bundle=bundle, offline=offline) for r in records]
    try:
        asyncio.run(_install(records, archives, prefix, cache_dir / "conda-pkgs",
                             subdirs.pop() if subdirs else None))
    except (OSError, InstallerError, LinkError, TransactionError, ExtractError) as exc:
        raise StepError(f"rattler could not install into {prefix}: {exc}") from exc
    # conda-meta should name where each package came from, not envforge's checked copy.
    for record in records:
        meta = inside(prefix / "conda-meta", f"{record.name}-{record.version}-{record.build}.json",
                      what="conda record", single=True)
        installed = PrefixRecord.from_path(meta)
        installed.url = record.url
        installed.write_to_path(meta, pretty=True)


async def _install(records: Sequence[LockedCondaPackage], archives: Sequence[Path], prefix: Path,
                   package_cache: Path, subdir: str | None) -> None:
    rattler_records = []
    for record, archive in zip(records, archives, strict=True):
        local: Any = await rattler.RepoDataRecord.from_package_archive(archive)
        local.channel = record.channel
        local.md5 = bytes.fromhex(record.md5)
        rattler_records.append(local)
    await rattler.install(rattler_records, prefix, cache_dir=package_cache,
                          platform=rattler.Subdir(subdir) if subdir else None,
                          execute_link_scripts=False, show_progress=False)


# -- finding conda's envs folder -------------------------------------------------------------

_ROOT_NAMES = ("miniforge3", "mambaforge", "miniconda3", "anaconda3", "Miniconda3", "Anaconda3")


def conda_envs_dir() -> Path | None:
    """The envs folder of this machine's conda installation, or None when there is none."""
    return find_conda_envs_dir(os.environ, home=Path.home(),
                               roots=default_conda_roots(os.environ, Path.home(),
                                                         platform=host_platform()))


def default_conda_roots(environ: Mapping[str, str], home: Path, *,
                        platform: TargetPlatform) -> list[Path]:
    """Where installers put conda by default, per user first, then system-wide."""
    roots = [home / name for name in _ROOT_NAMES]
    match platform.os:
        case Os.WINDOWS:
            for var in ("LOCALAPPDATA", "ProgramData"):
                if environ.get(var):
                    roots += [Path(environ[var]) / name for name in _ROOT_NAMES]
        case Os.LINUX:
            roots += [Path("/opt") / name for name in ("conda", *_ROOT_NAMES[:4])]
        case _:
            assert_never(platform.os)
    return roots


def find_conda_envs_dir(environ: Mapping[str, str], *, home: Path, roots: Sequence[Path] = (),
                        writable: Callable[[Path], bool] | None = None) -> Path | None:
    """Pick conda's envs folder the way conda does, from injected facts.

    ``CONDA_ENVS_DIRS`` (or the older ``CONDA_ENVS_PATH``) wins; otherwise the first conda
    root found from ``CONDA_EXE``, ``CONDA_PREFIX``, ``~/.conda/environments.txt``, then
    ``roots``. A root whose envs folder is not writable (a system-wide install) gives
    ``~/.conda/envs``, as conda does.
    """
    can_write = writable or _writable
    for var in ("CONDA_ENVS_DIRS", "CONDA_ENVS_PATH"):
        first = environ.get(var, "").split(os.pathsep)[0].strip()
        if first:
            return Path(first).expanduser()
    root = next((r for r in _candidate_roots(environ, home, roots) if _is_conda_root(r)), None)
    if root is None:
        return None
    envs = root / "envs"
    return envs if can_write(envs if envs.is_dir() else root) else home / ".conda" / "envs"


def _candidate_roots(environ: Mapping[str, str], home: Path, roots: Sequence[Path]) -> list[Path]:
    found: list[Path] = []
    if environ.get("CONDA_EXE"):
        # <root>/bin/conda, <root>/condabin/conda, <root>\Scripts\conda.exe
        found.append(Path(environ["CONDA_EXE"]).parent.parent)
    for prefix in (environ.get("CONDA_PREFIX"), *_listed_environments(home)):
        if prefix:
            path = Path(prefix)
            found.append(path.parent.parent if path.parent.name == "envs" else path)
    return [*found, *roots]


def _listed_environments(home: Path) -> list[str]:
    try:
        text = (home / ".conda" / "environments.txt").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return []
    return [line.strip() for line in text.splitlines() if line.strip()]


def _is_conda_root(path: Path) -> bool:
    """A base installation, not just any environment: it has conda-meta and condabin."""
    return (path / "conda-meta").is_dir() and (path / "condabin").is_dir()


def _writable(path: Path) -> bool:
    return os.access(path, os.W_OK)
