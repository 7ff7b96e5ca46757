"""ScopedPacks: the registry is seen inside its ``using`` block only, the innermost one
winning, and none outside (no global fallback)."""

from __future__ import annotations

from envforge.packapi import Registry, ScopedPacks


class _Pack:
    def __init__(self, name: str) -> None:
        self.name = name
        self.implicit = False


def test_the_innermost_block_s_registry_is_seen_and_none_outside() -> None:
    scoped: ScopedPacks[_Pack] = ScopedPacks("test_scoped")
    outer, inner = Registry([_Pack("a")]), Registry([_Pack("b")])
    assert scoped.current() is None
    with scoped.using(outer):
        assert scoped.current() is outer
        with scoped.using(inner):
            assert scoped.current() is inner
        assert scoped.current() is outer
    assert scoped.current() is None


def test_a_failure_inside_still_leaves_no_registry_behind() -> None:
    scoped: ScopedPacks[_Pack] = ScopedPacks("test_scoped_failure")
    try:
        with scoped.using(Registry([_Pack("a")])):
            raise RuntimeError
    except RuntimeError:
        pass
    assert scoped.current() is None
