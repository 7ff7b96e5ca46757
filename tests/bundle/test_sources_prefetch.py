"""apply's online prefetch: each file's own work starts as it lands, before the first change.

The locked files are real archives served over ``file://`` (no network): a wheel is unpacked
into the unpacked cache by the prefetch itself, and one that cannot be unpacked stops apply
there, with nothing changed, instead of mid-install.
"""

from __future__ import annotations

import dataclasses
import hashlib
import zipfile
from pathlib import Path

import pytest

from envforge.bundle.sources import prefetch
from envforge.errors import ArtifactError
from envforge.host.unpacked import entry_path
from envforge.lockfile import LockedPypiFile
from envforge.steps.base import StepContext, unpacked_cache
from tests.testing.contexts import make_ctx


def _wheel(folder: Path, name: str) -> Path:
    path = folder / f"{name}-1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(f"{name}/__init__.py", "VALUE = 1\n")
        zf.writestr(f"{name}-1.0.dist-info/METADATA", f"Name: {name}\nVersion: 1.0\n")
        zf.writestr(f"{name}-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\n")
        zf.writestr(f"{name}-1.0.dist-info/RECORD", "")
    return path


def _locked(path: Path) -> LockedPypiFile:
    name = path.name.split("-")[0]
    return LockedPypiFile(name=name, version="1.0", kind="wheel", filename=path.name,
                          url=path.as_uri(), sha256=hashlib.sha256(path.read_bytes()).hexdigest(),
                          size=path.stat().st_size)


def _ctx(tmp_path: Path, files: list[Path]) -> StepContext:
    base = make_ctx(tmp_path, "linux-64", None)
    lock = base.lock.model_copy(update={"pypi": tuple(_locked(f) for f in files)})
    return dataclasses.replace(base, lock=lock)


def test_each_wheel_is_unpacked_into_the_cache_as_it_lands(tmp_path: Path) -> None:
    index = tmp_path / "index"
    index.mkdir()
    ctx = _ctx(tmp_path, [_wheel(index, "alpha"), _wheel(index, "beta")])
    prefetch(ctx)
    for f in ctx.lock.pypi:
        entry = entry_path(unpacked_cache(ctx), f.sha256)
        assert (entry / "files" / f.name / "__init__.py").read_text() == "VALUE = 1\n"
    assert not ctx.prefix.exists()


def test_a_wheel_that_cannot_be_unpacked_stops_apply_before_the_first_change(
        tmp_path: Path) -> None:
    index = tmp_path / "index"
    index.mkdir()
    broken = index / "gamma-1.0-py3-none-any.whl"
    broken.write_bytes(b"not a zip archive")  # locked by its own sha256: the hash passes
    ctx = _ctx(tmp_path, [_wheel(index, "alpha"), broken])
    with pytest.raises(ArtifactError) as refused:
        prefetch(ctx)
    message = str(refused.value)
    assert "gamma-1.0-py3-none-any.whl" in message and "not a readable wheel" in message
    assert message.count("nothing was changed") == 1
    assert not ctx.prefix.exists()
