"""What changed in an environment behind envforge's back: distributions the lock does not
name (installed by hand), locked ones at another version, and locked ones whose files no longer
match their RECORD (edited in place). Read-only; ``envforge status`` shows it and ``verify``
judges it (``drift_rows``): a verify pass means the locked stack, and only it, is what runs."""

from __future__ import annotations

import base64
import csv
import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from envforge.lockfile import LockedPypiFile
from envforge.verify import CheckRow

_SHOWN = 5  # items named in a row; the rest counted


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
    for info in sorted(site_packages.glob("*.dist-info")):
        name, _, version = info.name.removesuffix(".dist-info").partition("-")
        key = canonicalize_name(name)
        seen.add(key)
        if key in wanted:
            if not _same_version(wanted[key], version):
                drift.other_version.append(f"{name}: locked {wanted[key]}, found {version}")
            else:
                drift.modified += [f"{name}: {p}" for p in changed_files(info, site_packages)]
        elif key not in others and not (others and _installer(info) == "conda"):
            drift.extra.append(f"{name} {version}")
    drift.missing = sorted(n for n in wanted if n not in seen)
    return drift


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


def drift_rows(drift: Drift, *, sync: str = "envforge apply SPEC --sync") -> tuple[CheckRow, ...]:
    """Verify's rows for drift. Each fails when it finds something, the extra one included:
    a distribution the lock does not name is code on the environment's path that nothing
    vouches for (it can shadow a locked module or run a ``.pth`` at start-up), so a pass
    would no longer mean that the locked stack is what runs. ``sync`` is the command that
    fixes it, shown in each failing row."""
    def row(name: str, expected: str, items: list[str], why: str) -> CheckRow:
        if not items:
            return CheckRow(name, expected, expected, "pass")
        shown = "; ".join(items[:_SHOWN]) + (f"; and {len(items) - _SHOWN} more"
                                             if len(items) > _SHOWN else "")
        return CheckRow(name, expected, shown, "fail", f"{why}; `{sync}` restores the locked set")

    return (
        row("drift.versions", "every locked distribution at its locked version",
            [*drift.other_version, *(f"{n}: missing" for n in drift.missing)],
            "the environment does not hold the locked versions"),
        row("drift.files", "every locked file as its RECORD hashes it", drift.modified,
            "files were changed after install"),
        row("drift.extra", "no distribution the lock does not name", drift.extra,
            "installed behind envforge's back: not locked, not verified"),
    )


def changed_files(info: Path, site_packages: Path) -> list[str]:
    """Files RECORD lists with a sha256 that is no longer theirs (or that are gone)."""
    record = info / "RECORD"
    if not record.is_file():
        return []
    changed = []
    with record.open(newline="", encoding="utf-8") as handle:
        for row in csv.reader(handle):
            if len(row) < 2 or not row[1].startswith("sha256="):
                continue
            path = (site_packages / row[0]).resolve()
            if not path.is_file():
                changed.append(row[0])
                continue
            digest = base64.urlsafe_b64encode(hashlib.sha256(path.read_bytes()).digest())
            if digest.rstrip(b"=").decode() != row[1].removeprefix("sha256="):
                changed.append(row[0])
    return changed
