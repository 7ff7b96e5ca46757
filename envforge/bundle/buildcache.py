"""The host's cache of wheels built from locked sdists; never the lock's business.

A compiled build is not reproducible, so a built wheel's sha256 belongs to the host that
built it, not to a committed lock. An entry is keyed by what makes the wheel: the sdist's
sha256 (the lock's anchor), the build environment the lock pins (its ``build`` table), the
target's Python minor, the platform and the Debian packages handed to the build
(``sysroot``). It is written whole or not at all (a folder renamed into place), and read
back only when its wheel still hashes as its record says: a corrupt or half-written entry is
dropped and the wheel built again.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from envforge.host.archives import sha256_file
from envforge.host.fetch import checked_record, sha256_of
from envforge.host.interpreters import minor
from envforge.lockfile import LockedDeb, PypiBuild
from envforge.spec import PYPI_SIMPLE, Platform

BUILT = "built"  # <cache>/built/<sdist sha256>/<key>/{<wheel>, built.json}
RECORD = "built.json"
KEY_FORMAT = 2  # 1: <cache>/built/<sdist sha256>/ with the constraints in the record


@dataclass(frozen=True)
class BuiltWheel:
    path: Path
    sha256: str
    python: str  # the version that built it
    pure: bool
    build_requires: tuple[str, ...] = ()  # what its build environment held (name==version)


def build_key(build: PypiBuild | None, target_python: str, platform: Platform,
              debs: Sequence[LockedDeb] = ()) -> str:
    """What besides the sdist makes the wheel: the pinned build environment, the target, and
    the Debian packages its build is handed (``sysroot.build_debs``: a lock with none keys
    its entries as before)."""
    from envforge.bundle.sysroot import debs_digest

    pinned = build or PypiBuild(index=PYPI_SIMPLE)
    # without None: a record from before a field was added keys its entries as it did
    fields: dict[str, object] = {"format": KEY_FORMAT,
                                 "build": pinned.model_dump(mode="json", exclude_none=True),
                                 "python": minor(target_python), "platform": platform}
    digest = debs_digest(debs)
    if digest is not None:
        fields["debs"] = digest
    text = json.dumps(fields, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def entry_dir(cache: Path, sdist_sha256: str, key: str) -> Path:
    return cache / BUILT / sdist_sha256 / key


def read_entry(cache: Path, sdist_sha256: str, key: str) -> BuiltWheel | None:
    """The cached wheel when its record is whole and the wheel hashes as recorded; a corrupt
    entry is removed (None: build it again)."""
    folder = entry_dir(cache, sdist_sha256, key)
    if not folder.is_dir():
        return None
    try:
        record = json.loads((folder / RECORD).read_text(encoding="utf-8"))
        built = BuiltWheel(folder / Path(str(record["filename"])).name, str(record["sha256"]),
                           str(record["python"]), bool(record["pure"]),
                           tuple(str(r) for r in record.get("build_requires", ())))
        if built.path.is_file() and sha256_of(built.path, built.sha256, record=checked_record(
                built.path, built.sha256, cache)) == built.sha256:
            return built
    except (OSError, ValueError, KeyError, TypeError):
        pass
    shutil.rmtree(folder, ignore_errors=True)
    return None


def write_entry(cache: Path, sdist_sha256: str, key: str, wheel: Path, *, python: str,
                pure: bool, build_requires: tuple[str, ...], sdist: str) -> BuiltWheel:
    """Move ``wheel`` into the cache with its record, atomically: a staging folder beside the
    entry, renamed into place (an older entry is replaced)."""
    parent = entry_dir(cache, sdist_sha256, key).parent
    parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=parent))
    try:
        target = staging / wheel.name
        shutil.move(wheel, target)
        digest = sha256_file(target)
        (staging / RECORD).write_text(json.dumps(
            {"filename": wheel.name, "sha256": digest, "python": python, "pure": pure,
             "sdist": sdist, "build_requires": list(build_requires)}, indent=2) + "\n",
            encoding="utf-8")
        final = entry_dir(cache, sdist_sha256, key)
        if final.exists():
            shutil.rmtree(final)
        staging.replace(final)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return BuiltWheel(final / wheel.name, digest, python, pure, build_requires)
