"""The unversioned library names a tree of unpacked Debian packages lacks."""

from __future__ import annotations

from pathlib import Path

import pytest

from envforge.host.devlinks import missing_dev_links

LIBDIR = "usr/lib/x86_64-linux-gnu"
LIB = b"\x7fELF not really a library"


@pytest.mark.posix_only("Debian packages are unpacked on Linux: their symlinks and modes")
def test_missing_dev_links(tmp_path: Path) -> None:
    lib = tmp_path / LIBDIR
    (lib / "openblas-pthread").mkdir(parents=True)
    (lib / "openblas-pthread/libopenblasp-r0.3.21.so").write_bytes(LIB)
    (lib / "openblas-pthread/libopenblas.so.0").symlink_to("libopenblasp-r0.3.21.so")
    (lib / "libquadmath.so.0.0.0").write_bytes(LIB)
    (lib / "libquadmath.so.0").symlink_to("libquadmath.so.0.0.0")
    (lib / "libgpuarray.so.3").write_bytes(LIB)
    (lib / "libgpuarray.so").symlink_to("libgpuarray.so.3")  # the -dev package's link
    (lib / "libtwo.so.1").write_bytes(LIB)
    (lib / "libtwo.so.2").write_bytes(LIB)
    (lib / "libblas.so.3").symlink_to("/etc/alternatives/libblas.so.3")  # dangling
    (lib / "libonly.so.1.2.3").write_bytes(LIB)  # no soname link: nothing to point at
    (tmp_path / "usr/lib/python3/dist-packages").mkdir(parents=True)
    (tmp_path / "usr/lib/python3/dist-packages/_x.cpython-311-x86_64-linux-gnu.so").write_bytes(LIB)
    (tmp_path / "usr/share").mkdir()
    (tmp_path / "usr/share/libnotalib.so.1").write_bytes(LIB)

    assert missing_dev_links(tmp_path) == [
        (lib / "libquadmath.so", "libquadmath.so.0"),
        (lib / "libtwo.so", "libtwo.so.2"),
        (lib / "openblas-pthread/libopenblas.so", "libopenblas.so.0"),
    ]
    for link, target in missing_dev_links(tmp_path):
        link.symlink_to(target)
    assert missing_dev_links(tmp_path) == []
    assert (lib / "openblas-pthread/libopenblas.so").resolve().name == "libopenblasp-r0.3.21.so"
