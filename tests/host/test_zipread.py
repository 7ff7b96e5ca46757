"""Zip members read from the mapped archive: the same bytes zipfile reads, for every method a
zip may use, and refusals where zipfile's own checks would refuse (zips written by zipfile,
then altered byte by byte)."""

from __future__ import annotations

import os
import platform
import struct
import zipfile
from pathlib import Path

import pytest

from envforge.errors import ArtifactError
from envforge.host import zipread
from envforge.host.archives import sha256_file
from envforge.host.unpacked import entry_path, unpacked_wheel
from envforge.host.zipread import CHUNK, mapped_zip

COMPRESSIBLE = b"".join(b"line %d of a module\n" % i for i in range(400_000))  # ~8 MiB


def _zip(path: Path, members: dict[str, tuple[bytes, int]]) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, (data, method) in members.items():
            zf.writestr(zipfile.ZipInfo(name, (2020, 1, 1, 0, 0, 0)), data,
                        compress_type=method)
    return path


def _read_all(path: Path) -> dict[str, bytes]:
    with mapped_zip(path) as archive:
        found = {}
        for info in archive.infos:
            pieces = [bytes(p) for p in archive.read(info)]  # each valid until the next
            assert all(len(p) <= CHUNK for p in pieces)
            found[info.filename] = b"".join(pieces)
        return found


def test_members_read_as_zipfile_reads_them(tmp_path: Path) -> None:
    noise = os.urandom(3 * CHUNK + 17)  # deflate cannot shrink it: several input windows
    members = {
        "pkg/__init__.py": (b"x = 1\n", zipfile.ZIP_DEFLATED),
        "pkg/big.txt": (COMPRESSIBLE, zipfile.ZIP_DEFLATED),  # one window, many outputs
        "pkg/noise.bin": (noise, zipfile.ZIP_DEFLATED),
        "pkg/stored.bin": (noise, zipfile.ZIP_STORED),
        "pkg/empty": (b"", zipfile.ZIP_DEFLATED),
        "pkg/bz2.txt": (COMPRESSIBLE[:100_000], zipfile.ZIP_BZIP2),
        "pkg/lzma.txt": (COMPRESSIBLE[:100_000], zipfile.ZIP_LZMA),
        "pkg/ünïcode.txt": (b"named in UTF-8\n", zipfile.ZIP_DEFLATED),
    }
    archive = _zip(tmp_path / "a.zip", members)
    assert _read_all(archive) == {name: data for name, (data, _) in members.items()}


def test_the_fast_inflate_is_the_one_in_use_where_isal_has_wheels() -> None:
    if platform.machine().lower() not in ("x86_64", "amd64", "aarch64", "arm64"):
        pytest.skip(f"isal has no wheel for {platform.machine()}: zlib is used")
    assert zipread.INFLATER.__name__ == "isal.isal_zlib"


def _data_offset(blob: bytes, name: bytes) -> int:
    header = blob.index(b"PK\x03\x04")  # the first local header
    while True:
        name_length, extra_length = struct.unpack_from("<HH", blob, header + 26)
        if blob[header + 30:header + 30 + name_length] == name:
            return int(header + 30 + name_length + extra_length)
        header = blob.index(b"PK\x03\x04", header + 4)


def test_a_flipped_byte_is_refused(tmp_path: Path) -> None:
    archive = _zip(tmp_path / "a.zip", {"a.txt": (COMPRESSIBLE, zipfile.ZIP_DEFLATED),
                                         "b.bin": (b"stored bytes" * 100, zipfile.ZIP_STORED)})
    for name in (b"a.txt", b"b.bin"):
        blob = bytearray(archive.read_bytes())
        blob[_data_offset(bytes(blob), name) + 40] ^= 0xFF
        altered = tmp_path / f"altered-{name.decode()}.zip"
        altered.write_bytes(bytes(blob))
        with pytest.raises(zipfile.BadZipFile):
            _read_all(altered)


def test_more_output_than_declared_stops_at_the_declared_size(tmp_path: Path) -> None:
    """A bomb behind a small declared size: both headers say 1,000 bytes, the data inflates
    to 8 MiB; nothing past the 1,000 is handed on."""
    archive = _zip(tmp_path / "a.zip", {"a.txt": (COMPRESSIBLE, zipfile.ZIP_DEFLATED)})
    blob = bytearray(archive.read_bytes())
    struct.pack_into("<L", blob, 22, 1000)  # the local header's uncompressed size
    central = blob.index(b"PK\x01\x02")
    struct.pack_into("<L", blob, central + 24, 1000)
    archive.write_bytes(bytes(blob))
    handed: list[int] = []
    with mapped_zip(archive) as opened, pytest.raises(zipfile.BadZipFile, match="declared"):
        for piece in opened.read(opened.infos[0]):
            handed.append(len(piece))
    assert sum(handed) <= 1000


def test_a_local_header_naming_another_file_is_refused(tmp_path: Path) -> None:
    archive = _zip(tmp_path / "a.zip", {"abc.txt": (b"hello", zipfile.ZIP_DEFLATED)})
    blob = archive.read_bytes().replace(b"abc.txt", b"xyz.txt", 1)  # the local header's
    archive.write_bytes(blob)
    with pytest.raises(zipfile.BadZipFile, match="differ"):
        _read_all(archive)


def test_a_header_name_that_is_not_utf8_is_refused(tmp_path: Path) -> None:
    archive = _zip(tmp_path / "a.zip", {"ünï.txt": (b"hello", zipfile.ZIP_DEFLATED)})
    blob = archive.read_bytes()
    local_name = "ünï.txt".encode()
    archive.write_bytes(blob.replace(local_name, b"\xff\xfe" + local_name[2:], 1))
    with pytest.raises(zipfile.BadZipFile, match="not UTF-8"):
        _read_all(archive)


def test_a_corrupt_wheel_makes_no_entry(tmp_path: Path) -> None:
    wheel = _zip(tmp_path / "demo-1.0-py3-none-any.whl",
                 {"demo/__init__.py": (COMPRESSIBLE, zipfile.ZIP_DEFLATED)})
    blob = bytearray(wheel.read_bytes())
    blob[_data_offset(bytes(blob), b"demo/__init__.py") + 100] ^= 0xFF
    wheel.write_bytes(bytes(blob))
    sha256 = sha256_file(wheel)
    with pytest.raises(ArtifactError, match="not a readable wheel"):
        unpacked_wheel(tmp_path / "cache", wheel, sha256)
    assert not entry_path(tmp_path / "cache", sha256).exists()
    assert not [p for p in entry_path(tmp_path / "cache", sha256).parent.iterdir()]
