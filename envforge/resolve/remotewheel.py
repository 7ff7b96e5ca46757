"""A wheel's METADATA read from the index without downloading the wheel: HTTP range
requests for the zip's end (its central directory) and for the one member, as pip's lazy
wheel and uv do where the index serves no PEP 658 ``.metadata`` file (PyPI's files from
before 2023 have none)."""

from __future__ import annotations

import io
import zipfile
from typing import Any

_TAIL = 256 << 10  # one request for the end: the central directory of most wheels
_LIMIT = 1 << 20  # a METADATA larger than this is not read
_AHEAD = 64 << 10  # read ahead of a member's local header


class RangeFile(io.RawIOBase):
    """A remote file of known size, read by range requests for zipfile; the tail fetched
    once; a read of more than ``limit`` bytes refused (None: no limit)."""

    def __init__(self, http: Any, url: str, size: int, timeout: float,
                 limit: int | None = _LIMIT) -> None:
        self._http, self._url, self._size, self._timeout = http, url, size, timeout
        self._limit = limit
        self._pos = 0
        start = max(0, size - _TAIL)
        self._tail_start, self._tail = start, self._fetch(start, size)
        self._window_start, self._window = 0, b""  # the last range read before the tail

    def _fetch(self, start: int, end: int) -> bytes:
        response = self._http.get(self._url, headers={"Range": f"bytes={start}-{end - 1}"},
                                  timeout=self._timeout)
        response.raise_for_status()
        if response.status_code != 206:  # the whole file: no ranges served
            raise OSError(f"{self._url}: the server sends no byte ranges")
        return bytes(response.content)

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._size}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def read(self, size: int = -1) -> bytes:
        end = self._size if size is None or size < 0 else min(self._size, self._pos + size)
        if self._limit is not None and end - self._pos > self._limit:
            raise OSError(f"{self._url}: a read of {end - self._pos} bytes; refused")
        if self._pos >= self._tail_start:
            data = self._tail[self._pos - self._tail_start:end - self._tail_start]
        elif end <= self._pos:
            data = b""
        else:  # a member's header, name and data are read apart: one range for them all
            if not (self._window_start <= self._pos
                    and end <= self._window_start + len(self._window)):
                self._window_start = self._pos
                self._window = self._fetch(
                    self._pos, max(end, min(self._tail_start, self._pos + _AHEAD)))
            data = self._window[self._pos - self._window_start:end - self._window_start]
        self._pos += len(data)
        return data


def wheel_metadata(http: Any, url: str, size: int, *, timeout: float = 30) -> str | None:
    """The text of the wheel's ``*.dist-info/METADATA``; None where the wheel holds none."""
    with zipfile.ZipFile(RangeFile(http, url, size, timeout)) as wheel:
        for info in wheel.infolist():
            parts = info.filename.split("/")
            if len(parts) == 2 and parts[0].endswith(".dist-info") and parts[1] == "METADATA" \
                    and info.file_size <= _LIMIT:
                return wheel.read(info).decode("utf-8", "replace")
    return None
