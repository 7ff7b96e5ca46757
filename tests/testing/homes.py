"""An ENVFORGE_HOME of a test's own whose cache is the run's shared one (``shared_cache``)."""

from __future__ import annotations

from pathlib import Path


def home_sharing(home: Path, cache: Path) -> Path:
    """``home`` made, its ``cache`` a link to ``cache``: data and state stay the test's."""
    home.mkdir(parents=True, exist_ok=True)
    (home / "cache").symlink_to(cache, target_is_directory=True)
    return home
