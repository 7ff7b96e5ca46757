"""Output through a pipe whose code page cannot encode every character envforge prints."""

from __future__ import annotations

import io

import pytest

from envforge import cli
from envforge.ui import UI


def test_characters_the_code_page_lacks_are_replaced_not_fatal(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """On Windows a piped stdout/stderr uses the ANSI code page (cp1252), which has no →:
    `envforge doctor --fix --dry-run | more` died with UnicodeEncodeError before the fix."""
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding="cp1252")
    monkeypatch.setattr("sys.stderr", stream)
    monkeypatch.setattr("sys.stdout", io.TextIOWrapper(io.BytesIO(), encoding="cp1252"))

    cli._tolerant_streams()
    UI().error("device = gpu → device = cuda, é kept")
    stream.flush()

    assert b"device = gpu ? device = cuda, \xe9 kept" in raw.getvalue()
