"""Resolve ``[debian]`` package names into ``LockedDeb`` records from a Debian archive.

Network I/O sits at the edge (``resolve_debs`` and the ``Fetch`` it is given); everything
between is pure: the Release and Packages parsers, dpkg's version ordering, the
dependency check. Integrity rests on HTTPS to the mirror plus the sha256 chain
Release -> Packages index -> .deb; the InRelease signature itself is not checked (no
Debian keyring is assumed on the host).

Indexes are cached under ``<cache>/deb`` by the sha256 the Release file gives them, so
re-locking against an unchanged archive fetches only the small Release file; the stanzas a
lock needs from one (``parsed_cache``) are cached beside it, so it is not even read again.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import lzma
import os
import re
import shutil
import tempfile
import urllib.parse
import urllib.request
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from functools import cmp_to_key
from pathlib import Path

import requests

from envforge.errors import ResolveError
from envforge.host import proc
from envforge.lockfile import LockedDeb
from envforge.paths import envforge_dirs
from envforge.platforms import PLATFORMS
from envforge.spec import DebianSection, Frozen, Platform

Fetch = Callable[[str], bytes | None]
"""Get a URL's bytes; ``None`` when the server says it does not exist (404/410)."""

# Dependencies every glibc Linux host already satisfies, or dpkg machinery that means
# nothing in an unpacked prefix. Packages marked ``Essential: yes`` in the index count too.
BASE_SYSTEM = frozenset({
    "libc6", "libgcc-s1", "libstdc++6", "zlib1g", "liblzma5", "libbz2-1.0", "libzstd1",
    "libcrypt1", "libtinfo6", "libncursesw6", "libuuid1", "libselinux1", "libpcre2-8-0",
    "debconf", "debconf-2.0", "dpkg", "install-info", "init-system-helpers", "sensible-utils",
})
_BASE_PATTERN = re.compile(r"^gcc-\d+-base$")  # only a doc folder; versioned with its compiler
# preference order: gzip before xz, for the CPU; bookworm's main index, 12 MB as .gz and
# 9 MB as .xz, takes 0.24 s to inflate and 0.68 s to unpack from xz, on a lock's critical
# path when uv's builds want the same cores
_INDEX_NAMES = ("Packages.gz", "Packages.xz", "Packages")


# --- dpkg version ordering -------------------------------------------------------------

def _order(char: str) -> int:
    """dpkg's weight of one non-digit character: ``~`` sorts before the end, letters first."""
    if char == "~":
        return -1
    if "a" <= char <= "z" or "A" <= char <= "Z":
        return ord(char)
    return ord(char) + 256


def _is_digit(char: str) -> bool:
    return "0" <= char <= "9"


def _verrevcmp(a: str, b: str) -> int:
    """Compare upstream versions or revisions the way dpkg's ``verrevcmp`` does."""
    i = j = 0
    while i < len(a) or j < len(b):
        while (i < len(a) and not _is_digit(a[i])) or (j < len(b) and not _is_digit(b[j])):
            ac = _order(a[i]) if i < len(a) and not _is_digit(a[i]) else 0
            bc = _order(b[j]) if j < len(b) and not _is_digit(b[j]) else 0
            if ac != bc:
                return -1 if ac < bc else 1
            i += 1
            j += 1
        while i < len(a) and a[i] == "0":
            i += 1
        while j < len(b) and b[j] == "0":
            j += 1
        first_diff = 0
        while i < len(a) and _is_digit(a[i]) and j < len(b) and _is_digit(b[j]):
            if not first_diff and a[i] != b[j]:
                first_diff = -1 if a[i] < b[j] else 1
            i += 1
            j += 1
        if i < len(a) and _is_digit(a[i]):
            return 1
        if j < len(b) and _is_digit(b[j]):
            return -1
        if first_diff:
            return first_diff
    return 0


def split_version(version: str) -> tuple[int, str, str]:
    """``[epoch:]upstream[-revision]`` -> (epoch, upstream, revision); ValueError if malformed."""
    text = version.strip()
    epoch = 0
    if ":" in text:
        head, text = text.split(":", 1)
        if not head.isdigit():
            raise ValueError(f"invalid epoch in Debian version {version!r}")
        epoch = int(head)
    upstream, _, revision = text.rpartition("-") if "-" in text else (text, "", "")
    if not upstream or not _is_digit(upstream[0]):
        raise ValueError(f"Debian version {version!r} must start with a digit")
    return epoch, upstream, revision


def compare_versions(a: str, b: str) -> int:
    """-1, 0 or 1 as ``a`` sorts before, equal to or after ``b`` in dpkg's order."""
    ea, ua, ra = split_version(a)
    eb, ub, rb = split_version(b)
    if ea != eb:
        return -1 if ea < eb else 1
    return _verrevcmp(ua, ub) or _verrevcmp(ra, rb)


version_key = cmp_to_key(compare_versions)


def satisfies(version: str, op: str, reference: str) -> bool:
    """Whether ``version op reference`` holds; ``<`` and ``>`` are dpkg's old ``<=``/``>=``."""
    cmp = compare_versions(version, reference)
    checks = {"<<": cmp < 0, "<=": cmp <= 0, "<": cmp <= 0, "=": cmp == 0,
              ">=": cmp >= 0, ">": cmp >= 0, ">>": cmp > 0}
    if op not in checks:
        raise ValueError(f"unknown Debian version relation {op!r}")
    return checks[op]


# --- deb822 parsing ---------------------------------------------------------------------

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
        provides=fields.get("Provides", ""), essential=fields.get("Essential") == "yes")


def _keep_highest(index: dict[str, DebStanza], stanza: DebStanza) -> None:
    known = index.get(stanza.package)
    if known is None or compare_versions(stanza.version, known.version) > 0:
        index[stanza.package] = stanza


def parse_packages_subset(chunks: Iterable[bytes], wanted: Iterable[str]) -> dict[str, DebStanza]:
    """What ``parse_packages`` would give for the ``wanted`` names and the ``Essential``
    packages (the dependency check counts those as the base system), read from the index's
    text as it is decompressed: a regular expression finds the few stanzas that matter, and
    only those are split into fields (bookworm's main has 63,000; a lock wants a handful)."""
    names = sorted(set(wanted))
    alternatives = b"|".join(re.escape(n.encode("utf-8")) for n in names) or b"(?!)"
    # a literal "\n" first, not "^": the regular expression engine then skips ahead by search
    pattern = re.compile(rb"\n(?:Package: (?:" + alternatives + rb")|Essential: yes)[ \t]*\r?\n")
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
                continue  # both lines of one stanza matched
            end = body.find(b"\n\n", match.end() - 1)
            block = body[start:] if end < 0 else body[start:end + 1]
            seen = start
            for fields in parse_deb822(block.decode("utf-8")):
                stanza = _stanza(fields)
                if stanza.package in names or stanza.essential:
                    _keep_highest(index, stanza)
    return index


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
        ungz = zlib.decompressobj(wbits=31)
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
        for name, stanza in index.items():
            known = merged.get(name)
            if known is None or compare_versions(stanza.version, known.version) > 0:
                merged[name] = stanza
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


# --- relations and the dependency hint ----------------------------------------------------

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


# --- I/O edge ---------------------------------------------------------------------------------

class HttpFetch:
    """The default ``Fetch``: HTTP(S) through one session (host/http.py's retry rule), plus
    ``file://`` URLs."""

    def __init__(self, *, timeout: float = 60.0) -> None:
        self.timeout = timeout
        self._session: requests.Session | None = None

    def _get_session(self) -> requests.Session:
        if self._session is None:
            from envforge.host.http import session

            self._session = session()
        return self._session

    def __call__(self, url: str) -> bytes | None:
        parts = urllib.parse.urlsplit(url)
        if parts.scheme == "file":
            path = Path(urllib.request.url2pathname(parts.path))
            try:
                return path.read_bytes()
            except FileNotFoundError:
                return None
        try:
            response = self._get_session().get(url, timeout=self.timeout)
        except requests.RequestException as exc:
            raise ResolveError(f"cannot fetch {url}: {exc}") from exc
        if response.status_code in (404, 410):
            return None
        if response.status_code != 200:
            raise ResolveError(f"cannot fetch {url}: HTTP {response.status_code}")
        return response.content


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        Path(tmp).replace(path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


DEBIAN_KEYRING = Path("/usr/share/keyrings/debian-archive-keyring.gpg")


def verify_inrelease(data: bytes, keyring: Path, *, source: str) -> str:
    """The Release text that ``gpgv`` vouches for: every later hash hangs on this one check.

    The text returned is gpgv's own output, not our reading of the armour, so nothing
    outside the signed part can slip in.
    """
    gpgv = shutil.which("gpgv")
    if gpgv is None:
        raise ResolveError("gpgv is needed to check Debian's InRelease signature "
                           "(apt-get install gpgv)")
    with tempfile.TemporaryDirectory(prefix="envforge-gpgv-") as tmp:
        signed, body = Path(tmp) / "InRelease", Path(tmp) / "Release"
        signed.write_bytes(data)
        done = proc.run([gpgv, "--keyring", keyring, "--output", body, signed], check=False,
                        timeout=60)
        if done.returncode != 0:
            lines = [line.removeprefix("gpgv: ").strip() for line in done.stderr.splitlines()]
            reason = "; ".join(line for line in lines if line) or "no reason given"
            raise ResolveError(f"{source}: the InRelease signature does not verify against "
                               f"{keyring}: {reason}")
        return body.read_text(encoding="utf-8")


def _fetch_release(fetch: Fetch, base: str, suite: str,
                   keyring: Path | None) -> tuple[ReleaseFile, str | None]:
    """The suite's Release, and a warning when it could not be authenticated."""
    url = f"{base}/dists/{suite}/InRelease"
    data = fetch(url)
    signed = data is not None
    if data is None:
        url = f"{base}/dists/{suite}/Release"
        data = fetch(url)
    if data is None:
        raise ResolveError(f"Debian suite {suite!r} not found at {base} (no InRelease or Release)")
    try:
        text = data.decode("utf-8")
        if not signed:
            return parse_release(text), f"{url} is unsigned: its hashes were not authenticated"
        if keyring is None:
            return parse_release(inrelease_body(text)), (
                f"{url}: no keyring to check its signature (set [debian] keyring)")
        return parse_release(verify_inrelease(data, keyring, source=url)), None
    except (UnicodeDecodeError, ValueError) as exc:
        raise ResolveError(f"cannot read {url}: {exc}") from None


PARSED_FORMAT = 1


def parsed_cache(cache: Path, sha256: str, name: str, wanted: Iterable[str]) -> Path:
    """Where the stanzas ``wanted`` from the index with this sha256 are kept.

    Why an entry is as trustworthy as the index itself:

    - Its key is the sha256 that the Release file lists for the index, and the Release is
      fetched and its InRelease signature checked by gpgv on every lock: an index the
      archive no longer vouches for is never looked up, and one it vouches for has exactly
      one content.
    - An entry is written only here, from bytes whose sha256 and size were just checked
      against that Release entry, by a deterministic parse (``parse_packages_subset``) of
      the names in the key; reading it back gives what parsing the index again would.
    - It records its own sha256: a truncated or damaged entry is parsed again from the
      index, never half used.
    - Someone able to write envforge's cache folder could forge an entry; the same person
      could forge the uv cache from which the PyPI half of the same lock takes its hashes,
      so the parsed subset adds no weaker link. The raw index cached beside it is still
      re-hashed on every read, as before.
    """
    names = hashlib.sha256("\n".join(sorted(set(wanted))).encode("utf-8")).hexdigest()[:16]
    return cache / "parsed" / f"{sha256}-{name}-{names}.json"


def _read_parsed(path: Path, sha256: str) -> dict[str, DebStanza] | None:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
        body = json.dumps(document["stanzas"], sort_keys=True)
        if document["format"] != PARSED_FORMAT or document["index_sha256"] != sha256 \
                or document["sha256"] != _sha256(body.encode("utf-8")):
            return None
        return {s["package"]: DebStanza(**s) for s in document["stanzas"]}
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _write_parsed(path: Path, sha256: str, index: Mapping[str, DebStanza]) -> None:
    stanzas = [asdict(index[name]) for name in sorted(index)]
    body = json.dumps(stanzas, sort_keys=True)
    document = {"format": PARSED_FORMAT, "index_sha256": sha256,
                "sha256": _sha256(body.encode("utf-8")), "stanzas": stanzas}
    try:
        _write_atomic(path, json.dumps(document, sort_keys=True).encode("utf-8"))
    except OSError:
        return  # the cache is an optimisation: the next lock parses the index again


def _fetch_index(fetch: Fetch, base: str, suite: str, release: ReleaseFile, component: str,
                 arch: str, cache: Path, wanted: Sequence[str]) -> dict[str, DebStanza]:
    """One component's stanzas that matter (``wanted`` and the Essential ones), from the
    parsed cache, else from the index (itself cached) when its sha256 is already there."""
    folder = f"{component}/binary-{arch}"
    name = next((n for n in _INDEX_NAMES if f"{folder}/{n}" in release.sha256), None)
    if name is None:
        raise ResolveError(f"Debian {suite}: the Release file lists no {folder}/Packages index")
    sha, size = release.sha256[f"{folder}/{name}"]
    parsed = parsed_cache(cache, sha, name, wanted)
    hit = _read_parsed(parsed, sha)
    if hit is not None:
        return hit
    cached = cache / f"{sha}-{name}"
    data = cached.read_bytes() if cached.is_file() else None
    if data is None or _sha256(data) != sha:
        urls = [f"{base}/dists/{suite}/{folder}/{name}"]
        if release.acquire_by_hash:  # immune to the Release/index race during a mirror update
            urls.insert(0, f"{base}/dists/{suite}/{folder}/by-hash/SHA256/{sha}")
        data = next((d for d in map(fetch, urls) if d is not None), None)
        if data is None:
            raise ResolveError(f"Debian {suite}: {folder}/{name} is listed but not found at {base}")
        if len(data) != size or _sha256(data) != sha:
            raise ResolveError(f"Debian {suite}: {folder}/{name} does not match the sha256 and "
                               f"size in Release (got {_sha256(data)}, {len(data)} bytes)")
        _write_atomic(cached, data)
    try:
        index = parse_packages_subset(index_chunks(data, name), wanted)
    except (UnicodeDecodeError, ValueError, lzma.LZMAError, zlib.error, OSError,
            EOFError) as exc:
        raise ResolveError(f"Debian {suite}: cannot read {folder}/{name}: {exc}") from None
    _write_parsed(parsed, sha, index)
    return index


def resolve_debs(section: DebianSection, platform: Platform, *, fetch: Fetch | None = None,
                 base_url: str | None = None, cache_dir: Path | None = None) -> DebResolution:
    """Lock the section's packages; ``base_url`` reads another mirror, URLs keep the spec's."""
    arch = PLATFORMS[platform].debian_arch
    if arch is None:
        debian = ", ".join(p.name for p in PLATFORMS.values() if p.debian_arch)
        raise ResolveError(f"Debian packages are only available for {debian}, not {platform}")
    fetch = fetch if fetch is not None else HttpFetch()
    base = (base_url or section.mirror).rstrip("/")
    cache = cache_dir if cache_dir is not None else envforge_dirs().cache / "deb"
    keyring = Path(section.keyring) if section.keyring else (
        DEBIAN_KEYRING if DEBIAN_KEYRING.is_file() else None)
    release, unauthenticated = _fetch_release(fetch, base, section.suite, keyring)
    if release.architectures and arch not in release.architectures:
        raise ResolveError(f"Debian {section.suite} has no {arch} packages")
    for component in section.components:
        if release.components and component not in release.components:
            raise ResolveError(f"Debian {section.suite} has no component {component!r} "
                               f"(it has {', '.join(release.components)})")
    index = merge_indexes(
        _fetch_index(fetch, base, section.suite, release, component, arch, cache,
                     section.packages)
        for component in section.components)
    resolution = select_packages(index, section.packages, mirror=section.mirror,
                                 suite=section.suite)
    if unauthenticated is None:
        return resolution
    return resolution.model_copy(update={"warnings": (unauthenticated, *resolution.warnings)})
