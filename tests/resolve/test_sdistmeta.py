"""The metadata uv built from sdists, kept by envforge and given back to uv: real uv against
PyPI (where this machine's proxy strips caching headers, so uv alone builds the sdist on every
run), and the store's rules on what it keeps and trusts."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from envforge.errors import StepError
from envforge.host.interpreters import find_interpreter
from envforge.resolve import sdistmeta
from envforge.resolve.pypi import resolve_pypi
from envforge.resolve.sdistmeta import decode_msgpack
from envforge.spec import PYPI_SIMPLE

THEANO_SDIST_SHA = "bb566fa62f7923351299dfcb8947e42523057df65e81be444eb8ef0c6e602bf4"
# uv's ResolutionMetadata for a small sdist, as MessagePack: name, version, requires_dist,
# requires_python, provides_extras, dynamic
UV_METADATA = (b"\x96\xa3pkg\xa31.0\x92\xacnumpy>=1.9.1\xb8pytest ; extra == 'test'"
               b"\xa5>=3.6\x91\xa4test\xc2")


def _revisions(cache: Path) -> int:
    """How many times uv built Theano-PyMC 1.0.5's metadata into this cache."""
    folder = cache / "uv" / sdistmeta.UV_BUCKET / "pypi" / "theano-pymc" / "1.0.5"
    return len(list(folder.glob("*/metadata.msgpack")))


def _python37() -> str:
    try:
        return str(find_interpreter("3.7").executable)
    except StepError:
        pytest.skip("no Python 3.7 here: the metadata is kept only as built by the target's")


def _resolve(interpreter: str | None) -> dict[str, str]:
    files = resolve_pypi(["Theano-PyMC==1.0.5"], platform="linux-64", python="3.7.16",
                         index=PYPI_SIMPLE, interpreter=interpreter)
    return {f.name: f.sha256 for f in files}


@pytest.mark.network
def test_a_built_sdist_is_kept_and_uv_is_not_made_to_build_it_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENVFORGE_HOME", str(tmp_path / "home"))
    cache = tmp_path / "home" / "cache"
    python37 = _python37()
    assert _resolve(None)["theano-pymc"] == THEANO_SDIST_SHA  # built by whichever uv found:
    assert not (cache / "sdist-metadata").exists()  # not kept as Python 3.7's
    first = _resolve(python37)
    assert first["theano-pymc"] == THEANO_SDIST_SHA and {"numpy", "scipy", "six"} <= set(first)
    built = _revisions(cache)
    assert built >= 1
    kept = sdistmeta.known(cache, PYPI_SIMPLE, "3.7.16")["theano-pymc==1.0.5"]
    assert kept.sha256 == THEANO_SDIST_SHA and "six>=1.9.0" in kept.requires_dist
    assert sdistmeta.known(cache, PYPI_SIMPLE, "3.8.10") == {}  # another Python's build
    assert _resolve(python37) == first
    assert _revisions(cache) == built  # uv took the kept metadata: no download, no build

    entry = next((cache / "sdist-metadata").rglob("py3.7.json"))
    data = json.loads(entry.read_text(encoding="utf-8"))
    entry.write_text(json.dumps({**data, "sha256": "0" * 64}), encoding="utf-8")
    assert _resolve(python37) == first  # kept for another file: resolved again without it
    assert _revisions(cache) == built + 1
    assert json.loads(entry.read_text(encoding="utf-8"))["sha256"] == THEANO_SDIST_SHA

    entry.write_text("{not json", encoding="utf-8")
    assert sdistmeta.known(cache, PYPI_SIMPLE, "3.7.16") == {}
    assert _resolve(python37) == first
    assert _revisions(cache) == built + 2


def test_stale_names_a_result_whose_sdist_is_not_the_one_the_metadata_came_from() -> None:
    meta = sdistmeta.BuiltMetadata(name="pkg", version="1.0", sha256="a" * 64,
                                   requires_dist=(), requires_python=None, provides_extras=())
    kept = {"pkg==1.0": meta}

    def result(sha: str) -> dict[str, object]:
        return {"packages": [{"name": "Pkg", "version": "1.0",
                              "sdist": {"url": "u", "hashes": {"sha256": sha}}}]}

    assert not sdistmeta.stale(result("a" * 64), kept)
    assert sdistmeta.stale(result("b" * 64), kept)
    assert sdistmeta.stale({"packages": [{"name": "pkg", "version": "1.0", "wheels": []}]}, kept)
    assert not sdistmeta.stale(result("b" * 64), {})


def _uv_cache_with(tmp_path: Path, *revisions: bytes) -> Path:
    uv_cache = tmp_path / "uv"
    for number, data in enumerate(revisions):
        folder = uv_cache / sdistmeta.UV_BUCKET / "pypi" / "pkg" / "1.0" / f"rev{number}"
        folder.mkdir(parents=True)
        (folder / "metadata.msgpack").write_bytes(data)
    return uv_cache


PYLOCK = {"packages": [{"name": "pkg", "version": "1.0",
                        "sdist": {"url": "u", "hashes": {"sha256": "c" * 64}}}]}


def test_only_metadata_this_runs_revisions_agree_on_is_kept(tmp_path: Path) -> None:
    store = tmp_path / "envforge-cache"
    other = UV_METADATA.replace(b">=3.6", b">=3.7")
    sdistmeta.keep_built(PYLOCK, _uv_cache_with(tmp_path / "a", UV_METADATA, other),
                         store, PYPI_SIMPLE, "3.7.16", {}, since=0.0)
    assert sdistmeta.known(store, PYPI_SIMPLE, "3.7.16") == {}
    # an older revision (another Python's build, say) is not this run's: left out
    uv_cache = _uv_cache_with(tmp_path / "c", other, UV_METADATA)
    old = next(uv_cache.rglob("rev0/metadata.msgpack"))
    os.utime(old, (old.stat().st_atime - 3600, old.stat().st_mtime - 3600))
    sdistmeta.keep_built(PYLOCK, uv_cache, store, PYPI_SIMPLE, "3.7.16", {},
                         since=time.time() - 60)
    assert sdistmeta.known(store, PYPI_SIMPLE, "3.7.16")["pkg==1.0"].requires_python == ">=3.6"
    (store / "sdist-metadata").rename(tmp_path / "kept-from-c")
    sdistmeta.keep_built(PYLOCK, _uv_cache_with(tmp_path / "b", UV_METADATA, UV_METADATA),
                         store, PYPI_SIMPLE, "3.7.16", {}, since=0.0)
    kept = sdistmeta.known(store, PYPI_SIMPLE, "3.7.16")["pkg==1.0"]
    assert kept.requires_dist == ("numpy>=1.9.1", "pytest ; extra == 'test'")
    assert (kept.requires_python, kept.provides_extras, kept.sha256) == (
        ">=3.6", ("test",), "c" * 64)
    assert sdistmeta.uv_config([kept], tmp_path).read_text(encoding="utf-8").count(
        "requires-dist") == 1


def test_another_index_is_not_kept(tmp_path: Path) -> None:
    store = tmp_path / "envforge-cache"
    sdistmeta.keep_built(PYLOCK, _uv_cache_with(tmp_path, UV_METADATA), store,
                         "https://mirror.example/simple", "3.7.16", {}, since=0.0)
    assert not (store / "sdist-metadata").exists()
    assert sdistmeta.known(store, "https://mirror.example/simple", "3.7.16") == {}


def test_decode_reads_uv_metadata_and_refuses_what_it_does_not_know() -> None:
    assert decode_msgpack(UV_METADATA) == [
        "pkg", "1.0", ["numpy>=1.9.1", "pytest ; extra == 'test'"], ">=3.6", ["test"], False]
    assert decode_msgpack(b"\xd9\x03abc") == "abc" and decode_msgpack(b"\xc0") is None
    for bad in (b"\x81\xa1a\x01", b"\x92\xa1a", b"\xa1ab", b"\xcb" + b"\0" * 8):
        with pytest.raises(ValueError):
            decode_msgpack(bad)
