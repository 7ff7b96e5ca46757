"""A tree of a user's files for the journal's tests."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A folder with a file of unusual mode, a link and a nested folder."""
    root = tmp_path / "tree"
    (root / "etc").mkdir(parents=True)
    config = root / "etc" / "app.conf"
    config.write_bytes(b"original\x00bytes\n")
    config.chmod(0o640)
    (root / "bin").mkdir()
    (root / "bin" / "tool").write_bytes(b"#!/bin/sh\necho old\n")
    (root / "bin" / "tool").chmod(0o755)
    (root / "current").symlink_to("etc/app.conf")
    return root
