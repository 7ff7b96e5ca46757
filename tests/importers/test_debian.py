"""The [debian] section init writes from the mounted packs' ``init_debian`` rows: the
platform's rows only, one suite, never a key the section already sets."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from envforge.importers.debian import debian_additions, debian_packages, section_keys
from envforge.importers.legacy_names import FrameworkRow, framework_sections
from envforge.knowledge.models import InitDebianRow
from envforge.packapi import Registry
from tests.testing.packs import REGISTRY


@dataclass(frozen=True)
class RowPack:
    """A pack that brings only Debian rows (the core reads nothing else of it here)."""

    name: str
    init_debian: Sequence[InitDebianRow] = ()
    implicit: bool = False


def deb(packages: Sequence[str], *, suite: str = "bookworm", platform: Any = "linux-64",
        keys: dict[str, str] | None = None) -> InitDebianRow:
    return InitDebianRow(platform=platform, suite=suite, packages=tuple(packages),
                         keys=keys or {}, reason="needed", source="test")


def mounted(section: str, keys: dict[str, str] | None = None) -> FrameworkRow:
    return FrameworkRow(section=section, names=(section,), keys=keys or {}, reason="named",
                        source="test")


def test_the_theano_pack_adds_debians_openblas_on_linux_only() -> None:
    rows = framework_sections(["Theano-PyMC==1.0.5"], REGISTRY)
    (added,) = debian_additions(rows, "linux-64", REGISTRY)
    assert added.section == "theano" and added.where == "the theano pack"
    assert "libopenblas0-pthread" in added.row.packages
    assert "-lopenblas" in section_keys([added], "theano")["blas_ldflags"]
    assert debian_additions(rows, "win-64", REGISTRY) == []
    assert debian_additions(framework_sections(["torch==1.4.0"], REGISTRY), "linux-64",
                            REGISTRY) == []


def test_rows_of_one_suite_merge_and_another_suite_is_left_out() -> None:
    registry = Registry([RowPack("a", (deb(["liba", "libc"]), deb(["libz"], platform="win-64"))),
                         RowPack("b", (deb(["libb", "libc"]),
                                       deb(["libold"], suite="bullseye")))])
    added = debian_additions([mounted("a"), mounted("b")], "linux-64", registry)
    assert [(a.section, a.row.packages) for a in added] == [("a", ("liba", "libc")),
                                                            ("b", ("libb", "libc"))]
    assert debian_packages(added) == ["liba", "libc", "libb"]


def test_a_key_the_section_already_sets_is_not_overridden() -> None:
    flags = {"ldflags": "-lopenblas"}
    registry = Registry([RowPack("a", (deb(["libx"], keys=flags), deb(["liby"], keys=flags),
                                       deb(["libz"], keys={"other": "1"})))])
    added = debian_additions([mounted("a")], "linux-64", registry)
    assert [a.row.packages for a in added] == [("libx",), ("libz",)]  # the second ldflags: no
    assert section_keys(added, "a") == {"ldflags": "-lopenblas", "other": "1"}
    own = debian_additions([mounted("a", {"ldflags": "-lmkl_rt"})], "linux-64", registry)
    assert [a.row.packages for a in own] == [("libz",)]  # the mounted row's key wins
    assert debian_additions([mounted("unregistered")], "linux-64", registry) == []
