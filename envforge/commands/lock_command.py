"""``envforge lock [SPEC ...] [--platform P] [--check | --upgrade | -P NAME]``: call
``app.locking``, render.

cli.py registers the command's arguments itself (``commands.BUILT_IN``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from envforge.app.project import Project, lock
from envforge.errors import InputError, ResolveError
from envforge.lockfile import Lockfile, PlatformLock, version_changes, write_lock
from envforge.spec import Platform
from envforge.ui import UI


def run_lock(spec_paths: Sequence[Path], *, platforms: Sequence[Platform], check: bool,
             locks_dir: Path | None, ui: UI, upgrade: bool = False,
             upgrade_packages: Sequence[str] = ()) -> int:
    """The command: lock (or with ``check``, only judge: stale, or edited against its spec)
    each spec; returns the exit code.
    ``upgrade`` resolves afresh rather than keep the lock on disk's versions;
    ``upgrade_packages`` keeps all but these."""
    if not spec_paths:
        spec_paths = sorted(Path("specs").glob("*.toml"))
        if not spec_paths:
            raise InputError("no spec given and no specs/*.toml here")
    projects = [Project.load(path, locks_dir) for path in spec_paths]
    results = []
    exit_code = 0
    for project in projects:
        path, spec, lock_path = project.spec_path, project.spec, project.lock_path
        if check:
            reasons = project.stale_reasons()
            if not reasons:  # its spec's: then what it says must be what the spec gives
                project.fresh_lock()  # a tampered lock: SpecError (exit 2), file:line: key
            results.append({"spec": str(path), "lock": str(lock_path), "fresh": not reasons,
                            "reasons": reasons})
            if reasons:
                exit_code = 3
                ui.info(f"{lock_path}: stale: {'; '.join(reasons)}")
            else:
                ui.success(f"{lock_path}: up to date")
            continue
        notes: list[str] = []
        try:
            previous = project.lock_to_replace()
            with ui.progress(f"locking {spec.name}"):
                locked = lock(project, previous, platforms, notes, upgrade=upgrade,
                              upgrade_packages=upgrade_packages)
        except ResolveError as exc:
            if len(projects) == 1:
                raise
            # One spec's unreachable channel must not stop the others from locking.
            ui.error(f"{path}: {exc}")
            results.append({"spec": str(path), "lock": str(lock_path), "error": str(exc)})
            exit_code = max(exit_code, 1)
            continue
        changed = write_lock(locked, lock_path)
        results.append({"spec": str(path), **show_lock(ui, project, previous, locked,
                                                        changed=changed, notes=notes)})
    if ui.json:
        ui.document("lock", {"results": results, "exit_code": exit_code})
    elif exit_code == 0 and not check:
        ui.next(f"envforge apply {' '.join(str(p.spec_path) for p in projects)}"
                if len(projects) == 1 else "envforge apply SPEC (one of the specs above)")
    return exit_code


def show_lock(ui: UI, project: Project, previous: Lockfile | None, locked: Lockfile, *,
              changed: bool, notes: Sequence[str]) -> dict[str, Any]:
    """The lock's tables (its platforms, and what moved from ``previous``) and the same as
    JSON; ``add`` and ``remove`` show their re-lock so too."""
    lock_path = project.lock_path
    moved = version_changes(previous, locked)
    if notes:
        ui.warn(f"{project.spec.name}: {len(notes)} note(s) from the resolvers, e.g. "
                f"{notes[0]} (all of them: --json)")
    ui.table(f"{lock_path} ({'written' if changed else 'unchanged'})",
             ["platform", "python", "pypi", "conda", "deb", "artifacts"],
             [[p, pl.python, len(pl.pypi), len(pl.conda), len(pl.deb), len(pl.artifacts)]
              for p, pl in locked.platforms.items()])
    if moved:
        ui.table(f"{len(moved)} version(s) moved",
                 ["platform", "source", "package", "before", "after"],
                 [[c.platform, c.source, c.name, c.before or "(new)", c.after or "(removed)"]
                  for c in moved])
    return {"lock": str(lock_path), "changed": changed, "notes": list(notes),
            "moved": [c.model_dump() for c in moved],
            "platforms": {p: _counts(pl) for p, pl in locked.platforms.items()}}


def _counts(platform_lock: PlatformLock) -> dict[str, int]:
    return {"pypi": len(platform_lock.pypi), "conda": len(platform_lock.conda),
            "deb": len(platform_lock.deb), "artifacts": len(platform_lock.artifacts)}
