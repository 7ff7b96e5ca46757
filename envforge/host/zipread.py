"""A zip's members read straight from the mapped archive, as uv's unzip does: one inflate
per member (python-isal's where installed: ISA-L inflates about twice as fast as zlib), no
ZipExtFile between it and the bytes. Unpacking wheels was most of a cold apply's CPU
(bench/results/RESULTS.md): zipfile's per-member seeks and reads, then zlib, on files a
lock's sha256 has already vouched for.

What zipfile checks, this checks: the local header's signature and name against the central
directory's, no encryption, and each member's size and CRC-32; and never more output than
the member declares (a bomb behind a small declared size stops at it). Methods other than
stored and deflate are read through zipfile.
"""

from __future__ import annotations

import mmap
import struct
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from types import ModuleType
from typing import BinaryIO


def _inflater() -> ModuleType:
    """isal's zlib module (a dependency where its wheels exist: pyproject.toml), else zlib:
    the same API, about twice zlib's speed."""
    try:
        from isal import isal_zlib
    except ImportError:  # pragma: no cover - the hosts isal has no wheel for
        return zlib
    return isal_zlib


INFLATER = _inflater()
CHUNK = 1 << 20  # the most a member yields at once, however large it is
_LOCAL = struct.Struct("<4s5H3L2H")  # signature ... name length, extra length
_LOCAL_SIGNATURE = b"PK\x03\x04"
_ENCRYPTED = 0x1
_UTF8 = 0x800


class MappedZip:
    """An open zip: ``infos`` as zipfile lists them, ``read`` one member's bytes."""

    def __init__(self, handle: BinaryIO, mapped: mmap.mmap | None) -> None:
        self._zip = zipfile.ZipFile(handle)
        self._mapped = mapped
        self.infos = self._zip.infolist()

    def read(self, info: zipfile.ZipInfo) -> Iterator[bytes | memoryview]:
        """The member's bytes in pieces of at most ``CHUNK``, each valid until the next is
        asked for (a stored member's are views of the mapping); BadZipFile once they are not
        what the central directory declares (size, CRC-32), before the excess is yielded."""
        if self._mapped is None or info.compress_type not in (zipfile.ZIP_STORED,
                                                              zipfile.ZIP_DEFLATED):
            yield from self._through_zipfile(info)
            return
        start = self._data_start(info)
        end = start + info.compress_size
        if end > len(self._mapped):
            raise zipfile.BadZipFile(f"{info.filename}: its data runs past the archive's end")
        crc, size = 0, 0
        pieces = self._pieces(info, start, end)
        while True:
            try:
                piece = next(pieces)
            except StopIteration:
                break
            except INFLATER.error as exc:
                raise zipfile.BadZipFile(f"{info.filename}: {exc}") from None
            size += len(piece)
            if size > info.file_size:
                raise zipfile.BadZipFile(f"{info.filename}: more bytes than its declared "
                                         f"{info.file_size}")
            crc = INFLATER.crc32(piece, crc)
            yield piece
        if size != info.file_size or crc != info.CRC:
            raise zipfile.BadZipFile(f"{info.filename}: its bytes do not match its declared "
                                     "size and CRC-32")

    def _pieces(self, info: zipfile.ZipInfo, start: int,
                end: int) -> Iterator[bytes | memoryview]:
        assert self._mapped is not None
        with memoryview(self._mapped) as view:
            if info.compress_type == zipfile.ZIP_STORED:
                for at in range(start, end, CHUNK):
                    with view[at:min(at + CHUNK, end)] as piece:
                        yield piece
                return
            inflate = INFLATER.decompressobj(-15)
            for at in range(start, end, CHUNK):
                with view[at:min(at + CHUNK, end)] as window:
                    out = inflate.decompress(window, CHUNK)
                while True:
                    if out:
                        yield out
                    if inflate.eof or not inflate.unconsumed_tail:
                        break
                    out = inflate.decompress(inflate.unconsumed_tail, CHUNK)
                if inflate.eof:
                    break
        rest = inflate.flush()
        if rest:
            yield rest

    def _data_start(self, info: zipfile.ZipInfo) -> int:
        """Where the member's data begins, past its local header, checked as zipfile does."""
        assert self._mapped is not None
        offset = info.header_offset
        if offset + _LOCAL.size > len(self._mapped):
            raise zipfile.BadZipFile(f"{info.filename}: its header lies past the archive's end")
        fields = _LOCAL.unpack_from(self._mapped, offset)
        if fields[0] != _LOCAL_SIGNATURE:
            raise zipfile.BadZipFile(f"{info.filename}: bad magic number for its header")
        flags, name_length, extra_length = fields[2], fields[9], fields[10]
        if flags & _ENCRYPTED or info.flag_bits & _ENCRYPTED:
            raise zipfile.BadZipFile(f"{info.filename}: encrypted")
        begin = offset + _LOCAL.size
        raw = self._mapped[begin:begin + name_length]
        try:
            name = raw.decode("utf-8" if flags & _UTF8 else "cp437")
        except UnicodeDecodeError:
            raise zipfile.BadZipFile(f"{info.filename}: its header's name is not UTF-8") from None
        if name != info.orig_filename:
            raise zipfile.BadZipFile(f"file name in directory {info.orig_filename!r} and "
                                     f"header {name!r} differ")
        return int(begin + name_length + extra_length)

    def _through_zipfile(self, info: zipfile.ZipInfo) -> Iterator[bytes]:
        with self._zip.open(info) as source:
            while piece := source.read(CHUNK):
                yield piece


@contextmanager
def mapped_zip(archive: Path) -> Iterator[MappedZip]:
    """The archive opened and mapped (an empty file cannot be mapped: zipfile refuses it)."""
    with open(archive, "rb") as handle:
        size = handle.seek(0, 2)
        handle.seek(0)
        mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) if size else None
        try:
            yield MappedZip(handle, mapped)
        finally:
            if mapped is not None:
                with suppress(BufferError):  # a piece still held: unmapped once it is freed
                    mapped.close()
