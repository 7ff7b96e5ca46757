"""Fixtures of the packs' end-to-end tests: a user's HOME of their own, one ENVFORGE_HOME per
module (its cache the run's shared one), no Keras variables from the caller; and verify's JSON
document."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from envforge.cli import main
from tests.testing.homes import enter_home, home_sharing


@pytest.fixture(scope="module")
def envforge_home(tmp_path_factory: pytest.TempPathFactory, shared_cache: Path) -> Path:
    return home_sharing(tmp_path_factory.mktemp("envforge-home"), shared_cache)


@pytest.fixture
def host(envforge_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The user's HOME folder (made empty) with envforge's state in ``envforge_home``."""
    yield enter_home(tmp_path, envforge_home, monkeypatch)


def verify_json(spec: Path, prefix: Path, capsys: pytest.CaptureFixture[str]
                ) -> tuple[int, Any]:
    """``envforge verify --json``'s exit code and document."""
    capsys.readouterr()
    code = main(["verify", str(spec), "--prefix", str(prefix), "--json"])
    return code, json.loads(capsys.readouterr().out)
