"""An ENVFORGE_HOME of a test's own whose cache is the run's shared one (``shared_cache``)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


def home_sharing(home: Path, cache: Path) -> Path:
    """``home`` made, its ``cache`` a link to ``cache``: data and state stay the test's."""
    home.mkdir(parents=True, exist_ok=True)
    (home / "cache").symlink_to(cache, target_is_directory=True)
    return home


def enter_home(tmp_path: Path, envforge_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A user HOME of the test's own (made empty) with envforge's state in ``envforge_home``;
    the real pyenv stays findable, and no Keras variable of the caller's leaks in."""
    monkeypatch.setenv("PYENV_ROOT", os.environ.get("PYENV_ROOT", str(Path.home() / ".pyenv")))
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("ENVFORGE_HOME", str(envforge_home))
    monkeypatch.delenv("KERAS_BACKEND", raising=False)
    monkeypatch.delenv("KERAS_HOME", raising=False)
    return home
