"""Reading and writing a lock file: deterministic TOML out, and in, a broken file's error
naming its file, line and key.

The on-disk shape is TOML written with sorted, stable content (no timestamps), so the
same spec and the same index state give identical bytes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import tomli_w
from pydantic import ValidationError

from envforge.errors import SpecError
from envforge.inputfile import LOCK_LIMIT, read_input_text
from envforge.lockfile.migrations import (
    LOCK_VERSION,
    LockPack,
    TableVersionError,
    migrate,
    migrate_pack_tables,
)
from envforge.lockfile.models import Lockfile
from envforge.packapi import Registry
from envforge.spec import load_toml
from envforge.tomlpos import key_lines, line_of


def dumps_lock(lock: Lockfile) -> str:
    """Serialise to TOML deterministically, with a header saying what wrote it."""
    data = lock.model_dump(mode="json", exclude_none=True)
    header = ("# Written by `envforge lock`. Do not edit by hand: re-run `envforge lock`.\n"
              f"# Spec: {lock.meta.spec} ({lock.meta.spec_hash})\n\n")
    return header + tomli_w.dumps(_sorted(data), multiline_strings=False)


def _sorted(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _sorted(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_sorted(v) for v in value]
    return value


def write_lock(lock: Lockfile, path: Path) -> bool:
    """Write the lock atomically; return whether the bytes changed."""
    text = dumps_lock(lock)
    if path.exists() and path.read_text(encoding="utf-8") == text:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
    return True


def load_lock(path: Path | str, registry: Registry[LockPack]) -> Lockfile:
    """Read a lock; a broken one is a SpecError naming file, line and key. ``registry``'s
    packs type and migrate their own tables."""
    path = Path(path)
    text = read_input_text(path, LOCK_LIMIT,
                           missing="no such lock file (run `envforge lock` first)")
    raw = load_toml(text, str(path))
    version = raw.get("meta", {}).get("version")
    if not isinstance(version, int) or isinstance(version, bool) or \
            version not in range(1, LOCK_VERSION + 1):
        raise SpecError(path, f"lock format version {version!r} is not {LOCK_VERSION}; re-lock",
                        key="meta.version", line=line_of(key_lines(text), ("meta", "version")))
    if version == LOCK_VERSION:
        _require_apply(raw, path, text)
    loc: list[str] = []
    try:
        migrate_pack_tables(raw, loc, version, registry)
        if version != LOCK_VERSION:
            raw = migrate(raw)
        _type_pack_tables(raw, loc, registry)
        return Lockfile.model_validate(raw, context={"registry": registry})
    except ValidationError as exc:
        error = exc.errors()[0]
        loc += [str(p) for p in error["loc"]]
        raise SpecError(path, error["msg"], key=".".join(loc),
                        line=line_of(key_lines(text), loc)) from None
    except TableVersionError as exc:
        raise SpecError(path, str(exc), key=".".join(loc),
                        line=line_of(key_lines(text), loc)) from None


def _require_apply(raw: dict[str, Any], path: Path, text: str) -> None:
    """A lock of this format has an ``apply`` table per platform (only a migrated one may
    lack it): one edited out is damage, not an old format."""
    platforms = raw.get("platforms")
    for platform, table in (platforms.items() if isinstance(platforms, dict) else ()):
        if isinstance(table, dict) and "apply" not in table:
            raise SpecError(path, "no apply table (what apply reads of the spec); re-lock",
                            key=f"platforms.{platform}.apply",
                            line=line_of(key_lines(text), ("platforms", str(platform))))


def _type_pack_tables(raw: dict[str, Any], loc: list[str], registry: Registry[LockPack]) -> None:
    """Validate each pack's expect table with its model first, so an error names its key
    and line (``platforms.linux-64.expect.NAME.KEY``); ``loc`` gets the table's path."""
    platforms = raw.get("platforms")
    for platform, table in (platforms.items() if isinstance(platforms, dict) else ()):
        expect = table.get("expect") if isinstance(table, dict) else None
        if not isinstance(expect, dict):
            continue
        for pack in registry:
            name = pack.name
            if isinstance(expect.get(name), dict):
                loc[:] = ["platforms", platform, "expect", name]
                expect[name] = pack.expect.model_validate(expect[name])
    loc.clear()


def lock_path_for(spec_path: Path, locks_dir: Path | None = None) -> Path:
    """``specs/X.toml`` locks to ``locks/X.lock`` beside the specs folder."""
    folder = locks_dir if locks_dir is not None else spec_path.resolve().parent.parent / "locks"
    return folder / f"{spec_path.stem}.lock"
