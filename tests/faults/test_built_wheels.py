"""A wheel built from a locked sdist is anchored on the sdist's sha256 (the lock's) and hashed
by where it is kept: the bundle's manifest or the host's build cache (issue 25). A wheel edited
after the fact fails that hash; one whose hash was fixed to match is still held to the sdist's
name and version, and one in the cache that no longer hashes as recorded is built again."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

import pytest

from envforge.bundle.buildcache import RECORD, build_key, entry_dir
from envforge.bundle.manifest import BuiltFrom, BundleFile, Manifest, write_manifest
from envforge.bundle.sources import pypi_wheels
from envforge.errors import ArtifactError, OfflineError
from envforge.host.fetch import FileRef, cache_path
from envforge.host.wheelinstall import verify_wheels
from envforge.lockfile import LockedPypiFile
from envforge.steps.base import StepContext
from tests.bundle.test_wheelcheck import sdist as _sdist
from tests.bundle.test_wheelcheck import wheel as _compiled
from tests.testing.contexts import make_ctx
from tests.testing.packs import REGISTRY

WHEEL = "demo-1.0-cp37-cp37m-linux_x86_64.whl"


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _locked(sdist: Path) -> LockedPypiFile:
    return LockedPypiFile(name="demo", version="1.0", kind="sdist", filename=sdist.name,
                          url=f"https://x.invalid/{sdist.name}", sha256=_sha(sdist))


def _bundle(tmp_path: Path, wheel: Path, sdist: LockedPypiFile) -> Path:
    """A bundle carrying ``wheel`` as the sdist's built wheel, its manifest made to match."""
    bundle = tmp_path / "bundle"
    (bundle / "pypi").mkdir(parents=True)
    (bundle / "pypi" / wheel.name).write_bytes(wheel.read_bytes())
    write_manifest(Manifest(
        envforge="0", spec_name="demo", spec_hash="h", spec="specs/demo.toml",
        lock="locks/demo.lock", lock_sha256="0" * 64, platform="linux-64", python="3.7",
        files=(BundleFile(path=f"pypi/{wheel.name}", source="pypi", role="built-wheel",
                          name="demo", version="1.0", sha256=_sha(wheel),
                          size=wheel.stat().st_size,
                          built_from=BuiltFrom(filename=sdist.filename, sha256=sdist.sha256,
                                               python="3.7.16", pure=False)),)), bundle)
    return bundle


def test_a_bundle_wheel_edited_after_bundling_fails_its_manifest_hash(tmp_path: Path) -> None:
    locked = _locked(_sdist(tmp_path / "demo-1.0.tar.gz"))
    bundle = _bundle(tmp_path, _compiled(tmp_path / WHEEL), locked)
    ctx = dataclasses.replace(make_ctx(tmp_path, "linux-64", None), bundle=bundle)
    [good] = pypi_wheels(ctx, [locked])
    verify_wheels([good])
    _compiled(bundle / "pypi" / WHEEL, extra={"evil.pth": b"import os; os.system('id')\n"})
    [edited] = pypi_wheels(ctx, [locked])
    with pytest.raises(ArtifactError, match="does not match the expected"):
        verify_wheels([edited])


def test_a_bundle_wheel_of_another_version_is_refused_though_its_manifest_matches(
        tmp_path: Path) -> None:
    locked = _locked(_sdist(tmp_path / "demo-1.0.tar.gz"))
    other = _compiled(tmp_path / WHEEL, version="6.6.6")
    ctx = dataclasses.replace(make_ctx(tmp_path, "linux-64", None),
                              bundle=_bundle(tmp_path, other, locked))
    with pytest.raises(ArtifactError, match=r"METADATA names demo 6\.6\.6, not demo 1\.0"):
        pypi_wheels(ctx, [locked])


def _cached(tmp_path: Path) -> tuple[LockedPypiFile, Path, StepContext]:
    """An offline context whose cache holds the sdist and an entry for its built wheel."""
    sdist = _sdist(tmp_path / "demo-1.0.tar.gz")
    locked = _locked(sdist)
    ctx = dataclasses.replace(make_ctx(tmp_path, "linux-64", None), offline=True)
    cached_sdist = cache_path(ctx.dirs.cache, FileRef(locked.url, locked.sha256, locked.filename))
    cached_sdist.parent.mkdir(parents=True)
    cached_sdist.write_bytes(sdist.read_bytes())
    folder = entry_dir(ctx.dirs.cache, locked.sha256,
                       build_key(ctx.lock.build, ctx.lock.python, ctx.platform))
    folder.mkdir(parents=True)
    return locked, folder, ctx


def _record(folder: Path, wheel: Path) -> None:
    (folder / RECORD).write_text(json.dumps({"filename": wheel.name, "sha256": _sha(wheel),
                                             "python": "3.7.16", "pure": False}))


def test_a_cached_wheel_is_installed_by_its_recorded_hash(tmp_path: Path) -> None:
    locked, folder, ctx = _cached(tmp_path)
    wheel = _compiled(folder / WHEEL)
    _record(folder, wheel)
    [found] = pypi_wheels(ctx, [locked])
    assert (found.path, found.sha256) == (wheel, _sha(wheel))


def test_a_cached_wheel_edited_since_its_record_is_dropped_not_installed(tmp_path: Path) -> None:
    locked, folder, ctx = _cached(tmp_path)
    _record(folder, _compiled(folder / WHEEL))
    _compiled(folder / WHEEL, extra={"evil.pth": b"import os\n"})
    with pytest.raises(OfflineError, match="no wheel built from it is in the cache"):
        pypi_wheels(ctx, [locked])
    assert not folder.exists()  # online, the next apply builds it again


def test_a_cached_wheel_of_another_name_is_refused_though_its_record_matches(
        tmp_path: Path) -> None:
    locked, folder, ctx = _cached(tmp_path)
    _record(folder, _compiled(folder / WHEEL, name="evil"))
    with pytest.raises(ArtifactError, match=r"METADATA names evil 1\.0, not demo 1\.0"):
        pypi_wheels(ctx, [locked])


def test_online_installs_take_only_re_hashed_copies_never_uv_s_cache(tmp_path: Path) -> None:
    """A six altered where envforge keeps it is refused online too: installs come from the
    content-addressed cache, re-hashed on use, not from uv's cache (which uv trusts)."""
    from envforge.journal import Journal, Transaction
    from envforge.lockfile import load_lock
    from envforge.steps.pypi import PypiInstallStep

    repo = Path(__file__).resolve().parent.parent.parent
    [six] = [f for f in load_lock(repo / "locks" / "theano-cpu.lock",
                                  REGISTRY).platforms["linux-64"].pypi
             if f.name == "six"]
    base = make_ctx(tmp_path, "linux-64", None)
    ctx = dataclasses.replace(base, lock=base.lock.model_copy(update={"pypi": (six,)}),
                              offline=False)
    cached = cache_path(ctx.dirs.cache, FileRef(six.url, six.sha256, six.filename))
    cached.parent.mkdir(parents=True)
    cached.write_bytes(_compiled(tmp_path / "six.whl").read_bytes())  # not the locked bytes
    step = PypiInstallStep()
    with pytest.raises(ArtifactError, match="the cache copy was altered; refusing it"):
        step.apply(ctx, Transaction(Journal(ctx.state_dir), step.name))
