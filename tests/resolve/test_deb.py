"""Debian resolution: dpkg version order, index parsing, a local archive, and bookworm itself."""

from __future__ import annotations

import gzip
import hashlib
import json
import lzma
import re
import shutil
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from envforge.errors import ResolveError
from envforge.host.archives import sha256_file
from envforge.host.debunpack import missing_dev_links, unpack_deb
from envforge.host.proc import run
from envforge.lockfile import LockedDeb
from envforge.lockplan import stack_versions
from envforge.resolve.deb import (
    DebStanza,
    HttpFetch,
    Relation,
    compare_versions,
    index_chunks,
    inrelease_body,
    parse_packages,
    parse_packages_subset,
    parse_relations,
    parse_release,
    resolve_debs,
    satisfies,
    select_packages,
    split_version,
    unmet_dependencies,
    version_key,
)
from envforge.spec import DEBIAN_MIRROR, DebianSection, load_spec
from tests.host.test_debunpack import LIBDIR, build_deb
from tests.testing.conda_channel import serve
from tests.testing.packs import REGISTRY

REPO = Path(__file__).resolve().parents[2]

# --- dpkg version ordering ----------------------------------------------------------------

ORDERED_PAIRS = [  # (lower, higher)
    ("1.9", "1:2.0"),
    ("9.9", "1:0.1"),  # any epoch beats no epoch
    ("1.0~rc1", "1.0"),
    ("1.0~~", "1.0~"),
    ("1.0~rc1", "1.0~rc2"),
    ("0.3.21+ds-4", "0.3.21+ds-4+b1"),  # binNMU
    ("0.7.6-13", "0.7.6-13+b1"),
    ("12.2.0-14", "12.2.0-14+deb12u1"),  # stable update
    ("1.0-1", "1.0.0-1"),
    ("1.0a", "1.0+"),  # letters sort before other characters
    ("1.0", "1.0a"),
    ("2.7.0-1", "2.7.0+~cs2.7.4-1"),
    ("3.11.2-6", "3.11.2-6+deb12u8"),
    ("1.2", "1.10"),  # numerically, not as text
    ("1.22.0", "1:1.22.0"),
]
EQUAL_PAIRS = [("1.0", "1.0-0"), ("1.2", "1.02"), ("0:1.0", "1.0"), ("1.0-1", "1.0-01")]


@pytest.mark.parametrize(("low", "high"), ORDERED_PAIRS)
def test_compare_versions_orders(low: str, high: str) -> None:
    assert compare_versions(low, high) == -1
    assert compare_versions(high, low) == 1


@pytest.mark.parametrize(("a", "b"), EQUAL_PAIRS)
def test_compare_versions_equal(a: str, b: str) -> None:
    assert compare_versions(a, b) == 0


@pytest.mark.skipif(shutil.which("dpkg") is None, reason="needs dpkg as the reference")
def test_compare_versions_agrees_with_dpkg() -> None:
    pairs = [*ORDERED_PAIRS, *EQUAL_PAIRS, ("1:0.5-1", "2.0-1"), ("1.0~", "1.0~~a"),
             ("0.0~git20150311-3", "0.0.20150311-1"), ("2.04+ds.3", "2.04+ds-1")]
    for a, b in pairs:
        for op, expected in (("lt", -1), ("eq", 0), ("gt", 1)):
            holds = run(["dpkg", "--compare-versions", a, op, b], check=False).returncode == 0
            assert holds == (compare_versions(a, b) == expected), (a, op, b)


def test_sorting_by_version_key() -> None:
    versions = ["1.0", "1:0.1", "1.0~rc1", "1.0-1", "1.0+b1", "0.9", "1.0-1+b1"]
    assert sorted(versions, key=version_key) == [
        "0.9", "1.0~rc1", "1.0", "1.0-1", "1.0-1+b1", "1.0+b1", "1:0.1"]


@pytest.mark.parametrize("bad", ["", "a1.0", "x:1.0", "1:"])
def test_malformed_versions_are_refused(bad: str) -> None:
    with pytest.raises(ValueError, match="version"):
        split_version(bad)


def test_split_version_takes_the_last_hyphen() -> None:
    assert split_version("1:0.5-10.1-2") == (1, "0.5-10.1", "2")


@pytest.mark.parametrize(("version", "op", "ref", "expected"), [
    ("0.7.6-13+b1", "=", "0.7.6-13+b1", True),
    ("0.7.6-13+b1", "=", "0.7.6-13", False),
    ("3.11.2-6", "<<", "3.12", True),
    ("3.12.1-1", "<<", "3.12", False),
    ("3.11.2-6", ">=", "3.11~", True),
    ("1:1.24.2-1", ">=", "1:1.22.0", True),
    ("1.24.2-1", ">=", "1:1.22.0", False),
    ("2", ">>", "2", False),
    ("2", "<=", "2", True),
])
def test_satisfies(version: str, op: str, ref: str, expected: bool) -> None:
    assert satisfies(version, op, ref) is expected


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
        depends="libc6 (>= 2.34), ocl-icd-opencl-dev | nvidia-cuda-dev")
    assert index["libopenblas0-pthread"].provides == "libblas.so.3, liblapack.so.3"
    assert index["python3-six"].architecture == "all"
    assert index["dpkg"].essential
    # The order in the file must not matter.
    stanzas = REAL_PACKAGES.split("\n\n")
    assert parse_packages("\n\n".join(reversed(stanzas))) == index


@pytest.mark.parametrize("size", [1, 7, 64, 1 << 20])
@pytest.mark.parametrize("compress", ["Packages.xz", "Packages.gz", "Packages"])
def test_the_streaming_subset_is_what_the_whole_parse_gives(size: int, compress: str) -> None:
    """Whatever the pieces' size, the subset holds the wanted names (highest version) and
    the Essential packages, exactly as parse_packages has them."""
    raw = REAL_PACKAGES.encode()
    data = {"Packages.xz": lzma.compress, "Packages.gz": gzip.compress,
            "Packages": bytes}[compress](raw)
    full = parse_packages(REAL_PACKAGES)
    for names in (sorted(full)[:2], sorted(full)[-1:], ["no-such-package"], []):
        wanted = {k: v for k, v in full.items() if k in names or v.essential}
        assert parse_packages_subset(index_chunks(data, compress, size), names) == wanted
    assert any(v.essential for v in full.values())  # the sample has one to keep


def test_a_cut_short_index_is_refused() -> None:
    data = lzma.compress(REAL_PACKAGES.encode())
    with pytest.raises(EOFError):
        list(index_chunks(data[: len(data) // 2], "Packages.xz"))


def test_parse_packages_refuses_entries_without_checksums() -> None:
    with pytest.raises(ResolveError, match="libbroken lacks SHA256"):
        parse_packages("Package: libbroken\nVersion: 1\nArchitecture: amd64\n"
                       "Filename: pool/x.deb\nSize: 3\n")


def test_parse_relations() -> None:
    groups = parse_relations("python3 (<< 3.12), python3:any, ocl-icd-opencl-dev | "
                             "nvidia-cuda-dev, libc6 (>= 2.34) [amd64], debconf (>= 0.5) | "
                             "debconf-2.0")
    assert groups == (
        (Relation("python3", "<<", "3.12"),),
        (Relation("python3"),),
        (Relation("ocl-icd-opencl-dev"), Relation("nvidia-cuda-dev")),
        (Relation("libc6", ">=", "2.34"),),
        (Relation("debconf", ">=", "0.5"), Relation("debconf-2.0")),
    )
    assert parse_relations("") == ()
    with pytest.raises(ValueError, match="relation"):
        parse_relations("libfoo (>= )")


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


def test_unmet_dependencies_are_hints_not_errors() -> None:
    index = parse_packages(REAL_PACKAGES)
    chosen = {n: index[n] for n in ("python3-pygpu", "libgpuarray3", "python3-six")}
    warnings = unmet_dependencies(chosen, index)
    text = "\n".join(warnings)
    assert "ocl-icd-opencl-dev | nvidia-cuda-dev (needed by libgpuarray3)" in text
    assert "python3-numpy (>= 1:1.22.0) (needed by python3-pygpu)" in text
    assert "python3 (needed by python3-pygpu, python3-six)" in text  # python3:any, once
    assert "python3-mako (>= 0.7)" in text
    assert "libc6" not in text  # base system
    assert "libgpuarray3" not in text.replace("(needed by libgpuarray3)", "")  # in the set

    older = DebStanza(package="libgpuarray3", version="0.7.6-13", architecture="amd64",
                      filename="pool/x.deb", size=1, sha256="0" * 64)
    mismatched = unmet_dependencies({**chosen, "libgpuarray3": older}, index)
    assert any(w.startswith("libgpuarray3 (= 0.7.6-13+b1) (needed by python3-pygpu)")
               for w in mismatched)


def test_provides_satisfy_dependencies() -> None:
    index = parse_packages(REAL_PACKAGES)
    needs_blas = DebStanza(package="uses-blas", version="1", architecture="amd64",
                           filename="pool/u.deb", size=1, sha256="0" * 64,
                           depends="libblas.so.3, libgfortran5 (>= 8)")
    chosen = {"uses-blas": needs_blas, "libopenblas0-pthread": index["libopenblas0-pthread"]}
    assert unmet_dependencies(chosen, index) == (
        "libgfortran5 (>= 8) (needed by libopenblas0-pthread, uses-blas) is neither in "
        "[debian].packages nor a base-system package",)


def test_unreadable_dependencies_are_reported_not_raised() -> None:
    odd = DebStanza(package="odd", version="1", architecture="amd64", filename="pool/o.deb",
                    size=1, sha256="0" * 64, depends="libfoo (>= )")
    assert unmet_dependencies({"odd": odd}, {}) == (
        "odd: cannot read its dependencies 'libfoo (>= )'",)


def test_select_packages_names_unknown_packages_and_the_suite() -> None:
    index = parse_packages(REAL_PACKAGES)
    with pytest.raises(ResolveError, match=r"bookworm has no package named libnope, python3-nope"):
        select_packages(index, ["python3-six", "python3-nope", "libnope"],
                        mirror=DEBIAN_MIRROR, suite="bookworm")


def test_select_packages_records() -> None:
    index = parse_packages(REAL_PACKAGES)
    result = select_packages(index, ["python3-six", "libgpuarray3", "python3-six"],
                             mirror=DEBIAN_MIRROR + "/", suite="bookworm")
    assert [r.name for r in result.records] == ["libgpuarray3", "python3-six"]
    six = result.records[1]
    assert six == LockedDeb(
        name="python3-six", version="1.16.0-4", architecture="all",
        filename="pool/main/s/six/python3-six_1.16.0-4_all.deb",
        url="https://deb.debian.org/debian/pool/main/s/six/python3-six_1.16.0-4_all.deb",
        sha256="fd189e9cecbcf17a1fc20aec30055c8afa9c1eec00cd6e7ab385087a2ab3b0d3", size=17516,
        depends="python3:any")


def test_select_packages_refuses_unsafe_pool_paths() -> None:
    index = parse_packages(REAL_PACKAGES.replace("pool/main/s/six/", "pool/../../"))
    with pytest.raises(ResolveError, match="unsafe Filename"):
        select_packages(index, ["python3-six"], mirror=DEBIAN_MIRROR, suite="bookworm")


# Verbatim from bullseye's main/binary-amd64/Packages (Description, Tag and MD5sum trimmed):
# the GPU spec's Python, NumPy (with an epoch) and pygpu.
BULLSEYE_PACKAGES = """\
Package: python3-numpy
Source: numpy
Version: 1:1.19.5-1
Installed-Size: 14375
Maintainer: Sandro Tosi <morph@debian.org>
Architecture: amd64
Provides: dh-sequence-numpy3, python3-f2py, python3-numpy-abi9, python3-numpy-api13, python3-numpy-dev, python3.9-numpy
Depends: python3-pkg-resources, python3 (<< 3.10), python3 (>= 3.9~), python3.9:any, python3:any, libblas3 | libblas.so.3, libc6 (>= 2.29), liblapack3 | liblapack.so.3
Suggests: gcc (>= 4:4.6.1-5), gfortran, python-numpy-doc, python3-dev, python3-numpy-dbg, python3-pytest
Breaks: python3-aplpy (<< 2.0~rc2-1), python3-astropy (<< 3.1-1), python3-ccdproc (<< 1.3.0-5), python3-dask (<< 1.0.0+dfsg-2), python3-skimage (<< 0.14.1-3), python3-tables (<< 3.4.4-2), python3-theano (<< 1.0.3+dfsg-1)
Homepage: http://www.numpy.org/
Section: python
Priority: optional
Filename: pool/main/n/numpy/python3-numpy_1.19.5-1_amd64.deb
Size: 2693312
SHA256: fe8c8955be71be9f744729b73c73cc6bc01184daf253604f1d3ee16a8d64d30d

Package: python3-pygpu
Source: libgpuarray (0.7.6-5)
Version: 0.7.6-5+b3
Installed-Size: 4705
Maintainer: Debian Science Maintainers <debian-science-maintainers@lists.alioth.debian.org>
Architecture: amd64
Depends: python3 (<< 3.10), python3 (>= 3.9~), python3-mako (>= 0.7), python3-numpy (>= 1:1.16.0~rc1), python3-numpy-abi9, python3-six, python3:any, libc6 (>= 2.14), libgpuarray3 (= 0.7.6-5+b3)
Suggests: libgpuarray-doc
Homepage: https://github.com/Theano/libgpuarray
Section: python
Priority: optional
Filename: pool/main/libg/libgpuarray/python3-pygpu_0.7.6-5+b3_amd64.deb
Size: 435952
SHA256: 9b92287eaf221cd89267c47139954ba514f86ff1cd3f0c38f0b81cf73e8f06a5

Package: python3.9-minimal
Source: python3.9
Version: 3.9.2-1
Installed-Size: 5476
Maintainer: Matthias Klose <doko@debian.org>
Architecture: amd64
Depends: libpython3.9-minimal (= 3.9.2-1), libexpat1 (>= 2.1~beta3), zlib1g (>= 1:1.2.0)
Pre-Depends: libc6 (>= 2.29)
Recommends: python3.9
Suggests: binfmt-support
Conflicts: binfmt-support (<< 1.1.2)
Multi-Arch: allowed
Cnf-Visible-Pkgname: python3.9
Section: python
Priority: optional
Filename: pool/main/p/python3.9/python3.9-minimal_3.9.2-1_amd64.deb
Size: 1955456
SHA256: 5d6003c5c20223a2547ac4976e09a9ec778dbe351507a6292bef3b60df5f4aa7
"""  # noqa: E501


def test_bullseye_stanzas_lock_the_gpu_stack_versions() -> None:
    """NumPy's epoch, pygpu's needs met through NumPy's Provides, Python 3.9.2 read."""
    index = parse_packages(BULLSEYE_PACKAGES)
    names = ["python3-numpy", "python3-pygpu", "python3.9-minimal"]
    resolution = select_packages(index, names, mirror=DEBIAN_MIRROR, suite="bullseye")
    records = {r.name: r for r in resolution.records}
    assert records["python3-numpy"].version == "1:1.19.5-1"
    assert records["python3-numpy"].url == \
        f"{DEBIAN_MIRROR}/pool/main/n/numpy/python3-numpy_1.19.5-1_amd64.deb"
    assert records["python3-pygpu"].sha256 == \
        "9b92287eaf221cd89267c47139954ba514f86ff1cd3f0c38f0b81cf73e8f06a5"
    hints = "\n".join(resolution.warnings)
    # python3-numpy (>= 1:1.16.0~rc1) holds for 1:1.19.5-1 only with the epoch compared;
    # python3-numpy-abi9 is a virtual package NumPy provides.
    assert not [w for w in resolution.warnings if w.startswith("python3-numpy")]
    assert "libpython3.9-minimal (= 3.9.2-1) (needed by python3.9-minimal)" in hints
    assert "python3.9:any" not in hints and "zlib1g" not in hints and "libc6" not in hints
    without_numpy = select_packages(index, ["python3-pygpu"], mirror=DEBIAN_MIRROR,
                                    suite="bullseye")
    assert any(w.startswith("python3-numpy (>= 1:1.16.0~rc1) (needed by python3-pygpu)")
               for w in without_numpy.warnings)
    assert any(w.startswith("python3-numpy-abi9 (needed by python3-pygpu)")
               for w in without_numpy.warnings)
    versions = stack_versions(load_spec(REPO / "specs" / "theano-gpu-linux.toml", REGISTRY)
                              .for_platform("linux-64"), REGISTRY,
                              pypi=(), conda=(), deb=resolution.records)
    assert (versions["python"], versions["numpy"], versions["pygpu"]) == \
        ("3.9.2", "1.19.5", "0.7.6")


# --- a local archive of real .deb files -------------------------------------------------------

SUITE = "envforge-test"


@dataclass(frozen=True)
class Mirror:
    root: Path
    url: str


def signing_key(home: Path) -> Path:
    """A throwaway OpenPGP key made with gpg; returns the public keyring gpgv reads."""
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    gpg = ["gpg", "--homedir", str(home), "--batch", "--pinentry-mode", "loopback",
           "--passphrase", ""]
    subprocess.run([*gpg, "--quick-gen-key", "envforge tests <tests@envforge.invalid>",
                    "ed25519", "sign", "never"], check=True, capture_output=True)
    keyring = home / "public.gpg"
    keyring.write_bytes(subprocess.run([*gpg, "--export"], check=True,
                                       capture_output=True).stdout)
    return keyring


def clearsign(text: str, home: Path) -> str:
    return subprocess.run(["gpg", "--homedir", str(home), "--batch", "--pinentry-mode",
                           "loopback", "--passphrase", "", "--clearsign"], input=text,
                          text=True, check=True, capture_output=True).stdout


def _write_release(root: Path, *, inrelease: bool = False, gnupg: Path | None = None) -> None:
    dists = root / "dists" / SUITE
    sums = []
    for path in sorted((dists / "main").rglob("Packages*")):
        data = path.read_bytes()
        sums.append(f" {hashlib.sha256(data).hexdigest()} {len(data):>8} "
                    f"{path.relative_to(dists).as_posix()}")
    text = (f"Origin: envforge tests\nSuite: {SUITE}\nCodename: {SUITE}\n"
            "Architectures: amd64\nComponents: main\nSHA256:\n" + "\n".join(sums) + "\n")
    if inrelease:  # clear-signed with a real key, as Debian's archive does
        assert gnupg is not None
        (dists / "InRelease").write_text(clearsign(text, gnupg))
    else:
        (dists / "Release").write_text(text)


def build_mirror(root: Path) -> Path:
    """A Debian archive in miniature: real .debs, a Packages.xz from dpkg-scanpackages."""
    pool = root / "pool/main"
    pool.mkdir(parents=True)
    build_deb(pool, "libdemo1", "0.9-1", files={f"{LIBDIR}/libdemo.so.0.9": b"old"},
              symlinks={f"{LIBDIR}/libdemo.so.1": "libdemo.so.0.9"})
    alternative = "/etc/alternatives/libblas.so.3-x86_64-linux-gnu"  # dangling, as in Debian
    build_deb(pool, "libdemo1", "1.0-1",
              files={f"{LIBDIR}/libdemo.so.1.0.0": b"\x7fELF new",
                     "usr/share/doc/libdemo1/copyright": b"public domain\n"},
              symlinks={f"{LIBDIR}/libdemo.so.1": "libdemo.so.1.0.0",
                        f"{LIBDIR}/libblas.so.3": alternative},
              depends="libc6 (>= 2.34)")
    build_deb(pool, "demo-data", "2.0-1", files={"usr/share/demo/data": b"2.0"},
              architecture="all")
    build_deb(pool, "demo-data", "1:0.5-1", files={"usr/share/demo/data": b"epoch"},
              architecture="all")
    build_deb(pool, "demo-tools", "2.0~rc1-1", files={"usr/bin/demo": b"#!/bin/sh\n"},
              architecture="all", depends="libdemo1 (>= 1.0), libc6 (>= 2.34), python3:any, "
              "missing-thing | other-missing, libdemo1 (>> 5)")
    packages = run(["dpkg-scanpackages", "--multiversion", "pool", "/dev/null"], cwd=root).stdout
    index = root / "dists" / SUITE / "main/binary-amd64"
    index.mkdir(parents=True)
    (index / "Packages.xz").write_bytes(lzma.compress(packages.encode()))
    _write_release(root)
    return root


@pytest.fixture(scope="module")
def built_mirror(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("dpkg-deb") is None or shutil.which("dpkg-scanpackages") is None:
        pytest.skip("needs dpkg-deb and dpkg-scanpackages")
    return build_mirror(tmp_path_factory.mktemp("debian-mirror"))


@pytest.fixture()
def mirror(built_mirror: Path, tmp_path: Path) -> Iterator[Mirror]:
    """A private copy of the archive (tests may tamper with it), served over HTTP."""
    root = tmp_path / "mirror"
    shutil.copytree(built_mirror, root, symlinks=True)
    with serve(root) as url:
        yield Mirror(root, url)


class Counting:
    """The real HTTP fetch, remembering what it was asked for."""

    def __init__(self) -> None:
        self.inner = HttpFetch(timeout=10)
        self.urls: list[str] = []

    def __call__(self, url: str) -> bytes | None:
        self.urls.append(url)
        return self.inner(url)


def _section(*packages: str, **extra: object) -> DebianSection:
    return DebianSection.model_validate({"suite": SUITE, "packages": list(packages), **extra})


def test_resolve_download_verify_unpack(mirror: Mirror, tmp_path: Path) -> None:
    section = _section("libdemo1", "demo-tools", "demo-data")
    result = resolve_debs(section, "linux-64", base_url=mirror.url, cache_dir=tmp_path / "cache")

    assert [(r.name, r.version, r.architecture) for r in result.records] == [
        ("demo-data", "1:0.5-1", "all"),  # the epoch wins over 2.0-1
        ("demo-tools", "2.0~rc1-1", "all"),
        ("libdemo1", "1.0-1", "amd64"),  # not 0.9-1
    ]
    for record in result.records:
        assert record.url == f"{DEBIAN_MIRROR}/{record.filename}"  # never the local mirror
        pool_file = mirror.root / record.filename
        assert record.size == pool_file.stat().st_size
        assert record.sha256 == hashlib.sha256(pool_file.read_bytes()).hexdigest()
    tools = result.records[1]
    assert tools.depends.startswith("libdemo1 (>= 1.0), libc6 (>= 2.34)")
    warnings = "\n".join(result.warnings)
    assert "missing-thing | other-missing (needed by demo-tools)" in warnings
    assert "libdemo1 (>> 5) (needed by demo-tools)" in warnings
    assert "python3 (needed by demo-tools)" in warnings
    assert "libc6" not in warnings and "libdemo1 (>= 1.0)" not in warnings
    assert "Release is unsigned: its hashes were not authenticated" in result.warnings[0]
    assert len(result.warnings) == 4

    libdemo = result.records[2]
    data = HttpFetch()(f"{mirror.url}/{libdemo.filename}")
    assert data is not None
    deb = tmp_path / Path(libdemo.filename).name
    deb.write_bytes(data)
    assert (sha256_file(deb), deb.stat().st_size) == (libdemo.sha256, libdemo.size)
    root = tmp_path / "root"
    unpacked = unpack_deb(deb, root)
    assert (root / LIBDIR / "libdemo.so.1").read_bytes() == b"\x7fELF new"
    assert root / LIBDIR / "libdemo.so.1.0.0" in unpacked.written
    assert [link for link, _ in unpacked.dangling] == [root / LIBDIR / "libblas.so.3"]
    assert missing_dev_links(root) == [(root / LIBDIR / "libdemo.so", "libdemo.so.1")]


def test_relock_with_unchanged_release_fetches_only_release(mirror: Mirror,
                                                            tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    fetch = Counting()
    first = resolve_debs(_section("libdemo1"), "linux-64", fetch=fetch, base_url=mirror.url,
                         cache_dir=cache)
    index_url = f"{mirror.url}/dists/{SUITE}/main/binary-amd64/Packages.xz"
    assert index_url in fetch.urls
    cached = [p for p in cache.iterdir() if p.is_file()]
    sha = hashlib.sha256(
        (mirror.root / f"dists/{SUITE}/main/binary-amd64/Packages.xz").read_bytes()).hexdigest()
    assert [p.name for p in cached] == [f"{sha}-Packages.xz"]

    fetch.urls.clear()
    again = resolve_debs(_section("libdemo1"), "linux-64", fetch=fetch, base_url=mirror.url,
                         cache_dir=cache)
    assert again == first
    assert fetch.urls == [f"{mirror.url}/dists/{SUITE}/InRelease",
                          f"{mirror.url}/dists/{SUITE}/Release"]

    # A new index (a changed Release) is fetched again, under its own sha256.
    index = mirror.root / f"dists/{SUITE}/main/binary-amd64/Packages.xz"
    index.write_bytes(lzma.compress(lzma.decompress(index.read_bytes()) + b"\n"))
    _write_release(mirror.root)
    fetch.urls.clear()
    resolve_debs(_section("libdemo1"), "linux-64", fetch=fetch, base_url=mirror.url,
                 cache_dir=cache)
    assert index_url in fetch.urls
    assert len([p for p in cache.iterdir() if p.is_file()]) == 2
    assert len(list((cache / "parsed").iterdir())) == 2


@pytest.mark.parametrize("damage", [
    lambda text: text[: len(text) // 2],
    lambda text: text.replace('"1.0-1"', '"9.0-1"'),  # a stanza edited: its sha256 no longer
    lambda text: text.replace('"format": 1', '"format": 0'),
])
def test_damaged_parsed_entry_is_parsed_again(damage: Callable[[str], str], mirror: Mirror,
                                              tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = resolve_debs(_section("libdemo1"), "linux-64", base_url=mirror.url, cache_dir=cache)
    (parsed,) = (cache / "parsed").iterdir()
    parsed.write_text(damage(parsed.read_text()))
    again = resolve_debs(_section("libdemo1"), "linux-64", base_url=mirror.url, cache_dir=cache)
    assert again == first
    assert json.loads(parsed.read_text())["format"] == 1


def test_parsed_entry_is_per_set_of_names(mirror: Mirror, tmp_path: Path) -> None:
    """Another set of names is another entry: a name the first set lacked is never
    taken for absent from the index."""
    cache = tmp_path / "cache"
    resolve_debs(_section("libdemo1"), "linux-64", base_url=mirror.url, cache_dir=cache)
    both = resolve_debs(_section("libdemo1", "demo-tools"), "linux-64", base_url=mirror.url,
                        cache_dir=cache)
    assert [r.name for r in both.records] == ["demo-tools", "libdemo1"]
    assert len(list((cache / "parsed").iterdir())) == 2


def test_damaged_cache_entry_is_fetched_again(mirror: Mirror, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    resolve_debs(_section("libdemo1"), "linux-64", base_url=mirror.url, cache_dir=cache)
    (entry,) = (p for p in cache.iterdir() if p.is_file())
    entry.write_bytes(b"garbage")
    shutil.rmtree(cache / "parsed")  # else the parsed entry answers without the index
    fetch = Counting()
    result = resolve_debs(_section("libdemo1"), "linux-64", fetch=fetch, base_url=mirror.url,
                          cache_dir=cache)
    assert result.records[0].version == "1.0-1"
    assert len(fetch.urls) == 3  # InRelease (404), Release, Packages.xz
    assert hashlib.sha256(entry.read_bytes()).hexdigest() == entry.name.split("-")[0]


def test_index_not_matching_release_is_refused(mirror: Mirror, tmp_path: Path) -> None:
    index = mirror.root / f"dists/{SUITE}/main/binary-amd64/Packages.xz"
    text = lzma.decompress(index.read_bytes()).decode()
    forged = re.sub(r"SHA256: [0-9a-f]{64}", "SHA256: " + "e" * 64, text)
    index.write_bytes(lzma.compress(forged.encode()))  # the Release file is left as it was
    cache = tmp_path / "cache"
    with pytest.raises(ResolveError, match="does not match the sha256"):
        resolve_debs(_section("libdemo1"), "linux-64", base_url=mirror.url, cache_dir=cache)
    assert not cache.exists() or not any(cache.iterdir())


def test_unreadable_index_is_a_resolve_error(mirror: Mirror, tmp_path: Path) -> None:
    index = mirror.root / f"dists/{SUITE}/main/binary-amd64/Packages.xz"
    index.write_bytes(b"not xz at all")
    _write_release(mirror.root)  # listed with its true sha256: only its content is wrong
    with pytest.raises(ResolveError, match=r"cannot read main/binary-amd64/Packages\.xz"):
        resolve_debs(_section("libdemo1"), "linux-64", base_url=mirror.url,
                     cache_dir=tmp_path / "cache")


def test_inrelease_is_preferred_to_release(mirror: Mirror, tmp_path: Path) -> None:
    keyring = signing_key(tmp_path / "gnupg")
    _write_release(mirror.root, inrelease=True, gnupg=tmp_path / "gnupg")
    (mirror.root / f"dists/{SUITE}/Release").write_text("not a Release file at all")
    fetch = Counting()
    result = resolve_debs(_section("demo-data", keyring=str(keyring)), "linux-64", fetch=fetch,
                          base_url=mirror.url, cache_dir=tmp_path / "cache")
    assert result.records[0].version == "1:0.5-1"
    assert f"{mirror.url}/dists/{SUITE}/Release" not in fetch.urls
    assert not any("unsigned" in w or "signature" in w for w in result.warnings)


def test_a_forged_inrelease_is_refused(mirror: Mirror, tmp_path: Path) -> None:
    """The signed text altered after signing (a hash swapped), or signed by another key."""
    keyring = signing_key(tmp_path / "gnupg")
    _write_release(mirror.root, inrelease=True, gnupg=tmp_path / "gnupg")
    inrelease = mirror.root / f"dists/{SUITE}/InRelease"
    signed = inrelease.read_text()
    digest = re.search(r" ([0-9a-f]{64}) ", signed)
    assert digest is not None
    inrelease.write_text(signed.replace(digest.group(1), "0" * 64))
    with pytest.raises(ResolveError, match="InRelease signature does not verify"):
        resolve_debs(_section("demo-data", keyring=str(keyring)), "linux-64",
                     base_url=mirror.url, cache_dir=tmp_path / "cache")
    inrelease.write_text(signed)
    other = signing_key(tmp_path / "other")
    with pytest.raises(ResolveError, match="InRelease signature does not verify"):
        resolve_debs(_section("demo-data", keyring=str(other)), "linux-64",
                     base_url=mirror.url, cache_dir=tmp_path / "cache")


def test_file_url_mirror(built_mirror: Path, tmp_path: Path) -> None:
    result = resolve_debs(_section("demo-tools"), "linux-64", base_url=built_mirror.as_uri(),
                          cache_dir=tmp_path / "cache")
    assert result.records[0].url == f"{DEBIAN_MIRROR}/{result.records[0].filename}"


def test_errors_name_what_is_missing(mirror: Mirror, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    with pytest.raises(ResolveError, match=f"{SUITE} has no package named libnope"):
        resolve_debs(_section("libdemo1", "libnope"), "linux-64", base_url=mirror.url,
                     cache_dir=cache)
    with pytest.raises(ResolveError, match="no component 'contrib'"):
        resolve_debs(_section("libdemo1", components=["main", "contrib"]), "linux-64",
                     base_url=mirror.url, cache_dir=cache)
    with pytest.raises(ResolveError, match="suite 'sid' not found"):
        resolve_debs(DebianSection(suite="sid", packages=("x",)), "linux-64",
                     base_url=mirror.url, cache_dir=cache)
    with pytest.raises(ResolveError, match="only available for linux-64"):
        resolve_debs(_section("libdemo1"), "win-64", base_url=mirror.url, cache_dir=cache)


# --- Debian's archive itself ----------------------------------------------------------------------

SHA256 = re.compile(r"^[0-9a-f]{64}$")


@pytest.mark.network
def test_bookworm(tmp_path: Path) -> None:
    section = DebianSection(suite="bookworm", packages=(
        "libopenblas0-pthread", "python3-pygpu", "libgpuarray3", "libquadmath0"))
    cache = tmp_path / "cache"
    result = resolve_debs(section, "linux-64", cache_dir=cache)
    records = {r.name: r for r in result.records}
    assert list(records) == ["libgpuarray3", "libopenblas0-pthread", "libquadmath0",
                             "python3-pygpu"]
    for record in result.records:
        assert record.architecture == "amd64"
        assert record.filename.startswith("pool/main/") and record.filename.endswith(".deb")
        assert record.url == f"{DEBIAN_MIRROR}/{record.filename}"
        assert SHA256.match(record.sha256) and record.size > 0
        split_version(record.version)  # well-formed
    assert records["libopenblas0-pthread"].version.startswith("0.3.21+ds")
    assert records["python3-pygpu"].version.startswith("0.7.6")
    # pygpu pins its library exactly, and the lock holds that very version.
    assert f"libgpuarray3 (= {records['libgpuarray3'].version})" in records["python3-pygpu"].depends
    warnings = "\n".join(result.warnings)
    assert "python3-numpy (>= 1:1.22.0)" in warnings
    # InRelease was checked by gpgv against Debian's archive keyring: no authentication warning
    assert "signature" not in warnings and "unsigned" not in warnings
    assert "libgfortran5 (>= 8) (needed by libopenblas0-pthread)" in warnings
    assert "libc6" not in warnings and "gcc-12-base" not in warnings

    fetch = Counting()
    assert resolve_debs(section, "linux-64", fetch=fetch, cache_dir=cache) == result
    assert fetch.urls == [f"{DEBIAN_MIRROR}/dists/bookworm/InRelease"]

    quadmath = records["libquadmath0"]
    data = HttpFetch()(quadmath.url)
    assert data is not None
    deb = tmp_path / Path(quadmath.filename).name
    deb.write_bytes(data)
    assert (sha256_file(deb), deb.stat().st_size) == (quadmath.sha256, quadmath.size)
    root = tmp_path / "root"
    unpacked = unpack_deb(deb, root)
    lib = root / LIBDIR
    real = next(lib.glob("libquadmath.so.0.*"))
    assert real.read_bytes()[:4] == b"\x7fELF"
    assert (lib / "libquadmath.so.0").resolve() == real.resolve()
    assert set(unpacked.written) >= {real, lib / "libquadmath.so.0"}
    # Its doc folder is a link into gcc-N-base, a package not unpacked here.
    assert [link.name for link, _ in unpacked.dangling] == ["libquadmath0"]
    assert missing_dev_links(root) == [(lib / "libquadmath.so", "libquadmath.so.0")]


@pytest.mark.network
def test_bullseye_is_authenticated_by_debians_keyring(tmp_path: Path) -> None:
    """bullseye's InRelease (signed by the bookworm automatic and bullseye stable keys)
    checks out against debian-archive-keyring.gpg; its Python is 3.9.2, NumPy 1.19.5."""
    section = DebianSection(suite="bullseye", packages=(
        "python3.9-minimal", "python3-numpy", "python3-pygpu", "python3-distutils"))
    result = resolve_debs(section, "linux-64", cache_dir=tmp_path / "cache")
    records = {r.name: r for r in result.records}
    assert records["python3.9-minimal"].version == "3.9.2-1"
    assert records["python3-numpy"].version == "1:1.19.5-1"
    assert records["python3-pygpu"].version.startswith("0.7.6-")
    assert records["python3-distutils"].architecture == "all"
    warnings = "\n".join(result.warnings)
    assert "signature" not in warnings and "unsigned" not in warnings
    assert "python3-numpy (>= 1:1.16.0~rc1)" not in warnings


@pytest.mark.network
@pytest.mark.slow
def test_bookworm_openblas_needs_an_unversioned_link(tmp_path: Path) -> None:
    """GPU.md: -lopenblas needs libopenblas.so, which the runtime package lacks."""
    section = DebianSection(suite="bookworm", packages=("libopenblas0-pthread",))
    (record,) = resolve_debs(section, "linux-64", cache_dir=tmp_path / "cache").records
    data = HttpFetch()(record.url)
    assert data is not None
    deb = tmp_path / Path(record.filename).name
    deb.write_bytes(data)
    assert (sha256_file(deb), deb.stat().st_size) == (record.sha256, record.size)
    root = tmp_path / "root"
    unpack_deb(deb, root)
    folder = root / LIBDIR / "openblas-pthread"
    links = dict(missing_dev_links(root))
    assert links[folder / "libopenblas.so"] == "libopenblas.so.0"
    (folder / "libopenblas.so").symlink_to(links[folder / "libopenblas.so"])
    assert (folder / "libopenblas.so").resolve().name.startswith("libopenblasp-r0.3.21")
