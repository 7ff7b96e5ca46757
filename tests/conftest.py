"""Fixtures for resolver tests: a local conda channel of real packages, built once per session."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.testing.conda_channel import serve, shared_channel


@pytest.fixture(scope="session")
def conda_channel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The built channel's folder (read-only by convention: copy it to tamper)."""
    return shared_channel(tmp_path_factory)


@pytest.fixture(scope="session")
def conda_channel_http(conda_channel: Path) -> Iterator[str]:
    """The same channel served over HTTP on localhost."""
    with serve(conda_channel) as url:
        yield url
