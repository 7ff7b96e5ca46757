"""The lock's models: what a re-lock moved, compared between two locks."""

from __future__ import annotations

from pathlib import Path

from envforge.lockfile import load_lock, version_changes
from tests.testing.packs import REGISTRY

COMMITTED = Path(__file__).resolve().parents[2] / "locks" / "theano-cpu.lock"


def test_version_changes_name_what_a_relock_moved_per_platform_and_source() -> None:
    before = load_lock(COMMITTED, REGISTRY)
    linux = before.platforms["linux-64"]
    six = next(f for f in linux.pypi if f.name == "six")
    moved = [f.model_copy(update={"version": "1.15.0"}) if f is six else f
             for f in linux.pypi if f.name != "scipy"]
    added = six.model_copy(update={"name": "colorama", "version": "0.4.6"})
    after = before.model_copy(update={"platforms": {
        **before.platforms,
        "linux-64": linux.model_copy(update={"pypi": (*moved, added), "deb": linux.deb[1:]})}})
    scipy = next(f.version for f in linux.pypi if f.name == "scipy")
    got = [(c.platform, c.source, c.name, c.before, c.after)
           for c in version_changes(before, after)]
    assert got == [("linux-64", "pypi", "colorama", None, "0.4.6"),
                   ("linux-64", "pypi", "scipy", scipy, None),
                   ("linux-64", "pypi", "six", six.version, "1.15.0"),
                   ("linux-64", "deb", linux.deb[0].name, linux.deb[0].version, None)]
    assert version_changes(None, after) == () and version_changes(before, before) == ()
