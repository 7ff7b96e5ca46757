"""What changed in an environment behind envforge's back: distributions the lock does not
name (installed by hand), locked ones at another version, and locked ones whose files no longer
match their RECORD (edited in place). Read-only; ``envforge status`` shows it and ``verify``
judges it (``verify.drift_rows``): a verify pass means the locked stack, and only it, runs."""

from __future__ import annotations

import base64
import csv
import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from envforge.host.wheelremove import INSTALLER
from envforge.lockfile import LockedPypiFile


@dataclass
class Drift:
    extra: list[str] = field(default_factory=list)  # "name version"
    other_version: list[str] = field(default_factory=list)  # "name: locked X, found Y"
    modified: list[str] = field(default_factory=list)  # "name: path"
    missing: list[str] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return not (self.extra or self.other_version or self.modified or self.missing)

    def summary(self) -> str:
        parts = [f"{len(items)} {what}" for what, items in (
            ("not in the lock", self.extra), ("at another version", self.other_version),
            ("with changed files", self.modified), ("missing", self.missing)) if items]
        return "; ".join(parts) or "as locked"


def find_drift(site_packages: Path, locked: Iterable[LockedPypiFile],
               also_expected: Iterable[str] = ()) -> Drift:
    """Compare ``site_packages``' ``*.dist-info`` with the lock; ``also_expected`` names
    distributions another source (conda) put there. Where there is such a source, a
    distribution its installer marked (``INSTALLER`` = conda) is its, whatever its name: a
    conda package's Python part need not share the package's name."""
    wanted = {canonicalize_name(f.name): f.version for f in locked}
    others = {canonicalize_name(n) for n in also_expected}
    drift = Drift()
    seen: set[str] = set()
    records = {info: _records(info) for info in sorted(site_packages.glob("*.dist-info"))}
    shipped = _shipped(records.values(), site_packages)
    for info, rows in records.items():
        name, _, version = info.name.removesuffix(".dist-info").partition("-")
        key = canonicalize_name(name)
        seen.add(key)
        if key in wanted:
            if not _same_version(wanted[key], version):
                drift.other_version.append(f"{name}: locked {wanted[key]}, found {version}")
            else:
                drift.modified += [f"{name}: {p}" for p in _changed(rows, site_packages,
                                                                    shipped)]
        elif key not in others and not (others and _installer(info) == "conda"):
            drift.extra.append(f"{name} {version}")
    drift.missing = sorted(n for n in wanted if n not in seen)
    return drift


def stale_distributions(site_packages: Path, locked: Iterable[LockedPypiFile],
                        also_expected: Iterable[str] = ()) -> list[str]:
    """The distributions the lock does not name that envforge itself installed (INSTALLER
    ``envforge``): an earlier lock's, which apply removes (a user's, marked pip or uv, is
    ``apply --sync``'s to remove). Names only, from the folders' names: no file is hashed."""
    wanted = {canonicalize_name(f.name) for f in locked} | \
        {canonicalize_name(n) for n in also_expected}
    stale = []
    for info in sorted(site_packages.glob("*.dist-info")):
        name = info.name.removesuffix(".dist-info").partition("-")[0]
        if canonicalize_name(name) not in wanted and _installer(info) == INSTALLER:
            stale.append(name)
    return stale


def _same_version(locked: str, found: str) -> bool:
    try:
        return Version(locked) == Version(found)
    except InvalidVersion:
        return locked == found


def _installer(info: Path) -> str:
    try:
        return (info / "INSTALLER").read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return ""


def _records(info: Path) -> list[tuple[str, str]]:
    """RECORD's (path, urlsafe-base64 sha256) rows that carry a hash."""
    record = info / "RECORD"
    if not record.is_file():
        return []
    with record.open(newline="", encoding="utf-8") as handle:
        return [(row[0], row[1].removeprefix("sha256=")) for row in csv.reader(handle)
                if len(row) >= 2 and row[1].startswith("sha256=")]


def _shipped(records: Iterable[list[tuple[str, str]]],
             site_packages: Path) -> dict[Path, set[str]]:
    """Every hash any installed RECORD gives each file: one path can be written twice, by
    one wheel (qtconsole 4.7.7's ``jupyter-qtconsole`` script and entry point) or by two
    (jupyter 1.0.0 and jupyter_core both ship ``jupyter.py``), the later write winning."""
    shipped: dict[Path, set[str]] = {}
    for rows in records:
        for path, digest in rows:
            shipped.setdefault((site_packages / path).resolve(), set()).add(digest)
    return shipped


def _changed(rows: list[tuple[str, str]], site_packages: Path,
             shipped: dict[Path, set[str]]) -> list[str]:
    """The files of a RECORD's ``rows`` whose bytes no installed RECORD hashes so (or that
    are gone)."""
    changed = []
    for name, _ in rows:
        path = (site_packages / name).resolve()
        if not path.is_file():
            changed.append(name)
            continue
        found = base64.urlsafe_b64encode(hashlib.sha256(path.read_bytes()).digest())
        if found.rstrip(b"=").decode() not in shipped[path]:
            changed.append(name)
    return changed
