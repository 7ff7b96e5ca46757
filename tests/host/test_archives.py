"""The one member scan, on real archives built here (good and malicious) and on member lists;
hashing."""

from __future__ import annotations

import hashlib
import io
import stat
import tarfile
import zipfile
from pathlib import Path
from typing import Literal

import pytest

from envforge.errors import ArtifactError
from envforge.host import archives
from envforge.host.archives import Rules, scan_members, sha256_file, verify_artifact
from envforge.host.unarchive import extract_archive

Member = tuple[str, str, bytes | str, int]  # (kind, name, data or link target, mode)


_WRITE_MODES: dict[str, Literal["w:gz", "w:xz", "w:bz2"]] = {
    "gz": "w:gz", "xz": "w:xz", "bz2": "w:bz2"}


def make_tar(path: Path, members: list[Member], compression: str = "gz") -> Path:
    with tarfile.open(path, _WRITE_MODES[compression]) as tar:
        for kind, name, data, mode in members:
            info = tarfile.TarInfo(name)
            info.mode = mode
            if kind == "file":
                assert isinstance(data, bytes)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
                continue
            info.type = {"dir": tarfile.DIRTYPE, "symlink": tarfile.SYMTYPE,
                         "hardlink": tarfile.LNKTYPE, "chardev": tarfile.CHRTYPE,
                         "fifo": tarfile.FIFOTYPE}[kind]
            if kind in ("symlink", "hardlink"):
                assert isinstance(data, str)
                info.linkname = data
            tar.addfile(info)
    return path


def make_zip(path: Path, members: list[Member]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for kind, name, data, mode in members:
            info = zipfile.ZipInfo(name, date_time=(2019, 11, 1, 0, 0, 0))
            info.create_system = 3
            file_type = {"file": stat.S_IFREG, "dir": stat.S_IFDIR, "symlink": stat.S_IFLNK,
                         "chardev": stat.S_IFCHR}[kind]
            info.external_attr = (file_type | mode) << 16
            if kind == "dir":
                info.filename = name.rstrip("/") + "/"
                zf.writestr(info, b"")
            else:
                zf.writestr(info, data.encode() if isinstance(data, str) else data)
    return path


GOOD: list[Member] = [
    ("dir", "cuda", b"", 0o755),
    ("dir", "cuda/lib64", b"", 0o755),
    ("file", "cuda/lib64/libx.so.1.2", b"\x7fELF library", 0o755),
    ("symlink", "cuda/lib64/libx.so.1", "libx.so.1.2", 0o777),
    ("symlink", "cuda/lib64/libx.so", "libx.so.1", 0o777),
    ("file", "./cuda/include/x.h", b"#define X 1\n", 0o644),
    ("symlink", "cuda/include/lib", "../lib64", 0o777),
]


BAD_TAR: list[tuple[str, Member, str]] = [
    ("dotdot", ("file", "../evil", b"x", 0o644), "'..' leads outside"),
    ("dotdot-deep", ("file", "cuda/../../evil", b"x", 0o644), "'..' leads outside"),
    ("absolute", ("file", "/etc/evil", b"x", 0o644), "absolute path"),
    ("drive", ("file", "C:/Windows/evil.dll", b"x", 0o644), "absolute path"),
    ("backslash", ("file", "cuda\\..\\..\\evil", b"x", 0o644), "'..' leads outside"),
    ("link-absolute", ("symlink", "cuda/passwd", "/etc/passwd", 0o777), "leads outside"),
    ("link-up", ("symlink", "cuda/up", "../../outside", 0o777), "leads outside"),
    ("link-loop", ("symlink", "cuda/loop", "loop", 0o777), "leads outside"),
    ("hardlink-out", ("hardlink", "cuda/h", "../outside", 0o644), "hard link to '../outside'"),
    ("hardlink-unknown", ("hardlink", "cuda/h", "cuda/nothing", 0o644), "not a file before it"),
    ("chardev", ("chardev", "cuda/null", b"", 0o666), "device file"),
    ("fifo", ("fifo", "cuda/pipe", b"", 0o644), "device file"),
    ("setuid", ("file", "cuda/bin/su", b"x", 0o4755), "set-uid"),
    # refused by the scan, not by the write failing midway (then undone)
    ("under-a-file", ("file", "cuda/lib64/libx.so.1.2/evil", b"x", 0o644),
     "cuda/lib64/libx.so.1.2 is a file"),
]


@pytest.mark.parametrize(("label", "bad", "why"), BAD_TAR, ids=[b[0] for b in BAD_TAR])
def test_bad_tar_member_refuses_the_whole_archive_before_writing(
        tmp_path: Path, label: str, bad: Member, why: str) -> None:
    archive = make_tar(tmp_path / f"{label}.tgz", [*GOOD, bad])  # good members come first
    with pytest.raises(ArtifactError) as caught:
        extract_archive(archive, tmp_path / "out")
    message = str(caught.value)
    assert why in message
    assert message.startswith(f"{archive}: refusing to unpack member {bad[1]!r}")
    assert "\n" not in message
    assert not (tmp_path / "out").exists()
    assert not (tmp_path / "evil").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == [archive.name]


def test_link_through_another_link_is_resolved_like_the_kernel_would(tmp_path: Path) -> None:
    # "here/../x" looks inside as text, but "here" points at the top, so it leads above it.
    archive = make_tar(tmp_path / "chain.tgz", [
        ("symlink", "here", ".", 0o777),
        ("symlink", "sneaky", "here/../outside", 0o777),
    ])
    with pytest.raises(ArtifactError, match=r"'sneaky'.*leads outside"):
        extract_archive(archive, tmp_path / "out")


def test_member_written_through_a_link_is_refused(tmp_path: Path) -> None:
    archive = make_tar(tmp_path / "through.tgz", [
        ("symlink", "cuda/lib", "/tmp", 0o777),
        ("file", "cuda/lib/payload", b"x", 0o644),
    ])
    with pytest.raises(ArtifactError, match=r"leads outside|through a link"):
        extract_archive(archive, tmp_path / "out")
    inside = make_tar(tmp_path / "inside.tgz", [
        ("dir", "real", b"", 0o755),
        ("symlink", "alias", "real", 0o777),
        ("file", "alias/payload", b"x", 0o644),
    ])
    with pytest.raises(ArtifactError, match="'alias/payload': it would be written through a link"):
        extract_archive(inside, tmp_path / "out2")


def test_name_both_file_and_link_is_refused(tmp_path: Path) -> None:
    archive = make_tar(tmp_path / "dup.tgz", [("file", "a", b"x", 0o644),
                                               ("symlink", "a", "b", 0o777)])
    with pytest.raises(ArtifactError, match="appears both as file and symlink"):
        extract_archive(archive, tmp_path / "out")


@pytest.mark.parametrize(("bad", "why"), [
    (("file", "../evil.dll", b"x", 0o644), "'..' leads outside"),
    (("file", "..\\..\\evil.dll", b"x", 0o644), "'..' leads outside"),
    (("file", "/abs.dll", b"x", 0o644), "absolute path"),
    (("symlink", "cuda/out", "../../../etc", 0o777), "leads outside"),
    (("chardev", "cuda/dev", b"", 0o644), "device file"),
])
def test_bad_zip_member_refuses_the_whole_archive(tmp_path: Path, bad: Member, why: str) -> None:
    archive = make_zip(tmp_path / "bad.zip", [*GOOD, bad])
    with pytest.raises(ArtifactError, match=why):
        extract_archive(archive, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_sha256_is_streamed_over_chunks(tmp_path: Path) -> None:
    data = bytes(range(256)) * 9000  # ~2.3 MB: several 1 MiB chunks and a partial one
    path = tmp_path / "big.bin"
    path.write_bytes(data)
    assert sha256_file(path) == hashlib.sha256(data).hexdigest()


def test_verify_artifact_names_both_hashes_when_tampered(tmp_path: Path) -> None:
    path = tmp_path / "cudnn-10.2-linux-x64-v7.6.5.32.tgz"
    path.write_bytes(b"the real thing")
    good = hashlib.sha256(b"the real thing").hexdigest()
    verify_artifact(path, good)
    verify_artifact(path, good.upper())
    path.write_bytes(b"the real thing, modified")
    found = hashlib.sha256(b"the real thing, modified").hexdigest()
    with pytest.raises(ArtifactError) as caught:
        verify_artifact(path, good)
    assert "tampered" in str(caught.value)
    assert f"expected {good}, found {found}" in str(caught.value)
    with pytest.raises(ArtifactError, match="no such file"):
        verify_artifact(tmp_path / "absent.tgz", good)


# -- one scan for every format: the same hostile members in tar, zip, a .deb's ar and 7z -----

# (kind, name, link target): each archive holds a good file first, then this member.
HOSTILE: dict[str, tuple[str, str, str]] = {
    "absolute": ("file", "/evil", ""),
    "dotdot": ("file", "lib/../../evil", ""),
    "link-out": ("symlink", "lib/out", "../../outside"),
    "device": ("chardev", "lib/null", ""),
}
# what each format's extractor says; 7z refuses every link, leading out or not
WHY = {"absolute": "absolute path", "dotdot": "'..' leads outside", "link-out": "leads outside",
       "device": "device file, FIFO or other special file"}
WHY_7Z = {**WHY, "link-out": "a link"}


def _tar_info(kind: str, name: str, link: str) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.mode = 0o644
    if kind == "file":
        info.size = 1
        return info, b"x"
    info.type = {"symlink": tarfile.SYMTYPE, "chardev": tarfile.CHRTYPE}[kind]
    info.linkname = link
    return info, b""


def _hostile_tar(path: Path, case: str) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for kind, name, link in [("file", "lib/good", ""), HOSTILE[case]]:
            info, data = _tar_info(kind, name, link)
            tar.addfile(info, io.BytesIO(data))
    return path


def _hostile_zip(path: Path, case: str) -> Path:
    kind, name, link = HOSTILE[case]
    return make_zip(path, [("file", "lib/good", b"x", 0o644),
                           (kind, name, link if kind == "symlink" else b"x", 0o644)])


def _ar(members: list[tuple[str, bytes]]) -> bytes:
    """System V ar, as dpkg-deb writes it: a magic line, then 60-byte headers."""
    out = b"!<arch>\n"
    for name, data in members:
        out += f"{name:<16}{'0':<12}{'0':<6}{'0':<6}{'100644':<8}{len(data):<10}`\n".encode()
        out += data + (b"\n" if len(data) % 2 else b"")
    return out


def _hostile_deb(path: Path, case: str) -> Path:
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w:gz") as tar:
        for kind, name, link in [("file", "./lib/good", ""), HOSTILE[case]]:
            info, body = _tar_info(kind, name if name.startswith("/") else f"./{name}", link)
            tar.addfile(info, io.BytesIO(body))
    path.write_bytes(_ar([("debian-binary", b"2.0\n"), ("control.tar.gz", b""),
                          ("data.tar.gz", data.getvalue())]))
    return path


def _hostile_7z(path: Path, case: str) -> Path:
    import py7zr

    kind, name, link = HOSTILE[case]
    # py7zr's public writers refuse such names and write no device; an attacker's do.
    with py7zr.SevenZipFile(path, "w") as sz:
        sz._writestr(b"x", "lib/good")
        sz._writestr(link.encode() if kind == "symlink" else b"x", name)
        fmt = {"file": stat.S_IFREG, "symlink": stat.S_IFLNK, "chardev": stat.S_IFCHR}[kind]
        unix_extension = 0x8000
        sz.header.files_info.files[-1]["attributes"] = unix_extension | ((fmt | 0o644) << 16)
    return path


def _unpack(fmt: str, archive: Path, dest: Path) -> None:
    from envforge.host.debunpack import unpack_deb
    from envforge.host.sevenzip import extract_7z

    if fmt == "deb":
        dest.mkdir()
        unpack_deb(archive, dest)
    elif fmt == "7z":
        extract_7z(archive, dest)
    else:
        extract_archive(archive, dest)


BUILD = {"tgz": _hostile_tar, "zip": _hostile_zip, "deb": _hostile_deb, "7z": _hostile_7z}


@pytest.mark.parametrize("case", sorted(HOSTILE))
@pytest.mark.parametrize("fmt", sorted(BUILD))
def test_every_format_is_refused_by_the_one_scan_before_a_byte_is_written(
        tmp_path: Path, fmt: str, case: str) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    archive = BUILD[fmt](tmp_path / f"hostile.{fmt}", case)
    dest = tmp_path / "dest"

    with pytest.raises(ArtifactError) as caught:
        _unpack(fmt, archive, dest)

    raw = HOSTILE[case][1] if fmt != "deb" or HOSTILE[case][1].startswith("/") \
        else f"./{HOSTILE[case][1]}"
    message = str(caught.value)
    assert message.startswith(f"{archive}: refusing to unpack member {raw!r}: ")
    assert (WHY_7Z if fmt == "7z" else WHY)[case] in message
    assert not dest.exists() or not any(dest.iterdir())
    assert not any(outside.iterdir())
    assert not (tmp_path / "evil").exists()


# -- the rules a format adds, on member lists -------------------------------------------------

def _scan(members: list[archives.Member], rules: Rules | None = None) -> list[archives.Scanned]:
    return scan_members("x.tar", members, packed=1 << 20, rules=rules or Rules())


def test_rooted_absolute_links_are_read_from_the_destination() -> None:
    """A .deb's ``/etc/alternatives/x`` means <root>/etc/alternatives/x: written relative."""
    link = archives.Member("usr/bin/x", "symlink", link="/etc/alternatives/x")
    with pytest.raises(ArtifactError, match="leads outside"):
        _scan([link])
    (scanned,) = _scan([link], Rules(rooted=True))
    assert scanned.link == "../../etc/alternatives/x"
    with pytest.raises(ArtifactError, match="leads outside"):
        _scan([archives.Member("evil", "symlink", link="/../x")], Rules(rooted=True))


def test_through_links_resolves_where_a_member_lands() -> None:
    """Allowed for a .deb, yet a link to the root makes ``lnk/f -> ../x`` leave it."""
    members = [archives.Member("real", "dir"), archives.Member("alias", "symlink", link="real"),
               archives.Member("alias/f", "file", size=1)]
    with pytest.raises(ArtifactError, match="through a link"):
        _scan(members)
    assert [s.name for s in _scan(members, Rules(through_links=True))] == \
        ["real", "alias", "alias/f"]
    escaping = [archives.Member("lnk", "symlink", link="."),
                archives.Member("lnk/f", "symlink", link="../x")]
    with pytest.raises(ArtifactError, match=r"'lnk/f': link to '\.\./x' leads outside"):
        _scan(escaping, Rules(through_links=True))


@pytest.mark.parametrize("name", ["bin/NUL.dll", "bin/com1", "bin/g++.exe:stream"])
def test_windows_names_are_refused_where_asked(name: str) -> None:
    member = archives.Member(name, "file", size=1)
    assert _scan([member])[0].name == name
    with pytest.raises(ArtifactError, match="not a plain Windows file name"):
        _scan([member], Rules(windows_names=True))


def test_the_root_folder_itself_is_left_out_and_sizes_add_up() -> None:
    members = [archives.Member("./", "dir"), archives.Member("./a", "file", size=60 << 20),
               archives.Member("./b", "file", size=60 << 20)]
    with pytest.raises(ArtifactError, match="decompression bomb"):
        _scan(members)
    assert [s.name for s in _scan(members[:2])] == ["a"]

