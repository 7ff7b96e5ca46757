"""A PEP 503 index served from a folder on 127.0.0.1, and the archives tests put in it: what
uv, lock and init meet on PyPI, with files no index holds (an sdist that fails to build)."""

from __future__ import annotations

import functools
import hashlib
import http.server
import io
import tarfile
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path


def write_tar(path: Path, top: str, files: Mapping[str, str]) -> Path:
    """A .tar.gz holding ``files`` (name -> text) under the folder ``top``, as an sdist is."""
    with tarfile.open(path, "w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"{top}/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def add_project(root: Path, name: str, archive: Path) -> str:
    """List ``archive`` (under ``root/files``) as project ``name``'s one file; its sha256."""
    sha = hashlib.sha256(archive.read_bytes()).hexdigest()
    project = root / "simple" / name
    project.mkdir(parents=True)
    (project / "index.html").write_text(
        f'<html><body><a href="../../files/{archive.name}#sha256={sha}">{archive.name}</a>'
        "</body></html>\n")
    return sha


@contextmanager
def served(root: Path) -> Iterator[str]:
    """``root`` over HTTP while the block runs; the index's URL (``…/simple``)."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/simple"
    finally:
        server.shutdown()
