"""``envforge status``'s facts: every environment envforge's state records, and its drift.

Read-only: a damaged record is a row saying so, and a lock that cannot be read leaves the
drift "not checked" with the reason, so status always answers.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from envforge.envlayout import layout_for
from envforge.lockfile import load_lock, lock_path_for
from envforge.paths import EnvforgeDirs
from envforge.spec import Platform


def environments(dirs: EnvforgeDirs) -> list[dict[str, Any]]:
    """One row per state folder with a record: the record, plus ``drift``."""
    from envforge.executor import DamagedStateError, read_record

    rows = []
    if dirs.state.is_dir():
        for state in sorted(dirs.state.iterdir()):
            try:
                record = read_record(state)
            except DamagedStateError as exc:
                record = {"prefix": None, "state": str(exc.path), "complete": False,
                          "damaged": str(exc)}
            if record is not None:
                rows.append({**record, "drift": _drift(record)})
    return rows


def _drift(record: Mapping[str, object]) -> dict[str, Any]:
    """The environment's PyPI packages against its lock (envforge/drift.py)."""
    from envforge.drift import find_drift
    from envforge.errors import EnvforgeError

    try:
        spec_path = Path(str(record["spec"]))
        platform: Platform = record["platform"]  # type: ignore[assignment]
        plock = load_lock(lock_path_for(spec_path)).platforms[platform]
        prefix = Path(str(record["prefix"]))
        site = Path(layout_for(platform, plock.environment, prefix, plock.python).site_packages)
    except (EnvforgeError, KeyError, OSError) as exc:
        return {"summary": f"not checked ({str(exc).splitlines()[0]})"}
    drift = find_drift(site, plock.pypi, also_expected=[c.name for c in plock.conda])
    return {"summary": drift.summary(), "extra": drift.extra,
            "other_version": drift.other_version, "modified": drift.modified,
            "missing": drift.missing}
