"""Lock format versions and the steps that bring an older lock to the current one.

The core's format is ``meta.version``; each pack's table carries its own (``lock_version``
beside its keys) and its pack migrates it, before the core's steps, as conda-lock keeps
its versioned migrations. Everything here works on the raw TOML tables, before any model.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from envforge.packapi import Pack, Registry
from envforge.spec import Frozen

# 2: a framework pack's expectations in [platforms.X.expect.NAME] (1: Theano's in the core).
# 3: what apply reads of the spec in [platforms.X.apply] (2: apply read the spec itself), and
#    no framework's key left in the core tables (a pack's own migration takes it first).
LOCK_VERSION = 3
# A pack table's own format version, beside its keys on disk: absent, it is 1.
PACK_TABLE_VERSION = "lock_version"


class LockPack(Pack, Protocol):
    """What the lock reads of a pack: its table's model and its table's migrations."""

    @property
    def expect(self) -> type[Frozen]: ...

    @property
    def lock_version(self) -> int: ...

    @property
    def lock_migrations(self) -> Mapping[int, Callable[[dict[str, Any]], None]]: ...


def migrate(raw: dict[str, Any]) -> dict[str, Any]:
    """A lock of an older core format in the current one's shape, as pipx reads old metadata:
    each core step rewrites every platform table from version N to N + 1, after each pack
    migrated its own table by its own version (``migrate_pack_tables``), which takes the
    pack's keys out of the core tables (1 -> 2 moved them into the pack's table). Format
    2 -> 3 also adds the ``apply`` table, which only the spec can fill: the table stays
    absent and ``lockcheck.stale_reasons`` asks for a re-lock."""
    meta = raw.get("meta")
    platforms = raw.get("platforms")
    if not isinstance(meta, dict) or not isinstance(platforms, dict):
        return raw
    for version in range(int(meta["version"]), LOCK_VERSION):
        for table in platforms.values():
            step = _CORE_STEPS.get(version)
            if step is not None and isinstance(table, dict):
                step(table)
        meta["version"] = version + 1
    return raw


def _drop_stray_keys(table: dict[str, Any]) -> None:
    """2 -> 3: a key format 2 kept in the core expect table for one framework's GPU timing
    (its GEMM against raw cuBLAS), which that pack's migration moved where its table is;
    in a lock of another framework (a TensorFlow GPU lock) nothing read it."""
    expect = table.get("expect")
    if isinstance(expect, dict):
        expect.pop("min_cublas_ratio", None)


_CORE_STEPS: dict[int, Callable[[dict[str, Any]], None]] = {2: _drop_stray_keys}


class TableVersionError(ValueError):
    """A pack table's format version this envforge's pack cannot read."""


def _pack_table_version(pack: LockPack, table: dict[str, Any],
                        core_version: int) -> int | None:
    """The format of a platform table's ``expect.NAME`` table: its ``lock_version`` key,
    else 1; 0 in a lock of core format 1, which kept every pack's keys in the core tables;
    None where it holds none."""
    expect = table.get("expect")
    own = expect.get(pack.name) if isinstance(expect, dict) else None
    if isinstance(own, dict):
        version = own.pop(PACK_TABLE_VERSION, 1)
        if not isinstance(version, int) or isinstance(version, bool) or version < 1:
            raise TableVersionError(f"{pack.name}'s table format {version!r} is not a "
                                     "number from 1")
        if version > pack.lock_version:
            raise TableVersionError(
                f"{pack.name}'s table is format {version}; the installed {pack.name} pack "
                f"reads formats up to {pack.lock_version}: upgrade it, or re-lock")
        return version
    return 0 if core_version < 2 else None


def migrate_pack_tables(raw: dict[str, Any], loc: list[str], core_version: int,
                         registry: Registry[LockPack]) -> None:
    """Bring each pack's expect table to its pack's format: its own migrations, keyed by the
    table's version, before the core's; ``loc`` names the version key of a table refused."""
    platforms = raw.get("platforms")
    for platform, table in (platforms.items() if isinstance(platforms, dict) else ()):
        if not isinstance(table, dict):
            continue
        for pack in registry:
            name = pack.name
            loc[:] = ["platforms", platform, "expect", name, PACK_TABLE_VERSION]
            version = _pack_table_version(pack, table, core_version)
            for step in range(version if version is not None else pack.lock_version,
                              pack.lock_version):
                migration = pack.lock_migrations.get(step)
                if migration is not None:
                    migration(table)
    loc.clear()
