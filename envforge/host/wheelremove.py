"""Uninstalling a distribution from an environment by its RECORD, as pip does, touching
nothing outside the environment's prefix (apply replaces an installed version, sync removes
what the lock no longer names)."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path
from typing import Protocol

from packaging.utils import canonicalize_name


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


def remove_distribution(scheme: Sites, name: str) -> list[Path]:
    """Uninstall ``name`` by its RECORD, touching nothing outside the environment's prefix."""
    removed: list[Path] = []
    prefix = scheme.prefix.resolve()
    for dist_info in installed_dist_infos(scheme, name):
        site = dist_info.parent.resolve()
        record = dist_info / "RECORD"
        rows = list(csv.reader(record.read_text(encoding="utf-8").splitlines())) \
            if record.is_file() else []
        for row in rows:
            if not row:
                continue
            path = (site / row[0]).resolve()
            if not (path.is_relative_to(prefix) and path.is_file()):
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
