"""What is installed in an environment, read from its metadata (never imported, nothing
run): conda-meta records, pyvenv.cfg, dist-/egg-info folder names. The one reader for
apply's conda step and doctor's environment facts."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

_METADATA = re.compile(
    r"^(?P<name>[A-Za-z0-9][A-Za-z0-9_.]*?)-(?P<version>\d[^-]*?)(?:-py\d[^-]*)?\.(?:dist|egg)-info$")
_PYVENV_VERSION = re.compile(r"^\s*version(?:_info)?\s*=\s*(\d+\.\d+(?:\.\d+)?)", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class CondaRecord:
    """One conda-meta/*.json record: what conda (or rattler) installed."""

    name: str
    version: str
    sha256: str
    file: Path


def conda_records(prefix: Path) -> Iterator[CondaRecord]:
    """The records of ``prefix/conda-meta`` in name order; unreadable ones are skipped."""
    meta = prefix / "conda-meta"
    if not meta.is_dir():
        return
    for record in sorted(meta.glob("*.json"), key=lambda path: path.name):
        try:
            data = json.loads(record.read_text(encoding="utf-8"))
        except (ValueError, OSError):
            continue
        if isinstance(data, dict) and isinstance(data.get("name"), str):
            yield CondaRecord(data["name"], str(data.get("version", "")),
                              str(data.get("sha256", "")), record)


def installed_records(prefix: Path) -> Iterator[tuple[str, str, Path]]:
    """(name, version, file) of what is installed: conda-meta, pyvenv.cfg, dist-/egg-info
    names, the lib/pythonX.Y folder. Read, not imported: nothing is run."""
    for record in conda_records(prefix):
        yield record.name, record.version, record.file
    pyvenv = prefix / "pyvenv.cfg"
    if pyvenv.is_file():
        match = _PYVENV_VERSION.search(pyvenv.read_text(encoding="utf-8", errors="replace"))
        if match:
            yield "python", match[1], pyvenv
    folders = [*prefix.glob("lib/python3*/site-packages"), prefix / "Lib" / "site-packages",
               *prefix.glob("deb/usr/lib/python3*/dist-packages")]
    for folder in folders:
        if not folder.is_dir():
            continue
        for entry in sorted(folder.iterdir(), key=lambda path: path.name):  # one order on every OS
            match = _METADATA.match(entry.name)
            if match:
                yield match["name"], match["version"], entry
    for folder in (*prefix.glob("lib/python3.*"), *prefix.glob("deb/usr/bin/python3.*")):
        match = re.fullmatch(r"python(3\.\d+)", folder.name)
        if match:
            yield "python", match[1], folder
