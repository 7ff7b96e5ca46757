"""Unpacking real tar and zip archives built here: modes, links and hard links land as the
archive says; the destination must be new or empty."""

from __future__ import annotations

import stat
import zipfile
from pathlib import Path

import pytest

from envforge.errors import ArtifactError
from envforge.host.unarchive import extract_archive
from tests.host.test_archives import GOOD, make_tar, make_zip


@pytest.mark.posix_only("Unix file modes (Windows keeps only a read-only bit)")
@pytest.mark.parametrize("compression", ["gz", "xz", "bz2"])
def test_tar_members_land_with_modes_and_links(tmp_path: Path, compression: str) -> None:
    archive = make_tar(tmp_path / f"a.tar.{compression}", GOOD, compression)
    names = extract_archive(archive, tmp_path / "out")
    out = tmp_path / "out"
    assert "cuda/include/x.h" in names
    assert (out / "cuda/lib64/libx.so.1.2").read_bytes() == b"\x7fELF library"
    assert stat.S_IMODE((out / "cuda/lib64/libx.so.1.2").stat().st_mode) == 0o755
    assert (out / "cuda/lib64/libx.so").readlink() == Path("libx.so.1")
    assert (out / "cuda/lib64/libx.so").read_bytes() == b"\x7fELF library"
    assert (out / "cuda/include/lib").readlink() == Path("../lib64")


@pytest.mark.posix_only("Unix file modes (Windows keeps only a read-only bit)")
def test_zip_members_land_with_modes_and_links(tmp_path: Path) -> None:
    archive = make_zip(tmp_path / "a.zip", GOOD)
    extract_archive(archive, tmp_path / "out")
    out = tmp_path / "out"
    assert (out / "cuda/lib64/libx.so").readlink() == Path("libx.so.1")
    assert stat.S_IMODE((out / "cuda/lib64/libx.so.1.2").stat().st_mode) == 0o755
    assert (out / "cuda/include/x.h").read_bytes() == b"#define X 1\n"


@pytest.mark.posix_only("Unix file modes (Windows keeps only a read-only bit)")
def test_zip_made_on_windows_gets_ordinary_modes(tmp_path: Path) -> None:
    archive = tmp_path / "win.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("cuda/bin/cudnn64_7.dll", b"MZ dll")  # create_system 0 on Windows
        zf.infolist()[0].create_system = 0
    extract_archive(archive, tmp_path / "out")
    dll = tmp_path / "out/cuda/bin/cudnn64_7.dll"
    assert dll.read_bytes() == b"MZ dll"
    assert stat.S_IMODE(dll.stat().st_mode) == 0o644


def test_hardlink_to_an_earlier_member_is_copied(tmp_path: Path) -> None:
    archive = make_tar(tmp_path / "h.tgz", [("file", "a/real", b"data", 0o644),
                                             ("hardlink", "a/alias", "a/real", 0o644)])
    extract_archive(archive, tmp_path / "out")
    assert (tmp_path / "out/a/alias").read_bytes() == b"data"


@pytest.mark.posix_only("Unix file modes (Windows keeps only a read-only bit)")
def test_setuid_can_be_allowed(tmp_path: Path) -> None:
    archive = make_tar(tmp_path / "suid.tgz", [("file", "bin/tool", b"x", 0o4755)])
    extract_archive(archive, tmp_path / "out", allow_setuid=True)
    assert stat.S_IMODE((tmp_path / "out/bin/tool").stat().st_mode) == 0o4755


@pytest.mark.posix_only("plants a symlink to /etc")
def test_destination_must_be_new_or_empty(tmp_path: Path) -> None:
    archive = make_tar(tmp_path / "a.tgz", GOOD)
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "already").symlink_to("/etc")
    with pytest.raises(ArtifactError, match="not an empty folder"):
        extract_archive(archive, tmp_path / "out")
    (tmp_path / "empty").mkdir()
    extract_archive(archive, tmp_path / "empty")
    assert (tmp_path / "empty/cuda/include/x.h").is_file()


def test_not_an_archive(tmp_path: Path) -> None:
    junk = tmp_path / "cudnn.tgz"
    junk.write_bytes(b"<html>login required</html>")
    with pytest.raises(ArtifactError, match="not a zip or tar archive"):
        extract_archive(junk, tmp_path / "out")
    with pytest.raises(ArtifactError, match="no such file"):
        extract_archive(tmp_path / "missing.zip", tmp_path / "out")
