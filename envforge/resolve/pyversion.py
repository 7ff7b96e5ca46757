"""Which full Python version the PyPI resolver is given: the one the environment will have.

uv reads ``--python-version 3.7`` as 3.7.0, so a spec that says only ``3.7`` would refuse
every release that requires ``>=3.7.1`` (pandas 1.2-1.3.5) although the environment will
run 3.7.16. The spec's own patch pin wins; then the Python another source provides (Debian's
``python3.X-minimal``, conda's ``python``); then the interpreter apply would use on this host.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from envforge.lockfile import LockedCondaPackage, LockedDeb
from envforge.lockplan import locked_python
from envforge.spec import PlatformSpec


@dataclass(frozen=True)
class ResolverPython:
    version: str  # e.g. 3.7.16
    origin: str  # where it came from, for the notes


def resolver_python(pspec: PlatformSpec, *, conda: Sequence[LockedCondaPackage] = (),
                    deb: Sequence[LockedDeb] = (),
                    find: Callable[[str], str | None]) -> ResolverPython:
    """The version for uv; ``find(minor)`` returns this host's interpreter's version or None."""
    pinned = pspec.python.version
    if pinned.count(".") == 2:
        return ResolverPython(pinned, "the spec's [python] version")
    provided = locked_python(pspec, conda=conda, deb=deb)
    if provided.count(".") == 2 and provided.startswith(pspec.python.minor + "."):
        return ResolverPython(provided, "the environment's Debian or conda python")
    if pspec.environment.kind == "venv":
        found = find(pspec.python.minor)
        if found is not None:
            return ResolverPython(found, f"the Python {pspec.python.minor} found on this host; "
                                  f'pin [python] version = "{found}" to lock the same anywhere')
    return ResolverPython(pinned, f"[python] version (no Python {pinned} found; uv reads it as "
                          f"{pinned}.0)")
