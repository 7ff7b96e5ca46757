"""A bundle's manifest read from what the user names: a file, a FIFO or a deep document is
one line and exit 2, never a traceback (issue 29 #9)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from envforge.bundle.manifest import MANIFEST
from envforge.cli import main
from tests.faults.harness import snapshot


@pytest.mark.posix_only("fifos")
@pytest.mark.parametrize("kind", ["file", "fifo-manifest", "deep-manifest"])
def test_bundle_check_of_no_bundle_folder_is_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str) -> None:
    target = tmp_path / "bundle"
    if kind == "file":
        target.write_text("not a bundle\n")
    else:
        target.mkdir()
        if kind == "fifo-manifest":
            os.mkfifo(target / MANIFEST)
        else:
            (target / MANIFEST).write_text("[" * 100_000 + "]" * 100_000)
    before = snapshot(tmp_path)
    assert main(["bundle", "--check", str(target)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unexpected error" not in err, err
    words = {"file": f"{target}: not a folder", "fifo-manifest": "a FIFO, not a regular file",
             "deep-manifest": "nested too deeply"}[kind]
    assert words in err
    assert snapshot(tmp_path) == before
