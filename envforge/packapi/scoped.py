"""``ScopedPacks``: the registry a callback reads where its shape has no room for one.

A pack's verify rows and doctor rules are plain functions of what they judge (a report, the
host's facts); the core code that runs them sets the registry for their extent, as
``decimal.localcontext`` does, and the few helpers they call read it back. Outside that
extent there is none (no global fallback), so a forgotten scope shows as no packs asked.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Generic, TypeVar

from envforge.packapi.registry import Pack, Registry

P = TypeVar("P", bound=Pack)


class ScopedPacks(Generic[P]):
    """One context variable holding a registry for the extent of a ``using`` block."""

    __slots__ = ("_var",)

    def __init__(self, name: str) -> None:
        self._var: ContextVar[Registry[P] | None] = ContextVar(name, default=None)

    @contextmanager
    def using(self, registry: Registry[P]) -> Iterator[None]:
        token = self._var.set(registry)
        try:
            yield
        finally:
            self._var.reset(token)

    def current(self) -> Registry[P] | None:
        """The registry of the innermost ``using`` block; None outside every one."""
        return self._var.get()
