"""A project: one spec file, read and validated, and where its lock lives.

Every command that starts from a spec (lock, plan/apply, verify, doctor, bundle) loads it
here, so "which lock belongs to this spec" and "is it still the spec's" have one answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from envforge.app.packs import installed_packs
from envforge.errors import InputError
from envforge.lockcheck import check_lock, ensure_fresh, stale_reasons
from envforge.lockfile import Lockfile, load_lock, lock_path_for
from envforge.packapi import Registry
from envforge.packs import FrameworkPack
from envforge.spec import Platform, Spec, load_spec


@dataclass(frozen=True)
class Project:
    """A validated spec and its lock's path; the lock itself is read when asked for."""

    spec_path: Path
    spec: Spec
    lock_path: Path
    # the packs the spec was read with, handed to whatever the project's use cases call
    registry: Registry[FrameworkPack] = field(default_factory=installed_packs)

    @classmethod
    def load(cls, spec_path: Path | str, locks_dir: Path | None = None,
             registry: Registry[FrameworkPack] | None = None) -> Project:
        """SpecError (exit 2, file:line:key) for a bad spec; no lock is read yet. The packs
        are the installed ones unless ``registry`` is given."""
        path = Path(spec_path)
        packs = registry if registry is not None else installed_packs()
        return cls(spec_path=path, spec=load_spec(path, packs),
                   lock_path=lock_path_for(path, locks_dir), registry=packs)

    def previous_lock(self) -> Lockfile | None:
        """The lock on disk, or None where there is none yet (it may be stale)."""
        return load_lock(self.lock_path, self.registry) if self.lock_path.exists() else None

    def lock_to_replace(self) -> Lockfile | None:
        """The lock on disk that a new lock of this spec replaces (its versions preferred),
        or None; refused where it is another spec's, of another name and file (exit 2,
        nothing written; a spec renamed or moved keeps its lock): specs outside a
        ``specs/`` folder lock beside their folder (``REPO/envforge.toml`` to
        ``REPO/../locks/envforge.lock``), where a sibling repository's spec of the same file
        name locks too, and each lock would overwrite the other's and take its versions."""
        from envforge.app.locking import spec_label  # apply, plan and run never lock

        previous = self.previous_lock()
        if previous is not None and previous.meta.spec_name != self.spec.name \
                and previous.meta.spec != spec_label(self.spec_path, self.lock_path):
            raise InputError(
                f"{self.lock_path} is the lock of another spec, {previous.meta.spec_name!r} "
                f"({previous.meta.spec}), not of {self.spec.name!r} ({self.spec_path}): "
                f"nothing written; lock with --locks-dir DIR, or keep the spec in a specs/ "
                f"folder of its own project (its lock then goes to locks/ beside it)")
        return previous

    def fresh_lock(self, *, references: bool = False, memo: Path | None = None) -> Lockfile:
        """The lock, refused unless it is its spec's (exit 3) and says what the spec would
        lock (a tampered one: exit 2): what plan, apply, verify and run may use. The kernels'
        references are read, not recomputed, unless ``references`` (which needs NumPy).
        ``memo``: the folder of passed checks (``host.lockmemo``): the same spec, lock and
        envforge are not judged again, and a check that passes is held for
        ``lockmemo.keep_held``."""
        lock = load_lock(self.lock_path, self.registry)
        ensure_fresh(self.spec, lock, self.lock_path)
        if memo is None:
            check_lock(self.spec, lock, self.lock_path, self.registry, references=references)
            return lock
        from envforge.host import lockmemo

        key = lockmemo.digest(self.spec.model_dump_json(), lock.model_dump_json(),
                              references=references, packs=self.registry)
        if not lockmemo.passed(memo, self.lock_path, key):
            check_lock(self.spec, lock, self.lock_path, self.registry, references=references)
            lockmemo.hold(memo, self.lock_path, key)
        return lock

    def stale_reasons(self) -> list[str]:
        """Why the lock on disk is not the spec's; ``["no lock file"]`` where there is none."""
        previous = self.previous_lock()
        return ["no lock file"] if previous is None else stale_reasons(self.spec, previous)


def lock(project: Project, previous: Lockfile | None, platforms: Sequence[Platform] = (),
         notes: list[str] | None = None, upgrade: bool = False,
         upgrade_packages: Sequence[str] = ()) -> Lockfile:
    """The project's lock (not written), given the lock on disk (``previous_lock()``, read
    by the caller, who also shows what moved from it): platforms already locked for this
    exact spec are reused, the others keep its versions where the spec allows
    (``upgrade``: neither; ``upgrade_packages``: all but these); resolvers' remarks are
    appended to ``notes``."""
    from envforge.app.locking import lock_spec  # apply, plan and run never lock

    return lock_spec(project.spec, project.registry, platforms=platforms or None,
                     previous=previous,
                     lock_path=project.lock_path, notes=notes, upgrade=upgrade,
                     upgrade_packages=upgrade_packages)
