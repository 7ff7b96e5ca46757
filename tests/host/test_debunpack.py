"""Unpacking .deb files: real ones built by dpkg-deb, and hostile ones crafted by hand."""

from __future__ import annotations

import errno
import hashlib
import io
import os
import shutil
import stat
import sys
import tarfile
from pathlib import Path

import pytest

from envforge.bundle.sources import bundle_lookup
from envforge.errors import ArtifactError
from envforge.host.debunpack import unpack_deb
from envforge.host.fetch import FileRef, obtain
from envforge.host.proc import run

needs_dpkg_deb = pytest.mark.skipif(shutil.which("dpkg-deb") is None, reason="needs dpkg-deb")

LIBDIR = "usr/lib/x86_64-linux-gnu"


# --- helpers (also used by tests/resolve/test_deb.py) -----------------------------------------

def build_deb(out_dir: Path, name: str, version: str, *, files: dict[str, bytes] | None = None,
              symlinks: dict[str, str] | None = None, depends: str = "",
              architecture: str = "amd64", compression: str = "xz",
              modes: dict[str, int] | None = None) -> Path:
    """A real .deb from ``dpkg-deb --build``; ``symlinks`` maps link path -> target text."""
    tree = out_dir / f"{name}_{version}.tree"
    if tree.exists():
        shutil.rmtree(tree)
    (tree / "DEBIAN").mkdir(parents=True)
    control = [f"Package: {name}", f"Version: {version}", f"Architecture: {architecture}",
               "Maintainer: envforge tests <tests@example.org>"]
    if depends:
        control.append(f"Depends: {depends}")
    control.append(f"Description: {name} built by the envforge test-suite")
    (tree / "DEBIAN" / "control").write_text("\n".join(control) + "\n", encoding="utf-8")
    for rel, data in (files or {}).items():
        path = tree / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        path.chmod((modes or {}).get(rel, 0o644))
    for rel, target in (symlinks or {}).items():
        path = tree / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.symlink_to(target)
    deb = out_dir / f"{name}_{version.replace(':', '%3a')}_{architecture}.deb"
    run(["dpkg-deb", f"-Z{compression}", "--build", "--root-owner-group", tree, deb])
    shutil.rmtree(tree)
    return deb


def write_ar(path: Path, members: list[tuple[str, bytes]]) -> Path:
    """An ``ar`` archive as dpkg-deb writes it (names padded to 16 bytes, even offsets)."""
    out = bytearray(b"!<arch>\n")
    for name, data in members:
        header = (f"{name:<16}" f"{0:<12}" f"{0:<6}" f"{0:<6}" f"{0o100644:<8o}"
                  f"{len(data):<10}").encode() + b"`\n"
        assert len(header) == 60
        out += header + data + (b"\n" if len(data) % 2 else b"")
    path.write_bytes(bytes(out))
    return path


def tar_member(name: str, *, data: bytes = b"", kind: bytes = tarfile.REGTYPE,
               linkname: str = "", mode: int = 0o644) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = linkname
    info.mode = mode
    info.size = len(data) if kind == tarfile.REGTYPE else 0
    return info, data


def crafted_deb(path: Path, members: list[tuple[tarfile.TarInfo, bytes]]) -> Path:
    """A .deb whose data.tar holds exactly ``members``: what dpkg-deb would never build."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w:gz") as tar:
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if info.isfile() else None)
    control = io.BytesIO()
    with tarfile.open(fileobj=control, mode="w:gz") as tar:
        body = b"Package: evil\nVersion: 1\nArchitecture: all\nDescription: x\n"
        info = tarfile.TarInfo("./control")
        info.size = len(body)
        tar.addfile(info, io.BytesIO(body))
    return write_ar(path, [("debian-binary", b"2.0\n"), ("control.tar.gz", control.getvalue()),
                           ("data.tar.gz", raw.getvalue())])


def tree_listing(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")} if root.exists() else set()


# --- real packages ----------------------------------------------------------------------------

LIB = b"\x7fELF not really a library"


@pytest.fixture()
def demo_deb(tmp_path: Path) -> Path:
    return build_deb(
        tmp_path, "libdemo1", "1.0-1",
        files={f"{LIBDIR}/libdemo.so.1.0.0": LIB, "usr/bin/demo": b"#!/bin/sh\necho demo\n",
               "usr/share/doc/libdemo1/copyright": b"public domain\n"},
        modes={"usr/bin/demo": 0o755},
        symlinks={f"{LIBDIR}/libdemo.so.1": "libdemo.so.1.0.0",
                  # absolute targets, as Debian ships: one inside the package, one dangling
                  "usr/bin/demo-abs": "/usr/bin/demo",
                  f"{LIBDIR}/libblas.so.3": "/etc/alternatives/libblas.so.3-x86_64-linux-gnu"})


@needs_dpkg_deb
def test_unpack_matches_dpkg_and_rewrites_absolute_links(demo_deb: Path, tmp_path: Path) -> None:
    root = tmp_path / "root"
    result = unpack_deb(demo_deb, root)

    reference = tmp_path / "reference"
    run(["dpkg-deb", "-x", demo_deb, reference])
    assert tree_listing(root) == tree_listing(reference)
    for path in reference.rglob("*"):
        if path.is_file() and not path.is_symlink():
            mine = root / path.relative_to(reference)
            assert mine.read_bytes() == path.read_bytes()
            assert stat.S_IMODE(mine.stat().st_mode) == stat.S_IMODE(path.stat().st_mode)

    assert str((root / LIBDIR / "libdemo.so.1").readlink()) == "libdemo.so.1.0.0"
    assert str((root / "usr/bin/demo-abs").readlink()) == "../../usr/bin/demo"
    assert (root / "usr/bin/demo-abs").resolve() == (root / "usr/bin/demo").resolve()
    blas = root / LIBDIR / "libblas.so.3"
    assert str(blas.readlink()) == "../../../etc/alternatives/libblas.so.3-x86_64-linux-gnu"
    assert result.dangling == ((blas, "../../../etc/alternatives/libblas.so.3-x86_64-linux-gnu"),)

    # The journal contract: removing what was written, in reverse, leaves nothing behind.
    assert set(result.written) == {root, *root.rglob("*")}
    for path in reversed(result.written):
        path.rmdir() if path.is_dir() and not path.is_symlink() else path.unlink()
    assert not root.exists()


@needs_dpkg_deb
@pytest.mark.parametrize("compression", ["gzip", "none", "xz"])
def test_payload_compressions(tmp_path: Path, compression: str) -> None:
    deb = build_deb(tmp_path, "tiny", "1", files={"usr/share/tiny/a.txt": b"a\n"},
                    compression=compression)
    unpack_deb(deb, tmp_path / "root")
    assert (tmp_path / "root/usr/share/tiny/a.txt").read_bytes() == b"a\n"


@needs_dpkg_deb
def test_zstd_payload_without_module_is_a_clear_error(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    deb = build_deb(tmp_path, "tiny", "1", files={"a.txt": b"a\n"}, compression="zstd")
    monkeypatch.setitem(sys.modules, "zstandard", None)  # makes `import zstandard` fail
    with pytest.raises(ArtifactError, match="zstandard"):
        unpack_deb(deb, tmp_path / "root")
    assert not (tmp_path / "root").exists()


@needs_dpkg_deb
def test_second_package_adds_to_a_shared_tree_and_conflicts_are_refused(
        demo_deb: Path, tmp_path: Path) -> None:
    root = tmp_path / "root"
    unpack_deb(demo_deb, root)
    other = build_deb(tmp_path, "demo-tools", "2", files={"usr/bin/demo-tool": b"x"})
    result = unpack_deb(other, root)
    assert result.written == (root / "usr/bin/demo-tool",)  # shared folders are not claimed

    before = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
    with pytest.raises(ArtifactError, match="already exists"):
        unpack_deb(demo_deb, root)
    assert {p: p.read_bytes() for p in root.rglob("*") if p.is_file()} == before
    again = unpack_deb(demo_deb, root, replace=True)
    assert root / "usr/bin/demo" in again.written


@needs_dpkg_deb
def test_setuid_bits_are_dropped(tmp_path: Path) -> None:
    deb = build_deb(tmp_path, "suid", "1", files={"usr/bin/su-ish": b"x"},
                    modes={"usr/bin/su-ish": 0o4755})
    unpack_deb(deb, tmp_path / "root")
    assert stat.S_IMODE((tmp_path / "root/usr/bin/su-ish").stat().st_mode) == 0o755


# --- hostile packages ---------------------------------------------------------------------------

SYM, LNK, DIR = tarfile.SYMTYPE, tarfile.LNKTYPE, tarfile.DIRTYPE

UNSAFE = {
    "dotdot": [tar_member("./usr/"), tar_member("./usr/../../escape", data=b"x")],
    "plain-dotdot": [tar_member("../escape", data=b"x")],
    "absolute": [tar_member("/tmp/escape", data=b"x")],
    "symlink-out": [tar_member("./a.txt", data=b"ok"),
                    tar_member("./evil", kind=SYM, linkname="../../outside")],
    "symlink-abs-dotdot": [tar_member("./evil", kind=SYM, linkname="/../outside")],
    # Lexically "lnk/../x" is inside, but lnk is the root itself, so ../x leaves it.
    "symlink-through-symlink": [tar_member("./lnk", kind=SYM, linkname="."),
                                tar_member("./lnk/f", kind=SYM, linkname="../outside/x")],
    "file-through-escaping-link": [tar_member("./d", kind=SYM, linkname="../outside"),
                                   tar_member("./d/pwned", data=b"x")],
    # Fine when checked alone (y does not exist yet); y -> . makes x leave the root.
    "symlink-made-unsafe-later": [tar_member("./x", kind=SYM, linkname="y/.."),
                                  tar_member("./y", kind=SYM, linkname=".")],
    "symlink-loop": [tar_member("./a", kind=SYM, linkname="b"),
                     tar_member("./b", kind=SYM, linkname="a")],
    "hardlink-out": [tar_member("./h", kind=LNK, linkname="../outside/secret")],
    "hardlink-foreign": [tar_member("./h", kind=LNK, linkname="./not-in-package")],
    "file-used-as-folder": [tar_member("./a", data=b"x"), tar_member("./a/b/c", data=b"x")],
    "device": [tar_member("./dev/sda", kind=tarfile.BLKTYPE)],
    "chardev": [tar_member("./dev/null", kind=tarfile.CHRTYPE)],
    "fifo": [tar_member("./fifo", kind=tarfile.FIFOTYPE)],
}


@pytest.mark.parametrize("case", sorted(UNSAFE))
def test_unsafe_members_are_refused_before_anything_is_written(tmp_path: Path, case: str) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_text("s")
    deb = crafted_deb(tmp_path / "evil.deb", UNSAFE[case])
    root = tmp_path / "sandbox" / "root"
    root.mkdir(parents=True)
    with pytest.raises(ArtifactError):
        unpack_deb(deb, root)
    assert tree_listing(tmp_path / "sandbox") == {"root"}
    assert tree_listing(outside) == {"secret"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["evil.deb", "outside", "sandbox"]


@pytest.mark.posix_only("Debian packages are unpacked on Linux: their symlinks and modes")
def test_absolute_link_target_stays_inside_the_root(tmp_path: Path) -> None:
    """A link to /tmp/x means <root>/tmp/x, so writing through it lands in the root."""
    members = [tar_member("./out", kind=SYM, linkname=str(tmp_path / "outside")),
               tar_member("./out/pwned", data=b"x")]
    deb = crafted_deb(tmp_path / "abs.deb", members)
    root = tmp_path / "root"
    unpack_deb(deb, root)
    assert not (tmp_path / "outside").exists()
    inside = root / str(tmp_path / "outside").lstrip("/") / "pwned"
    assert inside.read_bytes() == b"x"
    assert (root / "out/pwned").resolve() == inside.resolve()


@pytest.mark.posix_only("Debian packages are unpacked on Linux: their symlinks and modes")
def test_existing_link_out_of_the_root_is_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    root = tmp_path / "root"
    root.mkdir()
    (root / "usr").symlink_to(outside)  # absolute: the OS would follow it out of the root
    deb = crafted_deb(tmp_path / "p.deb", [tar_member("./usr/lib/x", data=b"x")])
    with pytest.raises(ArtifactError, match="outside"):
        unpack_deb(deb, root)
    assert list(outside.iterdir()) == []


@pytest.mark.posix_only("Debian packages are unpacked on Linux: their symlinks and modes")
def test_setuid_in_crafted_tar_and_hardlinks_inside(tmp_path: Path) -> None:
    members = [tar_member("./bin/", kind=DIR, mode=0o755),
               tar_member("./bin/tool", data=b"t", mode=0o6755),
               tar_member("./bin/tool2", kind=LNK, linkname="./bin/tool")]
    root = tmp_path / "root"
    unpack_deb(crafted_deb(tmp_path / "p.deb", members), root)
    assert stat.S_IMODE((root / "bin/tool").stat().st_mode) == 0o755
    assert (root / "bin/tool").samefile(root / "bin/tool2")


def test_failure_midway_removes_what_was_written(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """ENOSPC midway (issue 10 #9): one line naming the package, and nothing left behind."""
    members = [tar_member("./a/", kind=DIR, mode=0o755), tar_member("./a/one", data=b"1"),
               tar_member("./a/two", data=b"2")]
    deb = crafted_deb(tmp_path / "p.deb", members)
    real_copy = shutil.copyfileobj
    calls = []

    def failing_copy(src: object, dst: object, *args: object) -> None:
        calls.append(dst)
        if len(calls) == 2:  # ./a/one, then ./a/two fails
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real_copy(src, dst, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(shutil, "copyfileobj", failing_copy)
    if hasattr(os, "copy_file_range"):  # where the kernel copies the members' bytes
        real_range = os.copy_file_range

        def failing_range(src: int, dst: int, count: int, *args: int) -> int:
            calls.append(dst)
            if len(calls) == 2:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            return real_range(src, dst, count, *args)

        monkeypatch.setattr(os, "copy_file_range", failing_range)
    root = tmp_path / "root"
    with pytest.raises(ArtifactError, match=r"p\.deb: cannot unpack into .*: No space left on "
                       "device; nothing was left there"):
        unpack_deb(deb, root)
    assert len(calls) == 2
    assert not root.exists()


# --- damaged archives ------------------------------------------------------------------------

@needs_dpkg_deb
def test_a_tampered_deb_is_refused_where_apply_gets_it(demo_deb: Path, tmp_path: Path) -> None:
    """Apply takes .debs through fetch.obtain: from a bundle, the cache or the URL, checked."""
    data = demo_deb.read_bytes()
    ref = FileRef(demo_deb.as_uri(), hashlib.sha256(data).hexdigest(), demo_deb.name, len(data))
    assert obtain(ref, cache=tmp_path / "cache").read_bytes() == data

    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / demo_deb.name).write_bytes(data[:-10] + bytes([data[-10] ^ 1]) + data[-9:])
    with pytest.raises(ArtifactError, match=r"the bundle copy was altered; refusing it"):
        obtain(ref, cache=tmp_path / "cache", bundle=bundle_lookup(bundle))
    demo_deb.write_bytes(data + b"\0")
    with pytest.raises(ArtifactError, match=f"does not match the lock's {ref.sha256}"):
        obtain(ref, cache=tmp_path / "other-cache")
    assert not list((tmp_path / "other-cache").rglob("*.deb"))


@needs_dpkg_deb
def test_damaged_archives_are_artifact_errors(demo_deb: Path, tmp_path: Path) -> None:
    data = demo_deb.read_bytes()
    truncated = tmp_path / "truncated.deb"
    truncated.write_bytes(data[: len(data) // 2])
    corrupt = tmp_path / "corrupt.deb"
    middle = len(data) - 200  # inside data.tar.xz, the last member
    corrupt.write_bytes(data[:middle] + bytes(b ^ 0xFF for b in data[middle:middle + 50])
                        + data[middle + 50:])
    not_deb = tmp_path / "not.deb"
    not_deb.write_bytes(b"PK\x03\x04 a zip file")
    no_data = write_ar(tmp_path / "nodata.deb", [("debian-binary", b"2.0\n")])
    for bad in (truncated, corrupt, not_deb, no_data):
        with pytest.raises(ArtifactError):
            unpack_deb(bad, tmp_path / "root")
        assert not (tmp_path / "root").exists(), bad.name


# --- the copy ------------------------------------------------------------------------------

def _members_of_every_size() -> list[tuple[tarfile.TarInfo, bytes]]:
    """Sizes around tar's 512-byte blocks and past the kernel copy's usual chunk, with a
    long name (a GNU/pax header before the data moves its offset)."""
    sizes = {"empty": 0, "one": 1, "block": 512, "block-plus": 513, "big": (3 << 20) + 7}
    members = [tar_member("./d/", kind=DIR, mode=0o755)]
    for name, size in sizes.items():
        members.append(tar_member(f"./d/{name}", data=os.urandom(size)))
    members.append(tar_member("./d/" + "n" * 150, data=b"after a long name"))
    return members


@pytest.mark.parametrize("kernel", ["copy_file_range", "refused"])
def test_members_are_written_byte_for_byte_by_either_copy(
        kernel: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The kernel copies each member from its offset in the uncompressed data.tar; where it
    cannot (EXDEV, an old kernel), Python's copy writes the same bytes."""
    if kernel == "copy_file_range" and not hasattr(os, "copy_file_range"):
        pytest.skip("this host has no copy_file_range: the other case covers it")
    members = _members_of_every_size()
    deb = crafted_deb(tmp_path / "p.deb", members)
    calls = []
    real_range = getattr(os, "copy_file_range", None)

    def refusing_range(src: int, dst: int, count: int, *args: int) -> int:
        calls.append(count)
        raise OSError(errno.EXDEV, os.strerror(errno.EXDEV))

    if kernel == "refused" and real_range is not None:
        monkeypatch.setattr(os, "copy_file_range", refusing_range)
    root = tmp_path / "root"
    unpack_deb(deb, root)
    for info, data in members:
        if info.isfile():
            assert (root / info.name).read_bytes() == data, info.name
    if kernel == "refused" and real_range is not None:
        assert len(calls) == sum(1 for info, _ in members if info.isfile() and info.size)
