"""The network edge of Debian resolution: the suite's Release (its InRelease signature
checked by gpgv), each component's index (cached under ``<cache>/deb`` by the sha256 the
Release gives it, so an unchanged archive costs one small fetch), then the selection."""

from __future__ import annotations

import hashlib
import lzma
import shutil
import tempfile
import urllib.parse
import urllib.request
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path

import requests

from envforge.errors import ResolveError
from envforge.host import proc
from envforge.host.atomicfile import write_atomic
from envforge.host.http import session
from envforge.host.zipread import INFLATER
from envforge.paths import envforge_dirs
from envforge.platforms import PLATFORMS
from envforge.resolve.deb.cache import parsed_cache, read_parsed, write_parsed
from envforge.resolve.deb.index import (
    DebStanza,
    ReleaseFile,
    index_chunks,
    inrelease_body,
    merge_indexes,
    parse_packages_subset,
    parse_release,
)
from envforge.resolve.deb.selection import DebResolution, dependency_closure, select_packages
from envforge.spec import DebianSection, Platform

Fetch = Callable[[str], bytes | None]
"""Get a URL's bytes; ``None`` when the server says it does not exist (404/410)."""

# preference order: gzip before xz, for the CPU; bookworm's main index, 12 MB as .gz and
# 9 MB as .xz, takes 0.24 s to inflate and 0.68 s to unpack from xz, on a lock's critical
# path when uv's builds want the same cores
_INDEX_NAMES = ("Packages.gz", "Packages.xz", "Packages")


class HttpFetch:
    """The default ``Fetch``: HTTP(S) through one session (host/http.py's retry rule), plus
    ``file://`` URLs."""

    def __init__(self, *, timeout: float = 60.0) -> None:
        self.timeout = timeout
        self._session: requests.Session | None = None

    def _get_session(self) -> requests.Session:
        if self._session is None:
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


def _fetch_index(fetch: Fetch, base: str, suite: str, release: ReleaseFile, component: str,
                 arch: str, cache: Path, wanted: Sequence[str]) -> dict[str, DebStanza]:
    """One component's stanzas that matter (``wanted``, their providers and the base
    system's), from the parsed cache, else from the index (itself cached) when its sha256
    is already there."""
    folder = f"{component}/binary-{arch}"
    name = next((n for n in _INDEX_NAMES if f"{folder}/{n}" in release.sha256), None)
    if name is None:
        raise ResolveError(f"Debian {suite}: the Release file lists no {folder}/Packages index")
    sha, size = release.sha256[f"{folder}/{name}"]
    parsed = parsed_cache(cache, sha, name, wanted)
    hit = read_parsed(parsed, sha)
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
        write_atomic(cached, data)
    try:
        index = parse_packages_subset(index_chunks(data, name), wanted)
    except (UnicodeDecodeError, ValueError, lzma.LZMAError, zlib.error, INFLATER.error,
            OSError, EOFError) as exc:
        raise ResolveError(f"Debian {suite}: cannot read {folder}/{name}: {exc}") from None
    write_parsed(parsed, sha, index)
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
    closure = None
    wanted = set(section.packages)
    while True:
        index = merge_indexes(
            _fetch_index(fetch, base, section.suite, release, component, arch, cache,
                         sorted(wanted))
            for component in section.components)
        if section.dependencies == "named" or any(n not in index for n in section.packages):
            break
        closure = dependency_closure(index, section.packages, looked_up=wanted)
        if not closure.unknown:
            break
        wanted |= closure.unknown  # one more pass over the index: the next level's names
    resolution = select_packages(index, section.packages, mirror=section.mirror,
                                 suite=section.suite, closure=closure)
    if unauthenticated is None:
        return resolution
    return resolution.model_copy(update={"warnings": (unauthenticated, *resolution.warnings)})
