"""``envforge status``: its answer replayed from a stamp while every path it read holds, and
found again, drift and all, once one changes."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import time
from pathlib import Path

import pytest

from envforge import __version__
from envforge.cli import main
from envforge.envlayout import layout_for
from envforge.host import noopstamp
from envforge.lockfile import (
    ApplyInputs,
    Expectations,
    LockedPypiFile,
    Lockfile,
    LockMeta,
    PlatformLock,
    write_lock,
)
from envforge.paths import envforge_dirs

WORDS = ["status", "--json"]


def _dist(site: Path, name: str, version: str, files: dict[str, str]) -> None:
    info = site / f"{name}-{version}.dist-info"
    info.mkdir(parents=True)
    rows = []
    for path, text in files.items():
        (site / path).write_bytes(text.encode())
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest())
        rows.append(f"{path},sha256={digest.rstrip(b'=').decode()},{len(text)}")
    (info / "RECORD").write_text("\n".join([*rows, f"{info.name}/RECORD,,"]) + "\n")


@pytest.fixture
def applied(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An environment as apply records it (spec, lock, record, one distribution); returns
    the distribution's module."""
    monkeypatch.setenv("ENVFORGE_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    spec = tmp_path / "specs" / "s.toml"
    spec.parent.mkdir()
    spec.write_text("# the record names it; status reads only its lock\n")
    six = LockedPypiFile(name="six", version="1.16.0", kind="wheel", filename="six.whl",
                         url="https://x/six.whl", sha256="a" * 64)
    write_lock(Lockfile(
        meta=LockMeta(envforge=__version__, spec="specs/s.toml", spec_name="s",
                      spec_hash="0" * 64),
        platforms={"linux-64": PlatformLock(
            python="3.7.16", environment="venv", pypi=(six,),
            expect=Expectations(versions={}, device="cpu", float_x="float64"),
            apply=ApplyInputs())}),
        tmp_path / "locks" / "s.lock")
    prefix = tmp_path / "env"
    site = Path(layout_for("linux-64", "venv", prefix, "3.7.16").site_packages)
    site.mkdir(parents=True)
    _dist(site, "six", "1.16.0", {"six.py": "ok\n"})
    state = envforge_dirs().state / "s-0"
    state.mkdir(parents=True)
    (state / "applied.json").write_text(json.dumps({
        "prefix": str(prefix), "spec": str(spec), "platform": "linux-64", "complete": True,
        "spec_name": "s"}))
    time.sleep(noopstamp.RACY_NS / 1e9 + 0.1)  # a stamp of files this fresh is not trusted
    return site / "six.py"


def _fast() -> int | None:
    return noopstamp.try_noop(WORDS, cwd=str(Path.cwd()), environ=os.environ,
                              version=__version__)


def _status(capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    capsys.readouterr()
    assert main(WORDS) == 0
    [row] = json.loads(capsys.readouterr().out)["environments"]
    return row["drift"]  # type: ignore[no-any-return]


@pytest.mark.posix_only("the stamp is Linux's: Windows' ctime cannot prove a file unchanged")
def test_status_is_replayed_until_an_installed_file_changes(
        applied: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _fast() is None  # never stamped
    assert _status(capsys)["summary"] == "as locked"
    assert _fast() == 0
    replayed = capsys.readouterr()
    assert json.loads(replayed.out)["environments"][0]["drift"]["summary"] == "as locked"
    assert main(WORDS) == 0
    assert capsys.readouterr().out == replayed.out
    applied.write_text("no\n")  # same size, edited in place: drift the stamp must not hide
    assert _fast() is None
    drift = _status(capsys)
    assert drift["modified"] == ["six: six.py"]


@pytest.mark.posix_only("the stamp is Linux's: Windows' ctime cannot prove a file unchanged")
def test_a_new_distribution_or_record_falls_through(
        applied: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _status(capsys)
    assert _fast() == 0
    capsys.readouterr()
    _dist(applied.parent, "toml", "0.10.2", {"toml.py": "x\n"})
    assert _fast() is None
    assert _status(capsys)["extra"] == ["toml 0.10.2"]
    time.sleep(noopstamp.RACY_NS / 1e9 + 0.1)
    _status(capsys)
    assert _fast() == 0
    capsys.readouterr()
    state = next(envforge_dirs().state.iterdir())
    (state / "applied.json").write_text("{")  # torn
    assert _fast() is None
    capsys.readouterr()
    assert main(WORDS) == 0
    assert "damaged" in json.loads(capsys.readouterr().out)["environments"][0]
