"""The registry is an ordered, immutable value: lookups keep its order, a spec naming no pack
mounts the implicit ones, and two packs of one name are refused rather than one shadowed."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from envforge.errors import EnvforgeError
from envforge.packapi import Registry


@dataclass(frozen=True)
class Toy:
    name: str
    implicit: bool = False


A, B, C = Toy("a", implicit=True), Toy("b"), Toy("c")


def test_lookups_keep_the_registry_order() -> None:
    registry = Registry([A, B, C])
    assert list(registry) == [A, B, C] and registry.names == ("a", "b", "c")
    assert registry.active({"c", "a", "zzz"}) == [A, C]
    assert registry.locked(("c", "b")) == [B, C]
    assert registry.get("b") is B and registry.get("zzz") is None
    assert "a" in registry and "zzz" not in registry and len(registry) == 3


def test_mounted_falls_back_to_the_implicit_packs() -> None:
    registry = Registry([A, B, C])
    assert registry.mounted({"b": {}, "python": {}}) == [B]
    assert registry.mounted({"python": {}}) == [A]
    assert Registry([B]).mounted({}) == []


def test_a_name_twice_is_refused() -> None:
    with pytest.raises(EnvforgeError, match="two packs are named 'a'"):
        Registry([A, Toy("a")])


def test_a_value() -> None:
    assert Registry([A, B]) == Registry([A, B]) != Registry([B, A])
    assert not hasattr(Registry([A]), "__dict__")
