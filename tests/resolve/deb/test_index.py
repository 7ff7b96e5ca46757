"""Debian's index files: Packages (whole and streamed) and Release/InRelease."""

from __future__ import annotations

import gzip
import lzma

import pytest

from envforge.errors import ResolveError
from envforge.resolve.deb.index import (
    DebStanza,
    index_chunks,
    inrelease_body,
    parse_packages,
    parse_packages_subset,
    parse_release,
)

# --- index parsing -------------------------------------------------------------------------

# Verbatim from bookworm's main/binary-amd64/Packages (a few fields trimmed), plus an
# older libgpuarray3 listed after the newer one, as an archive with several versions does.
REAL_PACKAGES = """\
Package: python3-pygpu
Source: libgpuarray (0.7.6-13)
Version: 0.7.6-13+b1
Installed-Size: 4440
Maintainer: Debian Science Maintainers <debian-science-maintainers@lists.alioth.debian.org>
Architecture: amd64
Depends: python3 (<< 3.12), python3 (>= 3.11~), python3-mako (>= 0.7), python3-numpy (>= 1:1.22.0), python3-numpy-abi9, python3-six, python3:any, libc6 (>= 2.14), libgpuarray3 (= 0.7.6-13+b1)
Suggests: libgpuarray-doc
Description: language bindings for libgpuarray (Python 3)
Homepage: https://github.com/Theano/libgpuarray
Section: python
Priority: optional
Filename: pool/main/libg/libgpuarray/python3-pygpu_0.7.6-13+b1_amd64.deb
Size: 430780
MD5sum: 98def426e75ed9186e4397d0300bb82b
SHA256: 8657003207c37659cbb64104305b90ca91ef3b8828bb76ed5fd408f9630cefb0

Package: libgpuarray3
Source: libgpuarray (0.7.6-13)
Version: 0.7.6-13+b1
Installed-Size: 324
Maintainer: Debian Science Maintainers <debian-science-maintainers@lists.alioth.debian.org>
Architecture: amd64
Depends: libc6 (>= 2.34), ocl-icd-opencl-dev | nvidia-cuda-dev
Recommends: libclblast-dev | libclblas-dev | nvidia-cuda-dev
Description: library to manipulate tensors on the GPU
Section: libs
Priority: optional
Filename: pool/main/libg/libgpuarray/libgpuarray3_0.7.6-13+b1_amd64.deb
Size: 103232
MD5sum: b43d1bd7b12b3383500e5ed5b939fac7
SHA256: 1bfa4e635c8ab9139c910beb2d90c9e2614a70ec9edf5afbb0f263331220219b

Package: libopenblas0-pthread
Source: openblas
Version: 0.3.21+ds-4
Installed-Size: 43285
Maintainer: Debian Science Team <debian-science-maintainers@lists.alioth.debian.org>
Architecture: amd64
Provides: libblas.so.3, liblapack.so.3
Depends: libc6 (>= 2.34), libgfortran5 (>= 8)
Breaks: libatlas3-base (<< 3.10.3-4~), libblas3 (<< 3.7.1-2~), liblapack3 (<< 3.7.1-2~), libopenblas-dev (<< 0.2.20+ds-3~)
Description: Optimized BLAS (linear algebra) library (shared lib, pthread)
Multi-Arch: same
Section: libs
Priority: optional
Filename: pool/main/o/openblas/libopenblas0-pthread_0.3.21+ds-4_amd64.deb
Size: 6709044
MD5sum: 62a6aee641127667f3c93dbae8d602b4
SHA256: 4f7e4561dbfa9286c671c91350204fbda7afad675500e59cd4a56f84604844f8

Package: python3-six
Source: six
Version: 1.16.0-4
Installed-Size: 63
Maintainer: Debian Python Team <team+python@tracker.debian.org>
Architecture: all
Depends: python3:any
Description: Python 2 and 3 compatibility library
Multi-Arch: foreign
Section: python
Priority: optional
Filename: pool/main/s/six/python3-six_1.16.0-4_all.deb
Size: 17516
MD5sum: 0ead10b921294fee78c3fbd4a3575dc4
SHA256: fd189e9cecbcf17a1fc20aec30055c8afa9c1eec00cd6e7ab385087a2ab3b0d3

Package: libgpuarray3
Version: 0.7.6-13
Architecture: amd64
Depends: libc6 (>= 2.34)
Description: library to manipulate tensors on the GPU
Filename: pool/main/libg/libgpuarray/libgpuarray3_0.7.6-13_amd64.deb
Size: 103000
SHA256: 0000000000000000000000000000000000000000000000000000000000000000

Package: dpkg
Essential: yes
Version: 1.21.22
Architecture: amd64
Description: Debian package management system
Filename: pool/main/d/dpkg/dpkg_1.21.22_amd64.deb
Size: 1555304
SHA256: 1111111111111111111111111111111111111111111111111111111111111111
"""  # noqa: E501


def test_parse_packages_reads_real_stanzas_and_keeps_the_highest_version() -> None:
    index = parse_packages(REAL_PACKAGES)
    assert sorted(index) == ["dpkg", "libgpuarray3", "libopenblas0-pthread", "python3-pygpu",
                             "python3-six"]
    gpuarray = index["libgpuarray3"]
    assert gpuarray == DebStanza(
        package="libgpuarray3", version="0.7.6-13+b1", architecture="amd64",
        filename="pool/main/libg/libgpuarray/libgpuarray3_0.7.6-13+b1_amd64.deb", size=103232,
        sha256="1bfa4e635c8ab9139c910beb2d90c9e2614a70ec9edf5afbb0f263331220219b",
        depends="libc6 (>= 2.34), ocl-icd-opencl-dev | nvidia-cuda-dev", priority="optional")
    assert index["libopenblas0-pthread"].provides == "libblas.so.3, liblapack.so.3"
    assert index["python3-six"].architecture == "all"
    assert index["dpkg"].essential
    # The order in the file must not matter.
    stanzas = REAL_PACKAGES.split("\n\n")
    assert parse_packages("\n\n".join(reversed(stanzas))) == index


@pytest.mark.parametrize("size", [1, 7, 64, 1 << 20])
@pytest.mark.parametrize("compress", ["Packages.xz", "Packages.gz", "Packages"])
def test_the_streaming_subset_is_what_the_whole_parse_gives(size: int, compress: str) -> None:
    """Whatever the pieces' size, the subset holds the wanted names (highest version), the
    packages providing one of them (a whole name: libblas.so is not libblas.so.3) and the
    base system's, exactly as parse_packages has them."""
    raw = REAL_PACKAGES.encode()
    data = {"Packages.xz": lzma.compress, "Packages.gz": gzip.compress,
            "Packages": bytes}[compress](raw)
    full = parse_packages(REAL_PACKAGES)
    for names in (sorted(full)[:2], sorted(full)[-1:], ["no-such-package"], [],
                  ["liblapack.so.3"], ["libblas.so", "blas.so.3"]):
        wanted = {k: v for k, v in full.items() if k in names or v.essential
                  or not {p.strip() for p in v.provides.split(",")}.isdisjoint(names)}
        assert parse_packages_subset(index_chunks(data, compress, size), names) == wanted
    assert "libopenblas0-pthread" in parse_packages_subset([raw], ["liblapack.so.3"])
    assert any(v.essential for v in full.values())  # the sample has one to keep


def test_a_cut_short_index_is_refused() -> None:
    data = lzma.compress(REAL_PACKAGES.encode())
    with pytest.raises(EOFError):
        list(index_chunks(data[: len(data) // 2], "Packages.xz"))


def test_parse_packages_refuses_entries_without_checksums() -> None:
    with pytest.raises(ResolveError, match="libbroken lacks SHA256"):
        parse_packages("Package: libbroken\nVersion: 1\nArchitecture: amd64\n"
                       "Filename: pool/x.deb\nSize: 3\n")


# The head of bookworm's InRelease (checksum lists cut short), with one dash-escaped line.
REAL_INRELEASE = """\
-----BEGIN PGP SIGNED MESSAGE-----
Hash: SHA256

Origin: Debian
Label: Debian
Suite: oldstable
Version: 12.15
Codename: bookworm
Acquire-By-Hash: yes
No-Support-for-Architecture-all: Packages
Architectures: all amd64 arm64 armel armhf i386 mips64el mipsel ppc64el s390x
Components: main contrib non-free-firmware non-free
- -Description: not a field, dash-escaped by the signer
Description: Debian 12.15 Released 11 July 2026
MD5Sum:
 f230d61720e789abf5df55d6026230c6 50060337 main/binary-amd64/Packages
 b838d31986207780a596ce3e8010f90f  8790396 main/binary-amd64/Packages.xz
SHA256:
 515e692f2c4121c6fcec444ef100cc18f79a991910615f3a88c8b7becfc94d2f 50060337 main/binary-amd64/Packages
 6777ea16514725f9427f48c240d92e0a6b8496138e37a1491d8597e66774e309 12084798 main/binary-amd64/Packages.gz
 9e0b5aabb2465b3d2e7a7fe27f9913846277833f7a2826e7767acccff5b588c5  8790396 main/binary-amd64/Packages.xz
-----BEGIN PGP SIGNATURE-----

iHUEARYIAB0WIQTq3P2qt1ueR+NJYW4eD1IEFAmpSGJUACgkQ+NJYW4eD1IG8uQEAtZWA
=AfjX
-----END PGP SIGNATURE-----
"""  # noqa: E501


def test_inrelease_body_and_release_fields() -> None:
    body = inrelease_body(REAL_INRELEASE)
    assert body.startswith("Origin: Debian\n")
    assert "\n-Description: not a field" in body
    assert "PGP" not in body
    release = parse_release(body)
    assert (release.suite, release.codename) == ("oldstable", "bookworm")
    assert release.components == ("main", "contrib", "non-free-firmware", "non-free")
    assert "amd64" in release.architectures
    assert release.acquire_by_hash
    assert release.sha256["main/binary-amd64/Packages.xz"] == (
        "9e0b5aabb2465b3d2e7a7fe27f9913846277833f7a2826e7767acccff5b588c5", 8790396)
    assert len(release.sha256) == 3  # MD5 sums are not mistaken for SHA256 ones
    assert inrelease_body(body) == body  # a plain Release passes through


def test_release_without_sha256_or_signature_block_is_refused() -> None:
    no_sha = REAL_INRELEASE.split("SHA256:")[0] + "-----BEGIN PGP SIGNATURE-----\n"
    with pytest.raises(ResolveError, match="no SHA256"):
        parse_release(inrelease_body(no_sha))
    with pytest.raises(ResolveError, match="cut short"):
        inrelease_body(REAL_INRELEASE.split("-----BEGIN PGP SIGNATURE-----")[0])
