"""The host's build cache: keyed by what makes a wheel, written whole or not at all, and a
corrupt entry dropped (so the wheel is built again) rather than installed."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from envforge.bundle.buildcache import (
    BUILT,
    RECORD,
    build_key,
    entry_dir,
    read_entry,
    write_entry,
)
from envforge.host import fetch
from envforge.host.archives import sha256_file
from envforge.lockfile import PypiBuild
from envforge.spec import PYPI_SIMPLE

SDIST = "a" * 64
WHEEL = "demo-1.0-cp37-cp37m-linux_x86_64.whl"


def _put(cache: Path, tmp_path: Path, key: str, data: bytes = b"wheel bytes") -> Path:
    made = tmp_path / "out" / WHEEL
    made.parent.mkdir(exist_ok=True)
    made.write_bytes(data)
    built = write_entry(cache, SDIST, key, made, python="3.7.16", pure=False,
                        build_requires=("setuptools==68.0.0",), sdist="demo-1.0.tar.gz")
    assert not made.exists()  # moved, not copied
    return built.path


def test_an_entry_reads_back_as_written(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    key = build_key(None, "3.7.16", "linux-64")
    path = _put(cache, tmp_path, key)
    built = read_entry(cache, SDIST, key)
    assert built is not None and built.path == path
    assert (built.python, built.pure, built.build_requires) == ("3.7.16", False,
                                                                ("setuptools==68.0.0",))
    assert [p.name for p in (cache / BUILT / SDIST).iterdir()] == [key]  # no staging left


def test_the_key_is_the_build_environment_python_and_platform(tmp_path: Path) -> None:
    base = build_key(None, "3.7.16", "linux-64")
    assert build_key(PypiBuild(index=PYPI_SIMPLE), "3.7.1", "linux-64") == base
    others = [build_key(PypiBuild(index=PYPI_SIMPLE, constraints=("cython==0.29.36",)),
                        "3.7.16", "linux-64"),
              build_key(PypiBuild(index="https://mirror.invalid/simple"), "3.7.16", "linux-64"),
              build_key(PypiBuild(index=PYPI_SIMPLE, find_links=("/wheels",)), "3.7.16",
                        "linux-64"),
              build_key(None, "3.8.10", "linux-64"), build_key(None, "3.7.16", "win-64")]
    assert len({base, *others}) == 1 + len(others)
    cache = tmp_path / "cache"
    _put(cache, tmp_path, base)
    assert all(read_entry(cache, SDIST, other) is None for other in others)


@pytest.mark.parametrize("damage", ["wheel-edited", "wheel-gone", "record-torn",
                                    "record-hash-wrong"])
def test_a_corrupt_entry_is_dropped(tmp_path: Path, damage: str) -> None:
    cache = tmp_path / "cache"
    key = build_key(None, "3.7.16", "linux-64")
    path = _put(cache, tmp_path, key)
    record = entry_dir(cache, SDIST, key) / RECORD
    if damage == "wheel-edited":
        path.write_bytes(b"wheel bytes, then a payload")
    elif damage == "wheel-gone":
        path.unlink()
    elif damage == "record-torn":
        record.write_text(record.read_text()[:20])
    else:
        record.write_text(json.dumps({**json.loads(record.read_text()), "sha256": "0" * 64}))
    assert read_entry(cache, SDIST, key) is None
    assert not entry_dir(cache, SDIST, key).exists()  # the next build starts clean
    _put(cache, tmp_path, key, b"rebuilt")
    again = read_entry(cache, SDIST, key)
    assert again is not None and again.path.read_bytes() == b"rebuilt"


def test_a_failed_write_leaves_no_entry(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    key = build_key(None, "3.7.16", "linux-64")
    with pytest.raises(OSError):
        write_entry(cache, SDIST, key, tmp_path / "no-such.whl", python="3.7.16", pure=False,
                    build_requires=(), sdist="demo-1.0.tar.gz")
    assert list((cache / BUILT / SDIST).iterdir()) == []
    assert read_entry(cache, SDIST, key) is None


@pytest.mark.posix_only("on Windows the check is kept per process only: ctime is creation")
def test_a_settled_entry_is_not_hashed_again_and_a_byte_flipped_since_is_seen(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "cache"
    key = build_key(None, "3.7.16", "linux-64")
    path = _put(cache, tmp_path, key)
    os.utime(path, (time.time() - 60, time.time() - 60))  # settled: a write would move it
    assert read_entry(cache, SDIST, key) is not None  # hashed, and the answer kept
    monkeypatch.setattr(fetch, "_HASHED", {})  # as in a new process
    hashed: list[Path] = []

    def counting(path: Path) -> str:
        hashed.append(path)
        return sha256_file(path)
    monkeypatch.setattr(fetch, "sha256_file", counting)
    assert read_entry(cache, SDIST, key) is not None
    assert hashed == []
    monkeypatch.setattr(fetch, "_HASHED", {})
    st = path.stat()
    with open(path, "r+b") as handle:  # same size, inode and mtime: only ctime moves
        handle.write(b"W")
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert read_entry(cache, SDIST, key) is None
    assert hashed == [path] and not entry_dir(cache, SDIST, key).exists()
