"""dpkg's version order, checked against dpkg itself where it is installed."""

from __future__ import annotations

import shutil

import pytest

from envforge.host.proc import run
from envforge.resolve.deb.versions import compare_versions, satisfies, split_version, version_key

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
