"""``envforge init`` and Theano: the original Theano's requirement rewritten for
Theano-PyMC, and the ``[compiler]`` section a Theano repository's spec needs."""

from __future__ import annotations

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from envforge.packs.theano.knowledge import map_legacy_theano, theano_distribution


def legacy_requirement(text: str) -> tuple[str, str] | None:
    """The original Theano's requirement as Theano-PyMC's, and why. A URL one too
    (``git+https://github.com/Theano/Theano.git#egg=theano``, mila-iqia/blocks'): the
    original's own development tree, whose last release 1.0.5 the row maps; left as it
    was, init stopped at lock's refusal of the original Theano before any repair ran."""
    requirement = Requirement(text)
    theano = theano_distribution(canonicalize_name(requirement.name))
    if theano is None or theano.maps_to is None:
        return None
    what = (f"the original Theano's development tree, last released as "
            f"{theano.releases[-1]}") if requirement.url else "the original Theano"
    requirement.url = None
    return map_legacy_theano(str(requirement)), (
        f"was {text}: {what}; envforge's rules are for {theano.maps_to} "
        "(packs/theano/theano.toml [[distributions]])")


def compiler_note(requirement: str) -> str | None:
    """Theano (either distribution) compiles its kernels with g++ at run time."""
    if Requirement(requirement).name.lower() in ("theano", "theano-pymc"):
        return "Theano compiles its kernels with the host's g++"
    return None
