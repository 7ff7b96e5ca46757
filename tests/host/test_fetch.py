"""Downloads from file URLs: the URL's path is this platform's path."""

from __future__ import annotations

import hashlib
from pathlib import Path

from envforge.host.fetch import FileRef, download


def test_a_file_url_is_read_from_the_path_it_names(tmp_path: Path) -> None:
    """``Path.as_uri()`` gives ``file:///C:/...`` on Windows; the path read must be ``C:\\...``,
    not ``\\C:\\...`` (every compiler-artifact read failed so under Windows)."""
    source = tmp_path / "x86_64 mingw%41.7z"
    source.write_bytes(b"7z\xbc\xaf\x27\x1c archive bytes")
    ref = FileRef(url=source.as_uri(), sha256=hashlib.sha256(source.read_bytes()).hexdigest(),
                  filename=source.name)
    target = tmp_path / "cache" / source.name

    download(ref, target)

    assert target.read_bytes() == source.read_bytes()
