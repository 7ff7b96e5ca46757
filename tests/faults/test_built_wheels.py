"""Wheels built from sdists are trusted through the lock (issue 10 #6), not a manifest or
a cache record: a replaced wheel whose manifest (or cache record) was fixed to match is
refused, whether the lock records the built wheel's sha256 or the sdist is at hand."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import tarfile
import zipfile
from pathlib import Path

import pytest

from envforge.bundle.manifest import BuiltFrom, BundleFile, Manifest, write_manifest
from envforge.bundle.sources import pypi_wheels
from envforge.bundle.wheels import BUILT, RECORD, check_built_wheel
from envforge.errors import ArtifactError
from envforge.host.fetch import FileRef, cache_path
from envforge.lockfile import BuiltWheelHash, LockedPypiFile
from tests.testing.contexts import make_ctx

MODULE = b"def answer():\n    return 42\n"
ENTRY_POINTS = b"[console_scripts]\ndemo = demo:answer\n"


def _sdist(path: Path) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in (("demo-1.0/demo/__init__.py", MODULE),
                           ("demo-1.0/demo.egg-info/entry_points.txt", ENTRY_POINTS + b"\n"),
                           ("demo-1.0/PKG-INFO", b"Name: demo\nVersion: 1.0\n"),
                           ("demo-1.0/setup.py", b"from setuptools import setup; setup()\n")):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def _wheel(path: Path, *, module: bytes = MODULE, extra: dict[str, bytes] | None = None,
           entry_points: bytes = ENTRY_POINTS) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("demo/__init__.py", module)
        zf.writestr("demo-1.0.dist-info/METADATA", b"Metadata-Version: 2.1\nName: demo\n"
                    b"Version: 1.0\n")
        zf.writestr("demo-1.0.dist-info/WHEEL", b"Wheel-Version: 1.0\nRoot-Is-Purelib: true\n"
                    b"Tag: py3-none-any\n")
        zf.writestr("demo-1.0.dist-info/entry_points.txt", entry_points)
        for name, data in (extra or {}).items():
            zf.writestr(name, data)
        zf.writestr("demo-1.0.dist-info/RECORD", b"")
    return path


TAMPERED = {
    "pth": {"extra": {"evil.pth": b"import os; os.system('id')\n"}},
    "edited-module": {"module": MODULE + b"import os\n"},
    "entry-points": {"entry_points": b"[console_scripts]\ndemo = os:system\n"},
}


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_faithful_wheel_matches_its_sdist(tmp_path: Path) -> None:
    check_built_wheel(_wheel(tmp_path / "demo-1.0-py3-none-any.whl"), _sdist(tmp_path / "s.tgz"))


@pytest.mark.parametrize("case", sorted(TAMPERED))
def test_a_wheel_that_is_not_its_sdist_is_refused(tmp_path: Path, case: str) -> None:
    wheel = _wheel(tmp_path / "demo-1.0-py3-none-any.whl", **TAMPERED[case])  # type: ignore[arg-type]
    with pytest.raises(ArtifactError, match="refusing"):
        check_built_wheel(wheel, _sdist(tmp_path / "s.tgz"))


def _locked(sdist: Path, built: str | None) -> LockedPypiFile:
    return LockedPypiFile(
        name="demo", version="1.0", kind="sdist", filename="demo-1.0.tar.gz",
        url="https://x.invalid/demo-1.0.tar.gz", sha256=_sha(sdist),
        built=BuiltWheelHash(filename="demo-1.0-py3-none-any.whl", sha256=built)
        if built else None)


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
                                               python="3.7.16", pure=True)),)), bundle)
    return bundle


@pytest.mark.parametrize("case", sorted(TAMPERED))
def test_a_replaced_bundle_wheel_with_its_manifest_fixed_is_refused(tmp_path: Path,
                                                                    case: str) -> None:
    sdist = _sdist(tmp_path / "demo-1.0.tar.gz")
    (tmp_path / "good").mkdir()
    good = _wheel(tmp_path / "good" / "demo-1.0-py3-none-any.whl")
    evil = _wheel(tmp_path / "demo-1.0-py3-none-any.whl", **TAMPERED[case])  # type: ignore[arg-type]
    ctx = make_ctx(tmp_path, "linux-64", None)
    for recorded in (_sha(good), None):  # the lock vouches for the good one / for nothing
        locked = _locked(sdist, recorded)
        bundle = _bundle(tmp_path / f"b-{bool(recorded)}", evil, locked)
        here = dataclasses.replace(ctx, bundle=bundle)
        with pytest.raises(ArtifactError, match="lock records"):
            pypi_wheels(here, [locked])
    locked = _locked(sdist, _sha(good))
    here = dataclasses.replace(ctx, bundle=_bundle(tmp_path / "b-good", good, locked))
    [ok] = pypi_wheels(here, [locked])
    assert ok.sha256 == _sha(good)


def test_a_replaced_cached_wheel_with_its_record_fixed_is_refused(tmp_path: Path) -> None:
    sdist = _sdist(tmp_path / "demo-1.0.tar.gz")
    locked = _locked(sdist, None)
    ctx = dataclasses.replace(make_ctx(tmp_path, "linux-64", None), offline=True)
    cached_sdist = cache_path(ctx.dirs.cache, FileRef(locked.url, locked.sha256, locked.filename))
    cached_sdist.parent.mkdir(parents=True)
    cached_sdist.write_bytes(sdist.read_bytes())
    folder = ctx.dirs.cache / BUILT / locked.sha256
    folder.mkdir(parents=True)
    for refused in (False, True):
        wheel = _wheel(folder / "demo-1.0-py3-none-any.whl",
                       **(TAMPERED["pth"] if refused else {}))  # type: ignore[arg-type]
        (folder / RECORD).write_text(json.dumps({"filename": wheel.name, "sha256": _sha(wheel),
                                                 "python": "3.7.16", "pure": True}))
        if refused:
            with pytest.raises(ArtifactError, match=r"evil\.pth is not a file of"):
                pypi_wheels(ctx, [locked])
        else:
            assert [w.path for w in pypi_wheels(ctx, [locked])] == [wheel]


def test_online_installs_take_only_re_hashed_copies_never_uv_s_cache(tmp_path: Path) -> None:
    """A six altered where envforge keeps it is refused online too: installs come from the
    content-addressed cache, re-hashed on use, not from uv's cache (which uv trusts)."""
    from envforge.journal import Journal, Transaction
    from envforge.lockfile import load_lock
    from envforge.steps.pypi import PypiInstallStep

    repo = Path(__file__).resolve().parent.parent.parent
    [six] = [f for f in load_lock(repo / "locks" / "theano-cpu.lock").platforms["linux-64"].pypi
             if f.name == "six"]
    base = make_ctx(tmp_path, "linux-64", None)
    ctx = dataclasses.replace(base, lock=base.lock.model_copy(update={"pypi": (six,)}),
                              offline=False)
    cached = cache_path(ctx.dirs.cache, FileRef(six.url, six.sha256, six.filename))
    cached.parent.mkdir(parents=True)
    cached.write_bytes(_wheel(tmp_path / "six.whl").read_bytes())  # not the locked bytes
    step = PypiInstallStep()
    with pytest.raises(ArtifactError, match="the cache copy was altered; refusing it"):
        step.apply(ctx, Transaction(Journal(ctx.state_dir), step.name))
