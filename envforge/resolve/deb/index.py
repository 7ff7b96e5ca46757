"""Debian's index files read: deb822 stanzas, a Packages index (whole, or streamed for the
few names a lock wants) and a Release file with the sha256 of each index it vouches for."""

from __future__ import annotations

import itertools
import lzma
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from envforge.errors import ResolveError
from envforge.host.zipread import INFLATER
from envforge.resolve.deb.versions import compare_versions


def parse_deb822(text: str) -> list[dict[str, str]]:
    """Stanzas of ``Key: value`` fields; continuation lines are kept, joined by newlines."""
    stanzas: list[dict[str, str]] = []
    for block in re.split(r"\n[ \t]*\n", text.replace("\r\n", "\n")):
        fields: dict[str, str] = {}
        key = ""
        for line in block.split("\n"):
            if not line or line.startswith("#"):
                continue
            if line[0] in " \t":
                if not key:
                    raise ValueError(f"continuation line before any field: {line!r}")
                fields[key] += "\n" + line.strip()
                continue
            key, sep, value = line.partition(":")
            if not sep:
                raise ValueError(f"not a 'Field: value' line: {line!r}")
            fields[key] = value.strip()
        if fields:
            stanzas.append(fields)
    return stanzas


@dataclass(frozen=True, slots=True)
class DebStanza:
    """The fields of one Packages entry that locking and the dependency check use."""

    package: str
    version: str
    architecture: str
    filename: str
    size: int
    sha256: str
    depends: str = ""
    pre_depends: str = ""
    provides: str = ""
    essential: bool = False
    priority: str = ""


_REQUIRED = ("Package", "Version", "Architecture", "Filename", "Size", "SHA256")


def parse_packages(text: str) -> dict[str, DebStanza]:
    """A Packages index by package name, keeping the highest version of each."""
    index: dict[str, DebStanza] = {}
    for fields in parse_deb822(text):
        _keep_highest(index, _stanza(fields))
    return index


def _stanza(fields: Mapping[str, str]) -> DebStanza:
    missing = [k for k in _REQUIRED if k not in fields]
    if missing:
        name = fields.get("Package", "<unnamed>")
        raise ResolveError(f"Packages entry {name} lacks {', '.join(missing)}")
    return DebStanza(
        package=fields["Package"], version=fields["Version"],
        architecture=fields["Architecture"], filename=fields["Filename"],
        size=int(fields["Size"]), sha256=fields["SHA256"].lower(),
        depends=fields.get("Depends", ""), pre_depends=fields.get("Pre-Depends", ""),
        provides=fields.get("Provides", ""), essential=fields.get("Essential") == "yes",
        priority=fields.get("Priority", ""))


def _keep_highest(index: dict[str, DebStanza], stanza: DebStanza) -> None:
    known = index.get(stanza.package)
    if known is None or compare_versions(stanza.version, known.version) > 0:
        index[stanza.package] = stanza


def parse_packages_subset(chunks: Iterable[bytes], wanted: Iterable[str]) -> dict[str, DebStanza]:
    """What ``parse_packages`` would give for the ``wanted`` names, the packages that
    provide one of them, and the base system (``Essential: yes`` or ``Priority: required``,
    which the dependency closure and check count as the host's), read from the index's
    text as it is decompressed: a regular expression finds the few stanzas that matter, and
    only those are split into fields (bookworm's main has 63,000; a lock wants a handful)."""
    names = sorted(set(wanted))
    alternatives = b"|".join(re.escape(n.encode("utf-8")) for n in names) or b"(?!)"
    # a literal "\n" first, not "^": the regular expression engine then skips ahead by search
    pattern = re.compile(
        rb"\n(?:Package: (?:" + alternatives + rb")[ \t]*\r?\n|Essential: yes[ \t]*\r?\n"
        rb"|Priority: required[ \t]*\r?\n|Provides: [^\n]*?(?<![a-z0-9+.-])(?:" + alternatives
        + rb")(?![a-z0-9+.-]))")
    index: dict[str, DebStanza] = {}
    rest = b"\n"  # each piece starts at a line's "\n", so its first line can match too
    for chunk in itertools.chain(chunks, [None]):  # one piece at a time, never all of them
        text = rest + chunk if chunk is not None else rest + b"\n\n"
        cut = text.rfind(b"\n\n")
        if cut < 0:
            rest = text
            continue
        body, rest = text[:cut + 1], text[cut + 1:]
        seen = -1
        for match in pattern.finditer(body):
            before = body.rfind(b"\n\n", 0, match.start() + 1)
            start = before + 2 if before >= 0 else 0
            if start <= seen:
                continue  # two lines of one stanza matched
            end = body.find(b"\n\n", match.end() - 1)
            block = body[start:] if end < 0 else body[start:end + 1]
            seen = start
            for fields in parse_deb822(block.decode("utf-8")):
                stanza = _stanza(fields)
                if stanza.package in names or stanza.essential or stanza.priority == "required" \
                        or _provides_any(stanza.provides, names):
                    _keep_highest(index, stanza)
    return index


def _provides_any(provides: str, names: Sequence[str]) -> bool:
    provided = {part.split("(")[0].strip().split(":")[0] for part in provides.split(",")}
    return not provided.isdisjoint(names)


def index_chunks(data: bytes, name: str, size: int = 1 << 16) -> Iterator[bytes]:
    """The index's text, decompressed a piece at a time (never the whole 45 MB at once)."""
    if name.endswith(".xz"):
        unxz = lzma.LZMADecompressor()
        for offset in range(0, len(data), size):
            piece = unxz.decompress(data[offset:offset + size])
            if piece:
                yield piece
        if not unxz.eof:
            raise EOFError("compressed index is cut short")
    elif name.endswith(".gz"):
        ungz = INFLATER.decompressobj(wbits=31)  # isal's where installed: 3x zlib's speed
        for offset in range(0, len(data), size):
            piece = ungz.decompress(data[offset:offset + size])
            if piece:
                yield piece
        yield ungz.flush()
        if not ungz.eof:
            raise EOFError("compressed index is cut short")
    else:
        for offset in range(0, len(data), size):
            yield data[offset:offset + size]


def merge_indexes(indexes: Iterable[Mapping[str, DebStanza]]) -> dict[str, DebStanza]:
    """Several components' indexes as one, the highest version of each name winning."""
    merged: dict[str, DebStanza] = {}
    for index in indexes:
        for stanza in index.values():
            _keep_highest(merged, stanza)
    return merged


@dataclass(frozen=True)
class ReleaseFile:
    """What a suite's Release file says about itself and the indexes it vouches for."""

    suite: str
    codename: str
    components: tuple[str, ...]
    architectures: tuple[str, ...]
    acquire_by_hash: bool
    sha256: Mapping[str, tuple[str, int]]  # path under dists/<suite>/ -> (sha256, size)


def inrelease_body(text: str) -> str:
    """The Release text inside an InRelease's clear-signed armour (signature not checked)."""
    lines = text.replace("\r\n", "\n").split("\n")
    if not lines or lines[0] != "-----BEGIN PGP SIGNED MESSAGE-----":
        return text
    start = lines.index("", 1) + 1 if "" in lines[1:] else len(lines)
    body: list[str] = []
    for line in lines[start:]:
        if line == "-----BEGIN PGP SIGNATURE-----":
            return "\n".join(body) + "\n"
        body.append(line[2:] if line.startswith("- ") else line)  # RFC 4880 dash-escaping
    raise ResolveError("InRelease is cut short: no signature block after the signed text")


def parse_release(text: str) -> ReleaseFile:
    """Read a Release file; without a SHA256 list its indexes could not be checked."""
    stanzas = parse_deb822(text)
    if not stanzas:
        raise ResolveError("empty Release file")
    fields = stanzas[0]
    if "SHA256" not in fields:
        raise ResolveError("Release file has no SHA256 list; its indexes cannot be verified")
    sums: dict[str, tuple[str, int]] = {}
    for line in fields["SHA256"].split("\n"):
        parts = line.split()
        if len(parts) == 3:
            sums[parts[2]] = (parts[0].lower(), int(parts[1]))
    return ReleaseFile(
        suite=fields.get("Suite", ""), codename=fields.get("Codename", ""),
        components=tuple(fields.get("Components", "").split()),
        architectures=tuple(fields.get("Architectures", "").split()),
        acquire_by_hash=fields.get("Acquire-By-Hash", "").lower() == "yes", sha256=sums)
