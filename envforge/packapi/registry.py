"""``Registry``: the packs by name, in the order that decides which pack runs the core's
kernels and the order of rows; an immutable value built once and handed down."""

from __future__ import annotations

from collections.abc import Container, Iterator, Mapping, Sequence
from typing import Any, Generic, Protocol, TypeVar

from envforge.errors import EnvforgeError


class Pack(Protocol):
    """What the registry itself reads of a pack; callers declare the members they call."""

    @property
    def name(self) -> str:
        """The pack's spec section ``[NAME]`` and lock table ``expect.NAME``."""

    @property
    def implicit(self) -> bool:
        """Mounted where a spec names no pack (a spec without [theano] is a Theano stack)."""


P = TypeVar("P", bound=Pack, covariant=True)


class Registry(Generic[P]):
    """The packs by name, in registry order. Generic over the pack type so that a caller
    typed against its own narrow Protocol accepts the registry of full packs."""

    __slots__ = ("_packs",)

    def __init__(self, packs: Sequence[P]) -> None:
        by_name: dict[str, P] = {}
        for pack in packs:
            if pack.name in by_name:
                raise EnvforgeError(f"two packs are named {pack.name!r}")
            by_name[pack.name] = pack
        self._packs: Mapping[str, P] = by_name

    def __iter__(self) -> Iterator[P]:
        return iter(tuple(self._packs.values()))

    def __len__(self) -> int:
        return len(self._packs)

    def __contains__(self, name: object) -> bool:
        return name in self._packs

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Registry):
            return NotImplemented
        return list(self._packs.items()) == list(other._packs.items())

    def __hash__(self) -> int:
        return hash(tuple(self._packs))

    def __repr__(self) -> str:
        return f"Registry({', '.join(self._packs)})"

    @property
    def names(self) -> tuple[str, ...]:
        """The packs' section names, in registry order."""
        return tuple(self._packs)

    def get(self, name: str) -> P | None:
        """The pack named ``name``, or None where none is registered."""
        return self._packs.get(name)

    def active(self, names: Container[str]) -> list[P]:
        """The packs among ``names`` (a platform's mounted packs, a lock's expectation tables),
        in registry order."""
        return [pack for name, pack in self._packs.items() if name in names]

    def locked(self, names: Container[str]) -> list[P]:
        """The packs a lock holds expectations for (its ``expect`` tables), in registry order."""
        return self.active(names)

    def mounted(self, raw: Mapping[str, Any]) -> list[P]:
        """The packs a spec's sections call for, in registry order; where it names none, the
        implicit ones."""
        return self.active(raw) or [pack for pack in self._packs.values() if pack.implicit]
