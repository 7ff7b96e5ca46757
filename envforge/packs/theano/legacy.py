"""``envforge init`` and Theano: the original Theano's requirement rewritten for
Theano-PyMC, and the ``[compiler]`` section a Theano repository's spec needs."""

from __future__ import annotations

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from envforge.packs.theano.knowledge import map_legacy_theano, theano_distribution


def legacy_requirement(text: str) -> tuple[str, str] | None:
    requirement = Requirement(text)
    theano = theano_distribution(canonicalize_name(requirement.name))
    if theano is None or theano.maps_to is None or requirement.url:
        return None
    return map_legacy_theano(text), (f"was {text}: the original Theano; envforge's rules are "
                                     f"for {theano.maps_to} (packs/theano/theano.toml "
                                     "[[distributions]])")


def compiler_note(requirement: str) -> str | None:
    """Theano (either distribution) compiles its kernels with g++ at run time."""
    if Requirement(requirement).name.lower() in ("theano", "theano-pymc"):
        return "Theano compiles its kernels with the host's g++"
    return None
