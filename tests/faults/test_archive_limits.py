"""Hostile archives (issue 10 #8, #9, #12): bounded work, one-line errors, nothing partial.

Each archive is real, made here with the standard library or py7zr; each is refused by the
same code apply uses, before a byte is written or with what was written removed again.
"""

from __future__ import annotations

import gzip
import io
import struct
import tarfile
import time
import warnings
import zipfile
from pathlib import Path

import pytest

from envforge.errors import ArtifactError
from envforge.host.archives import MIN_BUDGET
from envforge.host.debunpack import unpack_deb
from envforge.host.sevenzip import extract_7z
from envforge.host.unarchive import extract_archive

BOMB = MIN_BUDGET + (16 << 20)  # just over the floor: compresses to well under 1 MiB


class _Zeros(io.RawIOBase):
    def __init__(self, size: int) -> None:
        self.left = size

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        n = min(len(buffer), self.left)
        buffer[:n] = bytes(n)
        self.left -= n
        return n


def _tar_bytes(members: list[tuple[str, int]], mode: str = "w") -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode=mode) as tar:  # type: ignore[call-overload]
        for name, size in members:
            info = tarfile.TarInfo(name)
            info.size = size
            tar.addfile(info, io.BufferedReader(_Zeros(size)))
    return out.getvalue()


def _ar(members: list[tuple[str, bytes]], sizes: dict[str, str] | None = None) -> bytes:
    out = b"!<arch>\n"
    for name, data in members:
        size = (sizes or {}).get(name, str(len(data)))
        out += f"{name:<16}{'0':<12}{'0':<6}{'0':<6}{'100644':<8}{size:<10}`\n".encode() + data
        out += b"\n" if len(data) % 2 else b""
    return out


def _deb(path: Path, data_tar_gz: bytes, sizes: dict[str, str] | None = None) -> Path:
    path.write_bytes(_ar([("debian-binary", b"2.0\n"), ("control.tar.gz", b""),
                          ("data.tar.gz", data_tar_gz)], sizes))
    return path


def _gone(dest: Path) -> bool:
    return not dest.exists() or not any(dest.iterdir())


def test_an_ar_member_with_a_negative_size_is_refused_at_once(tmp_path: Path) -> None:
    deb = _deb(tmp_path / "neg.deb", gzip.compress(_tar_bytes([("a", 1)])),
               sizes={"control.tar.gz": "-61"})
    started = time.perf_counter()
    with pytest.raises(ArtifactError, match=r"corrupt ar member size '-61'"):
        unpack_deb(deb, tmp_path / "root")
    assert time.perf_counter() - started < 1
    assert not (tmp_path / "root").exists()


def test_an_oversized_ar_member_is_refused(tmp_path: Path) -> None:
    deb = _deb(tmp_path / "big.deb", gzip.compress(_tar_bytes([("a", 1)])),
               sizes={"data.tar.gz": "9999999999"})
    with pytest.raises(ArtifactError, match="truncated"):
        unpack_deb(deb, tmp_path / "root")


@pytest.mark.parametrize("kind", ["tgz", "zip", "deb", "7z"])
def test_a_decompression_bomb_is_refused_before_it_is_written(tmp_path: Path, kind: str) -> None:
    dest = tmp_path / "out"
    if kind == "tgz":
        archive = tmp_path / "bomb.tgz"
        archive.write_bytes(_tar_bytes([("zeros", BOMB)], "w:gz"))
    elif kind == "zip":
        archive = tmp_path / "bomb.zip"
        with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf, \
                zf.open("zeros", "w", force_zip64=True) as member:
            for _ in range(BOMB >> 20):
                member.write(bytes(1 << 20))
    elif kind == "deb":
        archive = _deb(tmp_path / "bomb.deb", gzip.compress(_tar_bytes([("zeros", BOMB)]), 1))
    else:
        py7zr = pytest.importorskip("py7zr")
        archive = tmp_path / "bomb.7z"
        source = tmp_path / "zeros"
        with open(source, "wb") as handle:
            handle.truncate(BOMB)
        with py7zr.SevenZipFile(archive, "w") as sz:
            sz.write(source, "zeros")
        source.unlink()
    assert archive.stat().st_size < 2 << 20
    with pytest.raises(ArtifactError, match="refusing a likely decompression bomb"):
        if kind == "deb":
            unpack_deb(archive, dest)
        elif kind == "7z":
            extract_7z(archive, dest)
        else:
            extract_archive(archive, dest)
    assert _gone(dest)


@pytest.mark.parametrize("name", ["x" * 256, "/".join(["d" * 200] * 21)],
                         ids=["name-over-255", "path-over-4096"])
def test_over_long_member_names_are_refused_before_extraction(tmp_path: Path, name: str) -> None:
    archive = tmp_path / "long.tar"
    archive.write_bytes(_tar_bytes([("ok.txt", 3), (name, 1)]))
    with pytest.raises(ArtifactError, match=r"longer than (255|4096) bytes"):
        extract_archive(archive, tmp_path / "out")
    assert not (tmp_path / "out").exists()
    deb = _deb(tmp_path / "long.deb", gzip.compress(_tar_bytes([("ok.txt", 3), (name, 1)])))
    with pytest.raises(ArtifactError, match=r"longer than (255|4096) bytes"):
        unpack_deb(deb, tmp_path / "root")
    assert not (tmp_path / "root").exists()


def _zip(path: Path, method: int = zipfile.ZIP_STORED) -> Path:
    with zipfile.ZipFile(path, "w", method) as zf:
        zf.writestr("first.txt", b"first file\n")
        zf.writestr("second.txt", b"second file, altered below\n")
    return path


def _patch_central(path: Path, offset: int, value: bytes) -> None:
    """Patch the second central-directory entry (what zipfile trusts) at ``offset``."""
    data = bytearray(path.read_bytes())
    at = data.index(b"PK\x01\x02", data.index(b"PK\x01\x02") + 4)
    data[at + offset: at + offset + len(value)] = value
    path.write_bytes(bytes(data))


def test_a_zip_with_a_bad_crc_is_one_line_and_leaves_nothing(tmp_path: Path) -> None:
    archive = _zip(tmp_path / "crc.zip")
    data = archive.read_bytes().replace(b"second file, altered", b"second file, ALTERED")
    archive.write_bytes(data)
    dest = tmp_path / "out"
    with pytest.raises(ArtifactError, match=r"crc\.zip: cannot unpack into .*Bad CRC-32.*"
                       "nothing was left there") as raised:
        extract_archive(archive, dest)
    assert "\n" not in str(raised.value)
    assert not dest.exists()
    dest.mkdir()  # an empty folder given by the caller stays, empty
    with pytest.raises(ArtifactError):
        extract_archive(archive, dest)
    assert dest.is_dir() and not any(dest.iterdir())


def test_an_encrypted_zip_member_is_refused(tmp_path: Path) -> None:
    archive = _zip(tmp_path / "enc.zip")
    _patch_central(archive, 8, struct.pack("<H", 0x1))
    with pytest.raises(ArtifactError, match=r"'second\.txt': encrypted"):
        extract_archive(archive, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_a_deflate64_zip_member_is_refused(tmp_path: Path) -> None:
    archive = _zip(tmp_path / "d64.zip", zipfile.ZIP_DEFLATED)
    _patch_central(archive, 10, struct.pack("<H", 9))
    with pytest.raises(ArtifactError, match=r"'second\.txt': unsupported compression method 9"):
        extract_archive(archive, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_duplicate_members_are_refused(tmp_path: Path) -> None:
    tar = tmp_path / "dup.tgz"
    tar.write_bytes(_tar_bytes([("a/x", 1), ("a/x", 2)], "w:gz"))
    with pytest.raises(ArtifactError, match="'a/x': appears twice"):
        extract_archive(tar, tmp_path / "out")
    archive = tmp_path / "dup.zip"
    with zipfile.ZipFile(archive, "w") as zf, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        zf.writestr("a/x", b"1")
        zf.writestr("a/x", b"2")
    with pytest.raises(ArtifactError, match="'a/x': appears twice"):
        extract_archive(archive, tmp_path / "out")
    assert not (tmp_path / "out").exists()
