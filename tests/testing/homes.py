"""An ENVFORGE_HOME of a test's own whose cache is the run's shared one (``shared_cache``), or
whose cache is its own but for Theano's compiled-module store."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from envforge.packs.theano.compilecache import STORE


def home_sharing(home: Path, cache: Path) -> Path:
    """``home`` made, its ``cache`` a link to ``cache``: data and state stay the test's."""
    home.mkdir(parents=True, exist_ok=True)
    (home / "cache").symlink_to(cache, target_is_directory=True)
    return home


def home_sharing_modules(home: Path, cache: Path) -> Path:
    """``home`` made with a cache of its own (empty, for a test that a bundle must serve or
    whose environment's files it edits through the cache's hard links) but for Theano's
    compiled-module store, a link to ``cache``'s: g++'s work on a lock is done once per run,
    not once per such test. Verify copies modules out of the store and checks each by its
    hash, never links them, so what a test does to its environment cannot reach the store."""
    store = cache / STORE
    store.mkdir(parents=True, exist_ok=True)
    (home / "cache").mkdir(parents=True)
    (home / "cache" / STORE).symlink_to(store, target_is_directory=True)
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
