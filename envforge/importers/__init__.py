"""Reading a legacy repository's own dependency files into requirements with their origin.

Every reader is pure over the file's text (setup.py is parsed, never executed) and returns
what it found with ``file:line`` and what it could not use with the reason, so ``envforge
init`` can write a spec whose every pin says where it came from.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from packaging.requirements import Requirement


class UnreadableError(ValueError):
    """A dependency file init must refuse (a wrong type, an include outside the repository):
    the repository's reader names the file, relative to the repository, and the line."""

    def __init__(self, name: str, reason: str, *, line: int | None = None) -> None:
        super().__init__(reason)
        self.name = name
        self.reason = reason
        self.line = line


@dataclass(frozen=True)
class Found:
    """One requirement as a file states it (PEP 508 text) and where."""

    requirement: str
    origin: str  # e.g. requirements.txt:3
    note: str = ""  # what init changed, e.g. a legacy name mapped
    mapped: bool = False  # envforge's choice, not the project's: it does not date the project


@dataclass(frozen=True)
class Skipped:
    """Something a file asks for that the spec cannot carry, and why."""

    what: str
    origin: str
    reason: str


@dataclass
class Imported:
    """What one file (or a whole repository) contributes."""

    requirements: list[Found] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    python: list[tuple[str, str]] = field(default_factory=list)  # (version or range, origin)
    index: list[tuple[str, str]] = field(default_factory=list)  # (URL, origin)
    extra_indexes: list[tuple[str, str]] = field(default_factory=list)  # (URL, origin)
    find_links: list[tuple[str, str]] = field(default_factory=list)  # (URL, origin)
    # the project's optional requirements (setup.py's extras_require), each noted with its
    # extra: init adds those the code imports
    extras: list[Found] = field(default_factory=list)
    # the project's own compiled extensions (setup.py's ext_modules), (module, origin): no
    # wheel gives them, its code imports them from its own folder once built there
    extensions: list[tuple[str, str]] = field(default_factory=list)
    # requirement lines a pip file comments out (``# mxnet``): reported where the code
    # imports them, as what the code needs and the file leaves out
    commented: list[Found] = field(default_factory=list)

    def extend(self, other: Imported) -> None:
        self.requirements += other.requirements
        self.skipped += other.skipped
        self.python += other.python
        self.index += other.index
        self.extra_indexes += other.extra_indexes
        self.find_links += other.find_links
        self.extras += other.extras
        self.extensions += other.extensions
        self.commented += other.commented


def release_line(requirement: Requirement) -> str | None:
    """The release line one ``==X.Y.*`` pin names (``1.0.*``), as a README's "PyTorch 1.0"
    is read; None for anything else."""
    specifiers = list(requirement.specifier)
    if len(specifiers) == 1 and specifiers[0].operator == "==" \
            and specifiers[0].version.endswith(".*"):
        return specifiers[0].version
    return None


def exact_version(requirement: Requirement) -> str | None:
    """The one release an exact pin names (``==1.2.0``; not ``==1.*``, nor two pins)."""
    exact = [s.version for s in requirement.specifier
             if s.operator in ("==", "===") and "*" not in s.version]
    return exact[0] if len(exact) == 1 else None
