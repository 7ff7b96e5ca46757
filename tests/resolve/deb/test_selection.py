"""Picking packages from a parsed index, and the hint for unmet dependencies."""

from __future__ import annotations

from pathlib import Path

import pytest

from envforge.errors import ResolveError
from envforge.lockfile import LockedDeb
from envforge.lockplan import stack_versions
from envforge.resolve.deb.index import (
    DebStanza,
    parse_packages,
)
from envforge.resolve.deb.selection import (
    Relation,
    dependency_closure,
    parse_relations,
    select_packages,
    unmet_dependencies,
)
from envforge.spec import DEBIAN_MIRROR, load_spec
from tests.resolve.deb.test_index import REAL_PACKAGES
from tests.testing.packs import REGISTRY

REPO = Path(__file__).resolve().parents[3]


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


# --- the dependency closure ------------------------------------------------------------------

def _deb(name: str, version: str = "1.0-1", *, depends: str = "", pre_depends: str = "",
         provides: str = "", essential: bool = False, priority: str = "optional") -> DebStanza:
    return DebStanza(package=name, version=version, architecture="amd64",
                     filename=f"pool/main/{name}_{version}_amd64.deb", size=1, sha256="0" * 64,
                     depends=depends, pre_depends=pre_depends, provides=provides,
                     essential=essential, priority=priority)


def _index(*stanzas: DebStanza) -> dict[str, DebStanza]:
    return {s.package: s for s in stanzas}


def _added(index: dict[str, DebStanza], *names: str) -> dict[str, str]:
    return dict(dependency_closure(index, names).required_by)


def test_closure_takes_the_first_alternative_the_archive_has() -> None:
    index = _index(_deb("app", depends="libgone1 | libfoo1 | libbar1"), _deb("libfoo1"),
                   _deb("libbar1"))
    assert _added(index, "app") == {"libfoo1": "app"}  # libgone1 is not in the archive
    # a group the set already meets, by any alternative, adds nothing (apt's choice too)
    assert _added(index, "app", "libbar1") == {}


def test_closure_checks_versions_and_falls_to_the_next_alternative() -> None:
    index = _index(_deb("app", depends="libv (>= 2.0) | libw, libx (<< 1:0)"),
                   _deb("libv", "1.9-1"), _deb("libw"), _deb("libx", "1:0.5-1"))
    closure = dependency_closure(index, ["app"])
    assert dict(closure.required_by) == {"libw": "app"}  # libv 1.9 is too old; libx too new
    hints = unmet_dependencies(closure.chosen, index)
    assert hints == ("libx (<< 1:0) (needed by app) is neither in [debian].packages nor a "
                     "base-system package",)
    # the epoch counts: 1:0.5 >= 0.9
    assert _added(_index(_deb("app", depends="libx (>= 0.9)"), _deb("libx", "1:0.5-1")),
                  "app") == {"libx": "app"}


def test_closure_reaches_virtual_packages_through_provides() -> None:
    index = _index(
        _deb("app", depends="mail-transport-agent, libblas.so.3, python3-abi (>= 3.11)"),
        _deb("postfix", provides="mail-transport-agent"),
        _deb("exim4", provides="mail-transport-agent"),
        _deb("libopenblas0", provides="libblas.so.3, liblapack.so.3"),
        _deb("python3-old", provides="python3-abi (= 3.9)"),
        _deb("python3-new", provides="python3-abi (= 3.11)"),
        _deb("python3-any", provides="python3-abi"))  # unversioned: meets no versioned need
    assert _added(index, "app") == {"exim4": "app", "libopenblas0": "app",
                                    "python3-new": "app"}  # several providers: the first by name
    # a provider already in the set meets the relation
    assert "exim4" not in _added(index, "app", "postfix")
    # a real package wins over providers, where its version fits
    index["mail-transport-agent"] = _deb("mail-transport-agent")
    assert _added(index, "app")["mail-transport-agent"] == "app"


def test_closure_follows_pre_depends_and_ends_on_cycles() -> None:
    index = _index(_deb("a", pre_depends="b"), _deb("b", depends="c"),
                   _deb("c", depends="a (= 1.0-1), b"))
    closure = dependency_closure(index, ["a"])
    assert sorted(closure.chosen) == ["a", "b", "c"]
    assert dict(closure.required_by) == {"b": "a", "c": "b"}


def test_closure_leaves_the_base_system_to_the_host() -> None:
    index = _index(
        _deb("app", depends="libc6 (>= 2.99), gcc-12-base, coreutils, tzdata, awk, libz1"),
        _deb("libc6"), _deb("gcc-12-base"), _deb("coreutils", essential=True),
        _deb("tzdata", priority="required"), _deb("mawk", provides="awk", priority="required"),
        _deb("gawk", provides="awk"), _deb("libz1", depends="libc6"))
    assert _added(index, "app") == {"libz1": "app"}


def _looked_up(full: dict[str, DebStanza], names: set[str]) -> dict[str, DebStanza]:
    """What mirror.py's scan of the index gives for these names."""
    return {n: s for n, s in full.items() if n in names or s.essential
            or s.priority == "required" or any(
                rel.name in names for group in parse_relations(s.provides) for rel in group)}


def test_a_closure_walked_by_lookups_is_the_whole_index_closure() -> None:
    """mirror.py searches the archive only for the names each walk asks for; where it has
    looked every one up, the closure is the one the whole index gives."""
    full = _index(
        _deb("app", depends="libgone | libfoo, mta, libv (>= 2)"),
        _deb("libfoo", depends="libdeep, awk"), _deb("libdeep", pre_depends="app"),
        _deb("libv", "1.0-1"), _deb("libv2", provides="libv (= 2.1)"),
        _deb("exim4", provides="mta", depends="libfoo"), _deb("mawk", provides="awk",
                                                               priority="required"))
    wanted = {"app"}
    rounds = 0
    while True:
        rounds += 1
        closure = dependency_closure(_looked_up(full, wanted), ["app"], looked_up=wanted)
        if not closure.unknown:
            break
        wanted |= closure.unknown
    whole = dependency_closure(full, ["app"])
    assert (closure.chosen, closure.required_by) == (whole.chosen, whole.required_by)
    assert sorted(whole.chosen) == ["app", "exim4", "libdeep", "libfoo", "libv2"]
    assert rounds == 4  # a level of the graph a round: app; libgone, mta, libv; libfoo; libdeep


def test_select_packages_records_what_pulled_each_package_in() -> None:
    index = _index(_deb("app", depends="libfoo"), _deb("libfoo", depends="libbar"),
                   _deb("libbar"))
    resolution = select_packages(index, ["app"], mirror=DEBIAN_MIRROR, suite="bookworm",
                                 closure=dependency_closure(index, ["app"]))
    assert [(r.name, r.required_by) for r in resolution.records] == [
        ("app", None), ("libbar", "libfoo"), ("libfoo", "app")]
    assert resolution.warnings == ()
    named = select_packages(index, ["app"], mirror=DEBIAN_MIRROR, suite="bookworm")
    assert [r.name for r in named.records] == ["app"] and named.warnings
