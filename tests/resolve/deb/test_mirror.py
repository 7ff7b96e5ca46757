"""Debian resolution end to end: a local signed archive of real .deb files, and Debian's own."""

from __future__ import annotations

import hashlib
import json
import lzma
import re
import shutil
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from envforge.errors import ResolveError
from envforge.host.archives import sha256_file
from envforge.host.debunpack import unpack_deb
from envforge.host.devlinks import missing_dev_links
from envforge.host.proc import run
from envforge.resolve.deb.cache import PARSED_FORMAT
from envforge.resolve.deb.mirror import HttpFetch, resolve_debs
from envforge.resolve.deb.versions import split_version
from envforge.spec import DEBIAN_MIRROR, DebianSection
from tests.host.test_debunpack import LIBDIR, build_deb
from tests.testing.conda_channel import serve

# --- a local archive of real .deb files -------------------------------------------------------

SUITE = "envforge-test"


@dataclass(frozen=True)
class Mirror:
    root: Path
    url: str


def signing_key(home: Path) -> Path:
    """A throwaway OpenPGP key made with gpg; returns the public keyring gpgv reads."""
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    gpg = ["gpg", "--homedir", str(home), "--batch", "--pinentry-mode", "loopback",
           "--passphrase", ""]
    subprocess.run([*gpg, "--quick-gen-key", "envforge tests <tests@envforge.invalid>",
                    "ed25519", "sign", "never"], check=True, capture_output=True)
    keyring = home / "public.gpg"
    keyring.write_bytes(subprocess.run([*gpg, "--export"], check=True,
                                       capture_output=True).stdout)
    return keyring


def clearsign(text: str, home: Path) -> str:
    return subprocess.run(["gpg", "--homedir", str(home), "--batch", "--pinentry-mode",
                           "loopback", "--passphrase", "", "--clearsign"], input=text,
                          text=True, check=True, capture_output=True).stdout


def _write_release(root: Path, *, inrelease: bool = False, gnupg: Path | None = None) -> None:
    dists = root / "dists" / SUITE
    sums = []
    for path in sorted((dists / "main").rglob("Packages*")):
        data = path.read_bytes()
        sums.append(f" {hashlib.sha256(data).hexdigest()} {len(data):>8} "
                    f"{path.relative_to(dists).as_posix()}")
    text = (f"Origin: envforge tests\nSuite: {SUITE}\nCodename: {SUITE}\n"
            "Architectures: amd64\nComponents: main\nSHA256:\n" + "\n".join(sums) + "\n")
    if inrelease:  # clear-signed with a real key, as Debian's archive does
        assert gnupg is not None
        (dists / "InRelease").write_text(clearsign(text, gnupg))
    else:
        (dists / "Release").write_text(text)


def build_mirror(root: Path) -> Path:
    """A Debian archive in miniature: real .debs, a Packages.xz from dpkg-scanpackages."""
    pool = root / "pool/main"
    pool.mkdir(parents=True)
    build_deb(pool, "libdemo1", "0.9-1", files={f"{LIBDIR}/libdemo.so.0.9": b"old"},
              symlinks={f"{LIBDIR}/libdemo.so.1": "libdemo.so.0.9"})
    alternative = "/etc/alternatives/libblas.so.3-x86_64-linux-gnu"  # dangling, as in Debian
    build_deb(pool, "libdemo1", "1.0-1",
              files={f"{LIBDIR}/libdemo.so.1.0.0": b"\x7fELF new",
                     "usr/share/doc/libdemo1/copyright": b"public domain\n"},
              symlinks={f"{LIBDIR}/libdemo.so.1": "libdemo.so.1.0.0",
                        f"{LIBDIR}/libblas.so.3": alternative},
              depends="libc6 (>= 2.34)")
    build_deb(pool, "demo-data", "2.0-1", files={"usr/share/demo/data": b"2.0"},
              architecture="all")
    build_deb(pool, "demo-data", "1:0.5-1", files={"usr/share/demo/data": b"epoch"},
              architecture="all")
    build_deb(pool, "demo-tools", "2.0~rc1-1", files={"usr/bin/demo": b"#!/bin/sh\n"},
              architecture="all", depends="libdemo1 (>= 1.0), libc6 (>= 2.34), python3:any, "
              "missing-thing | other-missing, libdemo1 (>> 5)")
    packages = run(["dpkg-scanpackages", "--multiversion", "pool", "/dev/null"], cwd=root).stdout
    index = root / "dists" / SUITE / "main/binary-amd64"
    index.mkdir(parents=True)
    (index / "Packages.xz").write_bytes(lzma.compress(packages.encode()))
    _write_release(root)
    return root


@pytest.fixture(scope="module")
def built_mirror(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("dpkg-deb") is None or shutil.which("dpkg-scanpackages") is None:
        pytest.skip("needs dpkg-deb and dpkg-scanpackages")
    return build_mirror(tmp_path_factory.mktemp("debian-mirror"))


@pytest.fixture()
def mirror(built_mirror: Path, tmp_path: Path) -> Iterator[Mirror]:
    """A private copy of the archive (tests may tamper with it), served over HTTP."""
    root = tmp_path / "mirror"
    shutil.copytree(built_mirror, root, symlinks=True)
    with serve(root) as url:
        yield Mirror(root, url)


class Counting:
    """The real HTTP fetch, remembering what it was asked for."""

    def __init__(self) -> None:
        self.inner = HttpFetch(timeout=10)
        self.urls: list[str] = []

    def __call__(self, url: str) -> bytes | None:
        self.urls.append(url)
        return self.inner(url)


def _section(*packages: str, **extra: object) -> DebianSection:
    return DebianSection.model_validate({"suite": SUITE, "packages": list(packages), **extra})


def test_resolve_download_verify_unpack(mirror: Mirror, tmp_path: Path) -> None:
    section = _section("libdemo1", "demo-tools", "demo-data")
    result = resolve_debs(section, "linux-64", base_url=mirror.url, cache_dir=tmp_path / "cache")

    assert [(r.name, r.version, r.architecture) for r in result.records] == [
        ("demo-data", "1:0.5-1", "all"),  # the epoch wins over 2.0-1
        ("demo-tools", "2.0~rc1-1", "all"),
        ("libdemo1", "1.0-1", "amd64"),  # not 0.9-1
    ]
    for record in result.records:
        assert record.url == f"{DEBIAN_MIRROR}/{record.filename}"  # never the local mirror
        pool_file = mirror.root / record.filename
        assert record.size == pool_file.stat().st_size
        assert record.sha256 == hashlib.sha256(pool_file.read_bytes()).hexdigest()
    tools = result.records[1]
    assert tools.depends.startswith("libdemo1 (>= 1.0), libc6 (>= 2.34)")
    warnings = "\n".join(result.warnings)
    assert "missing-thing | other-missing (needed by demo-tools)" in warnings
    assert "libdemo1 (>> 5) (needed by demo-tools)" in warnings
    assert "python3 (needed by demo-tools)" in warnings
    assert "libc6" not in warnings and "libdemo1 (>= 1.0)" not in warnings
    assert "Release is unsigned: its hashes were not authenticated" in result.warnings[0]
    assert len(result.warnings) == 4

    libdemo = result.records[2]
    data = HttpFetch()(f"{mirror.url}/{libdemo.filename}")
    assert data is not None
    deb = tmp_path / Path(libdemo.filename).name
    deb.write_bytes(data)
    assert (sha256_file(deb), deb.stat().st_size) == (libdemo.sha256, libdemo.size)
    root = tmp_path / "root"
    unpacked = unpack_deb(deb, root)
    assert (root / LIBDIR / "libdemo.so.1").read_bytes() == b"\x7fELF new"
    assert root / LIBDIR / "libdemo.so.1.0.0" in unpacked.written
    assert [link for link, _ in unpacked.dangling] == [root / LIBDIR / "libblas.so.3"]
    assert missing_dev_links(root) == [(root / LIBDIR / "libdemo.so", "libdemo.so.1")]


def test_closure_locks_what_the_named_package_depends_on(mirror: Mirror,
                                                         tmp_path: Path) -> None:
    """demo-tools pulls in libdemo1 (>= 1.0): its 1.0-1, saying so; libc6 is the host's,
    what the archive lacks stays a hint; a re-lock reads each round from the parsed cache."""
    cache = tmp_path / "cache"
    section = _section("demo-tools", dependencies="closure")
    result = resolve_debs(section, "linux-64", base_url=mirror.url, cache_dir=cache)
    assert [(r.name, r.version, r.required_by) for r in result.records] == [
        ("demo-tools", "2.0~rc1-1", None), ("libdemo1", "1.0-1", "demo-tools")]
    warnings = "\n".join(result.warnings)
    assert "missing-thing | other-missing (needed by demo-tools)" in warnings
    assert "libdemo1 (>> 5) (needed by demo-tools)" in warnings
    assert "libc6" not in warnings
    named = resolve_debs(_section("demo-tools"), "linux-64", base_url=mirror.url,
                         cache_dir=cache)
    assert [r.name for r in named.records] == ["demo-tools"]

    fetch = Counting()
    assert resolve_debs(section, "linux-64", fetch=fetch, base_url=mirror.url,
                        cache_dir=cache) == result
    assert fetch.urls == [f"{mirror.url}/dists/{SUITE}/InRelease",
                          f"{mirror.url}/dists/{SUITE}/Release"]


def test_relock_with_unchanged_release_fetches_only_release(mirror: Mirror,
                                                            tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    fetch = Counting()
    first = resolve_debs(_section("libdemo1"), "linux-64", fetch=fetch, base_url=mirror.url,
                         cache_dir=cache)
    index_url = f"{mirror.url}/dists/{SUITE}/main/binary-amd64/Packages.xz"
    assert index_url in fetch.urls
    cached = [p for p in cache.iterdir() if p.is_file()]
    sha = hashlib.sha256(
        (mirror.root / f"dists/{SUITE}/main/binary-amd64/Packages.xz").read_bytes()).hexdigest()
    assert [p.name for p in cached] == [f"{sha}-Packages.xz"]

    fetch.urls.clear()
    again = resolve_debs(_section("libdemo1"), "linux-64", fetch=fetch, base_url=mirror.url,
                         cache_dir=cache)
    assert again == first
    assert fetch.urls == [f"{mirror.url}/dists/{SUITE}/InRelease",
                          f"{mirror.url}/dists/{SUITE}/Release"]

    # A new index (a changed Release) is fetched again, under its own sha256.
    index = mirror.root / f"dists/{SUITE}/main/binary-amd64/Packages.xz"
    index.write_bytes(lzma.compress(lzma.decompress(index.read_bytes()) + b"\n"))
    _write_release(mirror.root)
    fetch.urls.clear()
    resolve_debs(_section("libdemo1"), "linux-64", fetch=fetch, base_url=mirror.url,
                 cache_dir=cache)
    assert index_url in fetch.urls
    assert len([p for p in cache.iterdir() if p.is_file()]) == 2
    assert len(list((cache / "parsed").iterdir())) == 2


@pytest.mark.parametrize("damage", [
    lambda text: text[: len(text) // 2],
    lambda text: text.replace('"1.0-1"', '"9.0-1"'),  # a stanza edited: its sha256 no longer
    lambda text: text.replace('"format": 1', '"format": 0'),
])
def test_damaged_parsed_entry_is_parsed_again(damage: Callable[[str], str], mirror: Mirror,
                                              tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = resolve_debs(_section("libdemo1"), "linux-64", base_url=mirror.url, cache_dir=cache)
    (parsed,) = (cache / "parsed").iterdir()
    parsed.write_text(damage(parsed.read_text()))
    again = resolve_debs(_section("libdemo1"), "linux-64", base_url=mirror.url, cache_dir=cache)
    assert again == first
    assert json.loads(parsed.read_text())["format"] == PARSED_FORMAT


def test_parsed_entry_is_per_set_of_names(mirror: Mirror, tmp_path: Path) -> None:
    """Another set of names is another entry: a name the first set lacked is never
    taken for absent from the index."""
    cache = tmp_path / "cache"
    resolve_debs(_section("libdemo1"), "linux-64", base_url=mirror.url, cache_dir=cache)
    both = resolve_debs(_section("libdemo1", "demo-tools"), "linux-64", base_url=mirror.url,
                        cache_dir=cache)
    assert [r.name for r in both.records] == ["demo-tools", "libdemo1"]
    assert len(list((cache / "parsed").iterdir())) == 2


def test_damaged_cache_entry_is_fetched_again(mirror: Mirror, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    resolve_debs(_section("libdemo1"), "linux-64", base_url=mirror.url, cache_dir=cache)
    (entry,) = (p for p in cache.iterdir() if p.is_file())
    entry.write_bytes(b"garbage")
    shutil.rmtree(cache / "parsed")  # else the parsed entry answers without the index
    fetch = Counting()
    result = resolve_debs(_section("libdemo1"), "linux-64", fetch=fetch, base_url=mirror.url,
                          cache_dir=cache)
    assert result.records[0].version == "1.0-1"
    assert len(fetch.urls) == 3  # InRelease (404), Release, Packages.xz
    assert hashlib.sha256(entry.read_bytes()).hexdigest() == entry.name.split("-")[0]


def test_index_not_matching_release_is_refused(mirror: Mirror, tmp_path: Path) -> None:
    index = mirror.root / f"dists/{SUITE}/main/binary-amd64/Packages.xz"
    text = lzma.decompress(index.read_bytes()).decode()
    forged = re.sub(r"SHA256: [0-9a-f]{64}", "SHA256: " + "e" * 64, text)
    index.write_bytes(lzma.compress(forged.encode()))  # the Release file is left as it was
    cache = tmp_path / "cache"
    with pytest.raises(ResolveError, match="does not match the sha256"):
        resolve_debs(_section("libdemo1"), "linux-64", base_url=mirror.url, cache_dir=cache)
    assert not cache.exists() or not any(cache.iterdir())


@pytest.mark.parametrize("name", ["Packages.xz", "Packages.gz"])
def test_unreadable_index_is_a_resolve_error(name: str, mirror: Mirror, tmp_path: Path) -> None:
    """A .gz is inflated by isal where installed, whose error is no zlib.error."""
    index = mirror.root / f"dists/{SUITE}/main/binary-amd64/{name}"
    index.write_bytes(b"\x1f\x8b\x08\x00 neither xz nor a deflate stream")
    _write_release(mirror.root)  # listed with its true sha256: only its content is wrong
    with pytest.raises(ResolveError, match=rf"cannot read main/binary-amd64/{name}"):
        resolve_debs(_section("libdemo1"), "linux-64", base_url=mirror.url,
                     cache_dir=tmp_path / "cache")


def test_inrelease_is_preferred_to_release(mirror: Mirror, tmp_path: Path) -> None:
    keyring = signing_key(tmp_path / "gnupg")
    _write_release(mirror.root, inrelease=True, gnupg=tmp_path / "gnupg")
    (mirror.root / f"dists/{SUITE}/Release").write_text("not a Release file at all")
    fetch = Counting()
    result = resolve_debs(_section("demo-data", keyring=str(keyring)), "linux-64", fetch=fetch,
                          base_url=mirror.url, cache_dir=tmp_path / "cache")
    assert result.records[0].version == "1:0.5-1"
    assert f"{mirror.url}/dists/{SUITE}/Release" not in fetch.urls
    assert not any("unsigned" in w or "signature" in w for w in result.warnings)


def test_a_forged_inrelease_is_refused(mirror: Mirror, tmp_path: Path) -> None:
    """The signed text altered after signing (a hash swapped), or signed by another key."""
    keyring = signing_key(tmp_path / "gnupg")
    _write_release(mirror.root, inrelease=True, gnupg=tmp_path / "gnupg")
    inrelease = mirror.root / f"dists/{SUITE}/InRelease"
    signed = inrelease.read_text()
    digest = re.search(r" ([0-9a-f]{64}) ", signed)
    assert digest is not None
    inrelease.write_text(signed.replace(digest.group(1), "0" * 64))
    with pytest.raises(ResolveError, match="InRelease signature does not verify"):
        resolve_debs(_section("demo-data", keyring=str(keyring)), "linux-64",
                     base_url=mirror.url, cache_dir=tmp_path / "cache")
    inrelease.write_text(signed)
    other = signing_key(tmp_path / "other")
    with pytest.raises(ResolveError, match="InRelease signature does not verify"):
        resolve_debs(_section("demo-data", keyring=str(other)), "linux-64",
                     base_url=mirror.url, cache_dir=tmp_path / "cache")


def test_file_url_mirror(built_mirror: Path, tmp_path: Path) -> None:
    result = resolve_debs(_section("demo-tools"), "linux-64", base_url=built_mirror.as_uri(),
                          cache_dir=tmp_path / "cache")
    assert result.records[0].url == f"{DEBIAN_MIRROR}/{result.records[0].filename}"


def test_errors_name_what_is_missing(mirror: Mirror, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    with pytest.raises(ResolveError, match=f"{SUITE} has no package named libnope"):
        resolve_debs(_section("libdemo1", "libnope"), "linux-64", base_url=mirror.url,
                     cache_dir=cache)
    with pytest.raises(ResolveError, match="no component 'contrib'"):
        resolve_debs(_section("libdemo1", components=["main", "contrib"]), "linux-64",
                     base_url=mirror.url, cache_dir=cache)
    with pytest.raises(ResolveError, match="suite 'sid' not found"):
        resolve_debs(DebianSection(suite="sid", packages=("x",)), "linux-64",
                     base_url=mirror.url, cache_dir=cache)
    with pytest.raises(ResolveError, match="only available for linux-64"):
        resolve_debs(_section("libdemo1"), "win-64", base_url=mirror.url, cache_dir=cache)


# --- Debian's archive itself ----------------------------------------------------------------------

SHA256 = re.compile(r"^[0-9a-f]{64}$")


@pytest.mark.network
def test_bookworm(tmp_path: Path) -> None:
    section = DebianSection(suite="bookworm", packages=(
        "libopenblas0-pthread", "python3-pygpu", "libgpuarray3", "libquadmath0"))
    cache = tmp_path / "cache"
    result = resolve_debs(section, "linux-64", cache_dir=cache)
    records = {r.name: r for r in result.records}
    assert list(records) == ["libgpuarray3", "libopenblas0-pthread", "libquadmath0",
                             "python3-pygpu"]
    for record in result.records:
        assert record.architecture == "amd64"
        assert record.filename.startswith("pool/main/") and record.filename.endswith(".deb")
        assert record.url == f"{DEBIAN_MIRROR}/{record.filename}"
        assert SHA256.match(record.sha256) and record.size > 0
        split_version(record.version)  # well-formed
    assert records["libopenblas0-pthread"].version.startswith("0.3.21+ds")
    assert records["python3-pygpu"].version.startswith("0.7.6")
    # pygpu pins its library exactly, and the lock holds that very version.
    assert f"libgpuarray3 (= {records['libgpuarray3'].version})" in records["python3-pygpu"].depends
    warnings = "\n".join(result.warnings)
    assert "python3-numpy (>= 1:1.22.0)" in warnings
    # InRelease was checked by gpgv against Debian's archive keyring: no authentication warning
    assert "signature" not in warnings and "unsigned" not in warnings
    assert "libgfortran5 (>= 8) (needed by libopenblas0-pthread)" in warnings
    assert "libc6" not in warnings and "gcc-12-base" not in warnings

    fetch = Counting()
    assert resolve_debs(section, "linux-64", fetch=fetch, cache_dir=cache) == result
    assert fetch.urls == [f"{DEBIAN_MIRROR}/dists/bookworm/InRelease"]

    quadmath = records["libquadmath0"]
    data = HttpFetch()(quadmath.url)
    assert data is not None
    deb = tmp_path / Path(quadmath.filename).name
    deb.write_bytes(data)
    assert (sha256_file(deb), deb.stat().st_size) == (quadmath.sha256, quadmath.size)
    root = tmp_path / "root"
    unpacked = unpack_deb(deb, root)
    lib = root / LIBDIR
    real = next(lib.glob("libquadmath.so.0.*"))
    assert real.read_bytes()[:4] == b"\x7fELF"
    assert (lib / "libquadmath.so.0").resolve() == real.resolve()
    assert set(unpacked.written) >= {real, lib / "libquadmath.so.0"}
    # Its doc folder is a link into gcc-N-base, a package not unpacked here.
    assert [link.name for link, _ in unpacked.dangling] == ["libquadmath0"]
    assert missing_dev_links(root) == [(lib / "libquadmath.so", "libquadmath.so.0")]


@pytest.mark.network
def test_bullseye_is_authenticated_by_debians_keyring(tmp_path: Path) -> None:
    """bullseye's InRelease (signed by the bookworm automatic and bullseye stable keys)
    checks out against debian-archive-keyring.gpg; its Python is 3.9.2, NumPy 1.19.5."""
    section = DebianSection(suite="bullseye", packages=(
        "python3.9-minimal", "python3-numpy", "python3-pygpu", "python3-distutils"))
    result = resolve_debs(section, "linux-64", cache_dir=tmp_path / "cache")
    records = {r.name: r for r in result.records}
    assert records["python3.9-minimal"].version == "3.9.2-1"
    assert records["python3-numpy"].version == "1:1.19.5-1"
    assert records["python3-pygpu"].version.startswith("0.7.6-")
    assert records["python3-distutils"].architecture == "all"
    warnings = "\n".join(result.warnings)
    assert "signature" not in warnings and "unsigned" not in warnings
    assert "python3-numpy (>= 1:1.16.0~rc1)" not in warnings


@pytest.mark.network
@pytest.mark.slow
def test_bookworm_openblas_needs_an_unversioned_link(tmp_path: Path) -> None:
    """GPU.md: -lopenblas needs libopenblas.so, which the runtime package lacks."""
    section = DebianSection(suite="bookworm", packages=("libopenblas0-pthread",))
    (record,) = resolve_debs(section, "linux-64", cache_dir=tmp_path / "cache").records
    data = HttpFetch()(record.url)
    assert data is not None
    deb = tmp_path / Path(record.filename).name
    deb.write_bytes(data)
    assert (sha256_file(deb), deb.stat().st_size) == (record.sha256, record.size)
    root = tmp_path / "root"
    unpack_deb(deb, root)
    folder = root / LIBDIR / "openblas-pthread"
    links = dict(missing_dev_links(root))
    assert links[folder / "libopenblas.so"] == "libopenblas.so.0"
    (folder / "libopenblas.so").symlink_to(links[folder / "libopenblas.so"])
    assert (folder / "libopenblas.so").resolve().name.startswith("libopenblasp-r0.3.21")
