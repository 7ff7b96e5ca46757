"""Picking the named packages from a parsed index into lock records, and the hint for
dependencies that neither the chosen set nor the base system meets (a hint, not an error:
envforge installs no dependency closure)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from envforge.errors import ResolveError
from envforge.lockfile import LockedDeb
from envforge.model import Frozen
from envforge.resolve.deb.index import DebStanza
from envforge.resolve.deb.versions import satisfies

# Dependencies every glibc Linux host already satisfies, or dpkg machinery that means
# nothing in an unpacked prefix. Packages marked ``Essential: yes`` in the index count too.
BASE_SYSTEM = frozenset({
    "libc6", "libgcc-s1", "libstdc++6", "zlib1g", "liblzma5", "libbz2-1.0", "libzstd1",
    "libcrypt1", "libtinfo6", "libncursesw6", "libuuid1", "libselinux1", "libpcre2-8-0",
    "debconf", "debconf-2.0", "dpkg", "install-info", "init-system-helpers", "sensible-utils",
})
_BASE_PATTERN = re.compile(r"^gcc-\d+-base$")  # only a doc folder; versioned with its compiler


@dataclass(frozen=True, slots=True)
class Relation:
    """One alternative of a Depends entry: ``name[:arch] [(op version)]``."""

    name: str
    op: str | None = None
    version: str | None = None

    def __str__(self) -> str:
        return self.name if self.op is None else f"{self.name} ({self.op} {self.version})"


_RELATION = re.compile(
    r"^\s*(?P<name>[a-z0-9][a-z0-9+.\-]*)(?::[a-z0-9-]+)?\s*"
    r"(?:\(\s*(?P<op><<|<=|>=|>>|=|<|>)\s*(?P<version>[0-9][^)\s]*)\s*\))?\s*"
    r"(?:\[[^\]]*\]\s*)?(?:<[^>]*>\s*)*$")


def parse_relations(text: str) -> tuple[tuple[Relation, ...], ...]:
    """A Depends-style field as AND-groups of OR-alternatives."""
    groups: list[tuple[Relation, ...]] = []
    for group in text.split(","):
        if not group.strip():
            continue
        alternatives = []
        for alt in group.split("|"):
            match = _RELATION.match(alt)
            if match is None:
                raise ValueError(f"cannot read Debian relation {alt.strip()!r}")
            alternatives.append(Relation(match["name"], match["op"], match["version"]))
        groups.append(tuple(alternatives))
    return tuple(groups)


def _is_base(name: str, index: Mapping[str, DebStanza]) -> bool:
    if name in BASE_SYSTEM or _BASE_PATTERN.match(name):
        return True
    stanza = index.get(name)
    return stanza is not None and stanza.essential


def _relations(text: str) -> tuple[tuple[Relation, ...], ...] | None:
    try:
        return parse_relations(text)
    except ValueError:
        return None


def _provided(chosen: Mapping[str, DebStanza]) -> dict[str, list[str | None]]:
    """Virtual names the chosen packages provide, with the version each provides (or None)."""
    provided: dict[str, list[str | None]] = {}
    for stanza in chosen.values():
        for group in _relations(stanza.provides) or ():
            for rel in group:
                provided.setdefault(rel.name, []).append(rel.version if rel.op == "=" else None)
    return provided


def _met(rel: Relation, chosen: Mapping[str, DebStanza],
         provided: Mapping[str, list[str | None]]) -> bool:
    stanza = chosen.get(rel.name)
    if stanza is not None and (rel.op is None or rel.version is None
                               or satisfies(stanza.version, rel.op, rel.version)):
        return True
    for version in provided.get(rel.name, ()):
        if rel.op is None or rel.version is None:
            return True
        if version is not None and satisfies(version, rel.op, rel.version):
            return True
    return False


def unmet_dependencies(chosen: Mapping[str, DebStanza],
                       index: Mapping[str, DebStanza]) -> tuple[str, ...]:
    """One hint per Depends/Pre-Depends entry that neither the set nor the base system meets."""
    provided = _provided(chosen)
    needed_by: dict[str, list[str]] = {}
    unreadable: list[str] = []
    for name in sorted(chosen):
        stanza = chosen[name]
        for field in (stanza.pre_depends, stanza.depends):
            groups = _relations(field)
            if groups is None:
                unreadable.append(f"{name}: cannot read its dependencies {field!r}")
                continue
            for group in groups:
                if any(_is_base(rel.name, index) or _met(rel, chosen, provided)
                       for rel in group):
                    continue
                needed_by.setdefault(" | ".join(str(r) for r in group), []).append(name)
    return (*(
        f"{relation} (needed by {', '.join(sorted(set(users)))}) is neither in "
        "[debian].packages nor a base-system package"
        for relation, users in sorted(needed_by.items())), *unreadable)


# --- the lock records -----------------------------------------------------------------------

class DebResolution(Frozen):
    """The locked records, sorted by name, and hints for the spec's author."""

    records: tuple[LockedDeb, ...]
    warnings: tuple[str, ...] = ()


def _safe_pool_path(filename: str) -> bool:
    parts = filename.split("/")
    return not filename.startswith("/") and ".." not in parts and "" not in parts


def select_packages(index: Mapping[str, DebStanza], names: Sequence[str], *, mirror: str,
                    suite: str) -> DebResolution:
    """Pick each named package from a parsed index; URLs are built on the canonical mirror."""
    wanted = sorted(set(names))
    unknown = [n for n in wanted if n not in index]
    if unknown:
        raise ResolveError(f"Debian {suite} has no package named {', '.join(unknown)}")
    chosen = {name: index[name] for name in wanted}
    records = []
    for name, stanza in chosen.items():
        if not _safe_pool_path(stanza.filename):
            raise ResolveError(f"{name}: index gives an unsafe Filename {stanza.filename!r}")
        records.append(LockedDeb(
            name=name, version=stanza.version, architecture=stanza.architecture,
            filename=stanza.filename, url=f"{mirror.rstrip('/')}/{stanza.filename}",
            sha256=stanza.sha256, size=stanza.size, depends=stanza.depends))
    return DebResolution(records=tuple(records), warnings=unmet_dependencies(chosen, index))
