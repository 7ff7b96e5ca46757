"""Picking packages from a parsed index into lock records: the named ones, or (``[debian]
dependencies = "closure"``) those with every package their Pre-Depends and Depends pull in
as apt would choose it; and the hint for dependencies that neither the chosen set nor the
base system meets (a hint, not an error)."""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Collection, Iterator, Mapping, Sequence
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
    return stanza is not None and (stanza.essential or stanza.priority == "required")


def _relations(text: str) -> tuple[tuple[Relation, ...], ...] | None:
    try:
        return parse_relations(text)
    except ValueError:
        return None


def _provided(chosen: Mapping[str, DebStanza]) -> dict[str, list[str | None]]:
    """Virtual names the chosen packages provide, with the version each provides (or None)."""
    provided: dict[str, list[str | None]] = {}
    for stanza in chosen.values():
        _add_provides(provided, stanza)
    return provided


def _add_provides(provided: dict[str, list[str | None]], stanza: DebStanza) -> None:
    for name, version in _provides(stanza):
        provided.setdefault(name, []).append(version)


def _provides(stanza: DebStanza) -> Iterator[tuple[str, str | None]]:
    """Each virtual name the package provides, with the version it provides (or None)."""
    for group in _relations(stanza.provides) or ():
        for rel in group:
            yield rel.name, rel.version if rel.op == "=" else None


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


def _base_met(rel: Relation, index: Mapping[str, DebStanza],
              base_provided: Mapping[str, list[str | None]]) -> bool:
    """The base system is assumed at whatever version a relation asks; a virtual name one
    of its packages provides (``awk``: mawk) counts as the base system's too."""
    return _is_base(rel.name, index) or _met(rel, {}, base_provided)


def _base_provides(index: Mapping[str, DebStanza]) -> dict[str, list[str | None]]:
    return _provided({n: s for n, s in index.items() if _is_base(n, index)})


def unmet_dependencies(chosen: Mapping[str, DebStanza],
                       index: Mapping[str, DebStanza]) -> tuple[str, ...]:
    """One hint per Depends/Pre-Depends entry that neither the set nor the base system meets."""
    provided = _provided(chosen)
    base_provided = _base_provides(index)
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
                if any(_base_met(rel, index, base_provided) or _met(rel, chosen, provided)
                       for rel in group):
                    continue
                needed_by.setdefault(" | ".join(str(r) for r in group), []).append(name)
    return (*(
        f"{relation} (needed by {', '.join(sorted(set(users)))}) is neither in "
        "[debian].packages nor a base-system package"
        for relation, users in sorted(needed_by.items())), *unreadable)


# --- the dependency closure -----------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Closure:
    """The named packages and what their dependencies pulled in, each added one with the
    package whose relation pulled it (``required_by``); ``unknown``: names the walk had to
    look up before it could choose, which the index it was given was not searched for."""

    chosen: Mapping[str, DebStanza]
    required_by: Mapping[str, str]
    unknown: frozenset[str] = frozenset()


def _providers(index: Mapping[str, DebStanza]) -> dict[str, list[tuple[DebStanza, str | None]]]:
    providers: dict[str, list[tuple[DebStanza, str | None]]] = {}
    for name in sorted(index):
        for virtual, version in _provides(index[name]):
            providers.setdefault(virtual, []).append((index[name], version))
    return providers


def _candidate(rel: Relation, index: Mapping[str, DebStanza],
               providers: Mapping[str, list[tuple[DebStanza, str | None]]]) -> DebStanza | None:
    """What apt installs for one alternative: the real package when its version fits, else
    a package providing the name (at a fitting version, for a versioned relation), the
    first by name where several do (Debian's policy has a real package first in such a
    group, so the choice among providers is rarely apt's to make)."""
    stanza = index.get(rel.name)
    if stanza is not None and (rel.op is None or rel.version is None
                               or satisfies(stanza.version, rel.op, rel.version)):
        return stanza
    for provider, version in providers.get(rel.name, ()):
        if rel.op is None or rel.version is None or (
                version is not None and satisfies(version, rel.op, rel.version)):
            return provider
    return None


def dependency_closure(index: Mapping[str, DebStanza], names: Sequence[str], *,
                       looked_up: Collection[str] | None = None) -> Closure:
    """The named packages with their Pre-Depends and Depends, breadth first, as apt adds them.

    A group that the set or the base system already meets adds nothing; otherwise its first
    alternative the archive has (at a version the relation admits, directly or through
    Provides) is added and walked in turn; a package is added once, so cycles end. Where
    ``looked_up`` is given, ``index`` holds only the stanzas found for those names (their
    packages and providers, and the base system's): a group whose choice needs a name
    outside them is left undecided and the name is returned in ``unknown``, so the caller
    searches the archive for it and walks again; with every name looked up the result is
    the one the whole index gives. A group none of whose alternatives exists stays unmet
    (``unmet_dependencies`` names it)."""
    providers = _providers(index)
    base_provided = _base_provides(index)
    chosen = {name: index[name] for name in sorted(set(names))}
    provided = _provided(chosen)
    required_by: dict[str, str] = {}
    unknown: set[str] = set()
    queue = deque(chosen)
    while queue:
        stanza = chosen[queue.popleft()]
        for field in (stanza.pre_depends, stanza.depends):
            for group in _relations(field) or ():
                if any(_base_met(rel, index, base_provided) or _met(rel, chosen, provided)
                       for rel in group):
                    continue
                pick = None
                for rel in group:
                    if looked_up is not None and rel.name not in looked_up:
                        unknown.add(rel.name)
                        break
                    pick = _candidate(rel, index, providers)
                    if pick is not None:
                        break
                if pick is None:
                    continue
                chosen[pick.package] = pick
                required_by[pick.package] = stanza.package
                _add_provides(provided, pick)
                queue.append(pick.package)
    return Closure(chosen=chosen, required_by=required_by, unknown=frozenset(unknown))


# --- the lock records -----------------------------------------------------------------------

class DebResolution(Frozen):
    """The locked records, sorted by name, and hints for the spec's author."""

    records: tuple[LockedDeb, ...]
    warnings: tuple[str, ...] = ()


def _safe_pool_path(filename: str) -> bool:
    parts = filename.split("/")
    return not filename.startswith("/") and ".." not in parts and "" not in parts


def select_packages(index: Mapping[str, DebStanza], names: Sequence[str], *, mirror: str,
                    suite: str, closure: Closure | None = None) -> DebResolution:
    """Pick each named package from a parsed index, or the ``closure`` of them where given;
    URLs are built on the canonical mirror."""
    wanted = sorted(set(names))
    unknown = [n for n in wanted if n not in index]
    if unknown:
        raise ResolveError(f"Debian {suite} has no package named {', '.join(unknown)}")
    chosen = {name: index[name] for name in wanted} if closure is None else dict(closure.chosen)
    required_by = {} if closure is None else closure.required_by
    records = []
    for name in sorted(chosen):
        stanza = chosen[name]
        if not _safe_pool_path(stanza.filename):
            raise ResolveError(f"{name}: index gives an unsafe Filename {stanza.filename!r}")
        records.append(LockedDeb(
            name=name, version=stanza.version, architecture=stanza.architecture,
            filename=stanza.filename, url=f"{mirror.rstrip('/')}/{stanza.filename}",
            sha256=stanza.sha256, size=stanza.size, depends=stanza.depends,
            required_by=required_by.get(name)))
    return DebResolution(records=tuple(records), warnings=unmet_dependencies(chosen, index))
