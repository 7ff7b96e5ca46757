"""A wheel's metadata read by byte ranges from a real HTTP server (ranges served, or not),
and init's repair of a pin whose metadata today's resolvers refuse: pandas 0.23.2-0.24.2
require ``pytz (>=2011k)``, which uv calls "invalid metadata"."""

from __future__ import annotations

import http.server
import os
import re
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest

from envforge.app.settling import _repair_build
from envforge.host.http import session
from envforge.importers import Found, Imported
from envforge.importers.propose import Proposal
from envforge.importers.render import Draft
from envforge.importers.repository import Repository
from envforge.resolve.pypi_index import index_files, metadata_parses
from envforge.resolve.remotewheel import wheel_metadata

BAD = "Metadata-Version: 2.1\nName: demo\nVersion: 1.0\nRequires-Dist: pytz (>=2011k)\n"
GOOD = "Metadata-Version: 2.1\nName: demo\nVersion: 1.1\nRequires-Dist: pytz>=2011.11\n"


def _wheel(folder: Path, version: str, metadata: str) -> Path:
    path = folder / f"demo-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(f"demo-{version}.dist-info/METADATA", metadata)  # far from the end
        zf.writestr("demo/data.bin", os.urandom(400 << 10), zipfile.ZIP_STORED)
        zf.writestr(f"demo-{version}.dist-info/RECORD", "")
    return path


class _Ranges(http.server.BaseHTTPRequestHandler):
    """Serves the folder's files, honouring one ``bytes=A-B`` range (as PyPI's CDN does)
    unless the server says it ignores them."""

    folder: Path
    ranges = True
    asked: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        data = (self.folder / self.path.lstrip("/")).read_bytes()
        wanted = re.fullmatch(r"bytes=(\d+)-(\d+)", self.headers.get("Range", ""))
        self.asked.append(self.headers.get("Range", "all"))
        if wanted and self.ranges:
            start, end = int(wanted[1]), int(wanted[2])
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{end}/{len(data)}")
            data = data[start:end + 1]
        else:
            self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, type[_Ranges]]]:
    handler = type("Handler", (_Ranges,), {"folder": tmp_path, "asked": []})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", handler
    finally:
        server.shutdown()


def _listing(base: str, *wheels: Path) -> list[dict[str, object]]:
    return [{"filename": w.name, "url": f"{base}/{w.name}", "size": w.stat().st_size,
             "upload-time": "2019-01-01T00:00:00Z"} for w in wheels]


def test_the_metadata_is_read_by_two_ranges_not_the_wheel(
        tmp_path: Path, served: tuple[str, type[_Ranges]]) -> None:
    base, handler = served
    wheel = _wheel(tmp_path, "1.0", BAD)
    assert wheel.stat().st_size > 300 << 10  # more than the one request for its end
    with session() as http:
        text = wheel_metadata(http, f"{base}/{wheel.name}", wheel.stat().st_size)
    assert text == BAD
    assert len(handler.asked) == 2 and "all" not in handler.asked


def test_bad_metadata_is_told_and_a_server_without_ranges_tells_nothing(
        tmp_path: Path, served: tuple[str, type[_Ranges]]) -> None:
    base, handler = served
    bad, good = _wheel(tmp_path, "1.0", BAD), _wheel(tmp_path, "1.1", GOOD)
    assert metadata_parses(_listing(base, bad)) is False
    assert metadata_parses(_listing(base, good)) is True
    handler.ranges = False  # the whole file comes back: no reading it whole, no verdict
    assert metadata_parses(_listing(base, bad)) is True


def test_a_pin_whose_metadata_is_refused_moves_past_every_release_like_it(
        tmp_path: Path, served: tuple[str, type[_Ranges]]) -> None:
    base, _ = served
    listing = _listing(base, _wheel(tmp_path, "1.0", BAD),
                       _wheel(tmp_path, "1.0.1", BAD.replace("1.0", "1.0.1")),
                       _wheel(tmp_path, "1.1", GOOD))
    draft = Draft(name="r", source="r", platform="linux-64",
                  repository=Repository(("requirements.txt",), Imported(
                      requirements=[Found("demo==1.0", "requirements.txt:1")])),
                  python=Proposal("3.7.16", ""), as_of=Proposal("2019-01-01", ""))
    failure = ("Because demo==1.0 has invalid metadata and you require demo==1.0, we can "
               "conclude that your requirements are unsatisfiable.")
    repaired = _repair_build(draft, failure, lambda index, name: listing)
    assert repaired is not None
    moved = repaired[0].repository.imported.requirements[0]
    assert moved.requirement == "demo==1.1" and "metadata is not valid" in moved.note
    assert repaired[1] == "demo==1.0: its metadata is invalid; moved to demo==1.1"


@pytest.mark.network
def test_pandas_0_23_to_0_24_have_metadata_uv_refuses_and_0_25_does_not() -> None:
    files = index_files("https://pypi.org/simple", "pandas")
    assert files
    from envforge.importers.propose import release_files, repair_pin

    assert metadata_parses(release_files(files, "0.23.4")) is False
    moved = repair_pin(files, "0.23.2", "3.7", failed="x", accept=metadata_parses)
    assert moved is not None and moved.value == "0.25.0"
