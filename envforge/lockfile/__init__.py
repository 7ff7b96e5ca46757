"""The lockfile: exact artifacts per platform plus what verify must find, as frozen models.

A leaf package, as conda-lock keeps its lock models: ``models`` (the pydantic models),
``migrations`` (the format versions and the steps from an older one), ``io`` (the file).
``version`` guards the format. Import from here: these names are the package's API.
"""

from envforge.lockfile.io import dumps_lock, load_lock, lock_path_for, write_lock
from envforge.lockfile.migrations import LOCK_VERSION, PACK_TABLE_VERSION, LockPack, migrate
from envforge.lockfile.models import (
    CORE_ARTIFACT_ROLES,
    ApplyInputs,
    ConvParams,
    Expectations,
    KernelExpectation,
    LockedArtifact,
    LockedCondaPackage,
    LockedDeb,
    LockedPypiFile,
    Lockfile,
    LockMeta,
    PlatformLock,
    PypiBuild,
    RolePack,
    SuiteLock,
    VersionChange,
    artifact_roles,
    table_version,
    version_changes,
)

__all__ = [
    "CORE_ARTIFACT_ROLES",
    "LOCK_VERSION",
    "PACK_TABLE_VERSION",
    "ApplyInputs",
    "ConvParams",
    "Expectations",
    "KernelExpectation",
    "LockMeta",
    "LockPack",
    "LockedArtifact",
    "LockedCondaPackage",
    "LockedDeb",
    "LockedPypiFile",
    "Lockfile",
    "PlatformLock",
    "PypiBuild",
    "RolePack",
    "SuiteLock",
    "VersionChange",
    "artifact_roles",
    "dumps_lock",
    "load_lock",
    "lock_path_for",
    "migrate",
    "table_version",
    "version_changes",
    "write_lock",
]
