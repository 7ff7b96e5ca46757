"""lockmemo: a lock's passed check is remembered only for the very spec, lock, envforge and
packs it judged; any byte of the lock, the references flag or a pack's code moved, and the
check runs again (and refuses what it refused before)."""

from __future__ import annotations

import importlib
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from envforge.app.project import Project
from envforge.errors import SpecError
from envforge.host import lockmemo
from envforge.lockcheck import check_lock
from tests.testing.packs import REGISTRY

REPO = Path(__file__).resolve().parents[2]
NUMPY = "numpy-1.19.5-cp37-cp37m-manylinux2010_x86_64.whl"


def _project(tmp_path: Path, name: str) -> Project:
    (tmp_path / "specs").mkdir(exist_ok=True)
    (tmp_path / "locks").mkdir(exist_ok=True)
    shutil.copy(REPO / "specs" / f"{name}.toml", tmp_path / "specs")
    shutil.copy(REPO / "locks" / f"{name}.lock", tmp_path / "locks")
    return Project.load(tmp_path / "specs" / f"{name}.toml", registry=REGISTRY)


def _counted(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    ran: list[Path] = []

    def counting(*args: Any, **kwargs: Any) -> None:
        ran.append(args[2])
        check_lock(*args, **kwargs)
    monkeypatch.setattr("envforge.app.project.check_lock", counting)
    return ran


def test_a_passed_check_is_not_run_again_for_the_same_spec_lock_and_envforge(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project, memo = _project(tmp_path, "theano-cpu"), tmp_path / "cache" / "memo"
    ran = _counted(monkeypatch)
    first = project.fresh_lock(memo=memo)
    assert not memo.exists()  # held, not written: the run may still be refused
    lockmemo.keep_held()
    assert project.fresh_lock(memo=memo) == first
    assert ran == [project.lock_path]
    lockmemo.keep_held()  # nothing held any more
    assert len(list(memo.iterdir())) == 1  # one record a lock path, replaced, not added to
    project.fresh_lock()  # without a memo the check always runs
    assert len(ran) == 2


def test_a_lock_edited_after_a_pass_is_checked_again_and_refused(tmp_path: Path) -> None:
    project, memo = _project(tmp_path, "theano-cpu"), tmp_path / "cache" / "memo"
    project.fresh_lock(memo=memo)
    lockmemo.keep_held()
    text = project.lock_path.read_text(encoding="utf-8")
    assert NUMPY in text
    project.lock_path.write_text(text.replace(
        NUMPY, "numpy-1.19.5-cp311-cp311-manylinux2010_x86_64.whl", 1), encoding="utf-8")
    with pytest.raises(SpecError, match="cp311-cp311-manylinux2010_x86_64"):
        project.fresh_lock(memo=memo)
    with pytest.raises(SpecError):  # and not remembered as passed
        project.fresh_lock(memo=memo)


def test_a_pass_without_references_does_not_answer_for_verify(tmp_path: Path) -> None:
    """An edited Keras reference passes apply's check (it reads references as locked);
    verify's, which recomputes them, must still refuse it."""
    project, memo = _project(tmp_path, "keras-theano-cpu"), tmp_path / "cache" / "memo"
    text = project.lock_path.read_text(encoding="utf-8")
    assert "checksum = 14.0202473861" in text
    project.lock_path.write_text(text.replace("checksum = 14.0202473861", "checksum = 15.0", 1),
                                 encoding="utf-8")
    project.fresh_lock(memo=memo)
    lockmemo.keep_held()
    with pytest.raises(SpecError) as caught:
        project.fresh_lock(memo=memo, references=True)
    assert caught.value.key == "platforms.linux-64.expect.keras.train.checksum", caught.value


def test_a_third_party_packs_edited_code_gives_another_digest(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = tmp_path / "site" / "thirdpack"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("class Pack:\n    name = 'third'\n")
    (package / "rules.py").write_text("RULES = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    module = importlib.import_module("thirdpack")
    monkeypatch.setitem(sys.modules, "thirdpack", module)
    packs = [*REGISTRY, module.Pack()]

    def key() -> str:
        return lockmemo.digest("{}", "{}", references=False, packs=packs)

    before = key()
    assert key() == before
    (package / "rules.py").write_text("RULES = 2  # edited\n")
    assert key() != before
    assert lockmemo.digest("{}", "{}", references=True, packs=packs) != key()
    assert lockmemo.digest("{}", "{}", references=False, packs=list(REGISTRY)) != key()


def test_a_lone_module_pack_is_its_file_not_its_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "lonepack.py").write_text("class Pack:\n    name = 'lone'\n")
    (site / "neighbour.py").write_text("X = 1\n")
    monkeypatch.syspath_prepend(str(site))
    module = importlib.import_module("lonepack")
    monkeypatch.setitem(sys.modules, "lonepack", module)
    files = lockmemo.code_files(["lonepack"])
    assert str((site / "lonepack.py").resolve()) in files
    assert not any(f.endswith("neighbour.py") for f in files)  # site-packages is not walked

