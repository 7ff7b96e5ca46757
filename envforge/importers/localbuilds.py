"""Exact pins of local builds (``torch==1.4.0+cpu``) and the sources that serve them.

A local version label marks a build not published to public indexes (PEP 440, "Local version
identifiers": they "SHOULD NOT be used when publishing upstream projects to a public index
server"), and PyPI refuses such an upload ("Can't use PEP 440 local versions.", warehouse's
upload check). Such a pin resolves only from the find-links page or index its requirements
name beside it (PyTorch's ``-f https://download.pytorch.org/whl/torch_stable.html``); where
none is left, the pin becomes the public release the build was made from.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from envforge.importers import Found, Imported, exact_version

SOURCE = ("PEP 440, local version identifiers (https://peps.python.org/pep-0440/"
          "#local-version-identifiers); PyPI refuses them on upload")


def local_label(version: str) -> str | None:
    """The local label of a version (``cpu`` of ``1.4.0+cpu``), None for a public one."""
    try:
        return Version(version).local
    except InvalidVersion:
        return None


def public_version(version: str) -> str:
    """``1.4.0`` of ``1.4.0+cpu``; the version itself where it is public or unparsable."""
    try:
        return Version(version).public
    except InvalidVersion:
        return version


def sources(imported: Imported) -> tuple[str, ...]:
    """The find-links pages and extra indexes the requirements name, in order, once each: what
    may serve a local build besides the index."""
    return tuple(dict.fromkeys(url for url, _ in (*imported.find_links,
                                                  *imported.extra_indexes)))


def public_pins(requirements: Sequence[Found], why: str) -> list[Found]:
    """Each exact pin of a local build moved to its public release (markers kept), the old
    pin and ``why`` (what leaves no source for it) in its note; the rest as they are."""
    out: list[Found] = []
    for found in requirements:
        moved = _public(found.requirement)
        if moved is None:
            out.append(found)
            continue
        requirement, label = moved
        note = (f"was {found.requirement}: a local build (+{label}), {why}; PyPI holds none "
                f"({SOURCE}): {public_version(_exact(found.requirement))} is the release it "
                f"was built from{_cuda_note(label)}")
        out.append(Found(requirement, found.origin,
                         f"{found.note}; {note}" if found.note else note, found.mapped))
    return out


def _cuda_note(label: str) -> str:
    """PyTorch's ``+cu110``: the build was for CUDA 11.0, and PyPI's build of the same
    release may hold another (torch 1.7.1's is CUDA 10.2), which a GPU host's driver must
    run."""
    match = re.fullmatch(r"cu(\d+)(\d)", label)
    if match is None:
        return ""
    return (f" (the build was for CUDA {match[1]}.{match[2]}; PyPI's may be for another, "
            "which the host's driver must run: verify's device rows say)")


def _exact(text: str) -> str:
    version = exact_version(Requirement(text))
    assert version is not None
    return version


def _public(text: str) -> tuple[str, str] | None:
    """(the requirement pinned to the public release, the local label) for an exact pin of
    a local build from the index; None for anything else."""
    try:
        requirement = Requirement(text)
    except InvalidRequirement:
        return None
    version = exact_version(requirement) if requirement.url is None else None
    label = local_label(version) if version is not None else None
    if version is None or label is None:
        return None
    requirement.specifier = SpecifierSet(",".join(
        f"=={public_version(version)}" if s.operator in ("==", "===") else str(s)
        for s in requirement.specifier))
    return str(requirement), label
