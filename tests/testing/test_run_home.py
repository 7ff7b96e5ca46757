"""tests/conftest.py's run home: a test that names no ENVFORGE_HOME never reaches the user's
own envforge folders."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

from envforge.paths import envforge_dirs


def test_a_test_naming_no_envforge_home_gets_the_runs_not_the_users() -> None:
    users = Path(platformdirs.user_cache_dir("envforge"))
    cache = envforge_dirs().cache
    assert os.environ.get("ENVFORGE_HOME")
    assert cache != users and users not in cache.parents
