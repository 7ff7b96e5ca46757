"""Legacy names mapped to what installs today: the original ``theano`` by theano.toml's
[[distributions]] row (to ``Theano-PyMC==1.0.5``, the only Theano envforge locks), others by
the rows of knowledge/legacy_names.toml (``tensorflow-gpu`` admitting 1.15 -> ``tensorflow``).
Conda names become PyPI names, and conda-only packages are reported.
"""

from __future__ import annotations

import functools
import tomllib
from datetime import date
from importlib import resources

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from pydantic import Field

from envforge.spec import Frozen


class RenameRow(Frozen):
    name: str
    admits: str
    to: str
    reason: str
    source: str


class CondaRenameRow(Frozen):
    name: str
    pypi: str
    source: str


class CondaOnlyRow(Frozen):
    names: tuple[str, ...] = ()
    prefixes: tuple[str, ...] = ()
    reason: str
    source: str


class PythonReleaseRow(Frozen):
    python: str = Field(pattern=r"^3\.\d+$")
    day: date
    source: str


class LegacyNames(Frozen):
    rename: tuple[RenameRow, ...]
    conda_rename: tuple[CondaRenameRow, ...]
    conda_only: tuple[CondaOnlyRow, ...]
    python_release: tuple[PythonReleaseRow, ...]


@functools.cache
def legacy_names() -> LegacyNames:
    text = resources.files("envforge.knowledge").joinpath("legacy_names.toml").read_text(
        encoding="utf-8")
    return LegacyNames.model_validate(tomllib.loads(text))


def map_requirement(text: str) -> tuple[str, str]:
    """The requirement to write and, when it changed, why (with the rule's source)."""
    try:
        requirement = Requirement(text)
    except InvalidRequirement:
        return text, ""
    name = canonicalize_name(requirement.name)
    from envforge.packs.theano.knowledge import map_legacy_theano, theano_distribution

    theano = theano_distribution(name)
    if theano is not None and theano.maps_to is not None and not requirement.url:
        mapped = map_legacy_theano(text)
        return mapped, (f"was {text}: the original Theano; envforge's rules are for "
                        f"{theano.maps_to} (packs/theano/theano.toml [[distributions]])")
    for row in legacy_names().rename:
        if row.name != name or requirement.url:
            continue
        if not requirement.specifier.contains(row.admits, prereleases=True):
            return text, f"kept as written: it does not admit {row.admits} ({row.to} would)"
        mapped = row.to.replace("{specifier}", str(requirement.specifier))
        if requirement.marker is not None:
            mapped += f"; {requirement.marker}"
        return mapped, f"was {text}: {row.reason} (knowledge/legacy_names.toml)"
    return text, ""


def conda_to_pypi(name: str) -> tuple[str | None, str]:
    """The PyPI name of a conda package, or None and the reason it is not imported."""
    key = canonicalize_name(name)
    for row in legacy_names().conda_rename:
        if row.name == key:
            return row.pypi, f"conda's {name} is {row.pypi} on PyPI"
    for only in legacy_names().conda_only:
        if key in only.names or name.lower().startswith(only.prefixes):
            return None, only.reason
    return name, ""


def python_release_day(minor: str) -> date | None:
    """The day Python ``minor`` was released: no earlier ``as_of`` can resolve for it."""
    return next((r.day for r in legacy_names().python_release if r.python == minor), None)
