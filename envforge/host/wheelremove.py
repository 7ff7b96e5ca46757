"""Uninstalling a distribution from an environment by its RECORD, as pip does, touching
nothing outside the environment's prefix (apply replaces an installed version, sync removes
what the lock no longer names)."""

from __future__ import annotations

import csv
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Protocol

from packaging.utils import canonicalize_name

# What envforge writes into each distribution's INSTALLER file (the packaging spec's
# "Recording installed projects": the tool that installed it); a distribution marked so is
# envforge's own, one marked pip or uv a user's
INSTALLER = "envforge"


class Sites(Protocol):
    """Where an environment keeps its distributions (``wheelinstall.TargetScheme`` is one)."""

    @property
    def prefix(self) -> Path: ...

    @property
    def purelib(self) -> Path: ...

    @property
    def platlib(self) -> Path: ...


def installed_dist_infos(scheme: Sites, name: str) -> list[Path]:
    wanted = canonicalize_name(name)
    found = []
    for site in dict.fromkeys((scheme.purelib, scheme.platlib)):
        if site.is_dir():
            found += [d for d in site.glob("*.dist-info")
                      if canonicalize_name(d.name.partition("-")[0]) == wanted]
    return sorted(found)


def claimed_paths(scheme: Sites, excluding: Iterable[str]) -> frozenset[Path]:
    """Every file the RECORD of an installed distribution other than ``excluding`` lists
    (resolved): what uninstalling one of those must leave, where two distributions install
    the same module (tensorflow and tensorflow_gpu both hold tensorflow/)."""
    skipped = {canonicalize_name(n) for n in excluding}
    claimed: set[Path] = set()
    for site in dict.fromkeys((scheme.purelib, scheme.platlib)):
        for dist_info in sorted(site.glob("*.dist-info")) if site.is_dir() else ():
            if canonicalize_name(dist_info.name.partition("-")[0]) in skipped:
                continue
            site_root = dist_info.parent.resolve()
            claimed.update((site_root / row[0]).resolve() for row in _rows(dist_info) if row)
    return frozenset(claimed)


def _rows(dist_info: Path) -> list[list[str]]:
    record = dist_info / "RECORD"
    return list(csv.reader(record.read_text(encoding="utf-8").splitlines())) \
        if record.is_file() else []


def remove_distributions(scheme: Sites, names: Iterable[str]) -> None:
    """Uninstall each of ``names``, keeping every file another installed distribution's
    RECORD also lists (``claimed_paths``)."""
    names = list(names)
    keep = claimed_paths(scheme, excluding=names)
    for name in names:
        remove_distribution(scheme, name, keep=keep)


def remove_distribution(scheme: Sites, name: str,
                        keep: frozenset[Path] = frozenset()) -> list[Path]:
    """Uninstall ``name`` by its RECORD, touching nothing outside the environment's prefix,
    and no file of ``keep`` (another distribution's: ``claimed_paths``)."""
    removed: list[Path] = []
    prefix = scheme.prefix.resolve()
    for dist_info in installed_dist_infos(scheme, name):
        site = dist_info.parent.resolve()
        for row in _rows(dist_info):
            if not row:
                continue
            path = (site / row[0]).resolve()
            if not (path.is_relative_to(prefix) and path.is_file()) or path in keep:
                continue
            path.unlink()
            removed.append(path)
            if path.suffix == ".py":  # the target's own bytecode is not in RECORD
                for cached in path.parent.glob(f"__pycache__/{path.stem}.*.pyc"):
                    cached.unlink()
                _prune(path.parent / "__pycache__", site)
            _prune(path.parent, site)
        shutil.rmtree(dist_info, ignore_errors=True)
        removed.append(dist_info)
    return removed


def _prune(folder: Path, site: Path) -> None:
    """Remove folders left empty by an uninstall, up to the site folder."""
    while folder != site and folder.is_relative_to(site) and folder.is_dir() \
            and not any(folder.iterdir()):
        folder.rmdir()
        folder = folder.parent
