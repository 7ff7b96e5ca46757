"""The repository's files as init reads them: confined, each read once, links inside kept."""

from __future__ import annotations

from pathlib import Path

import pytest

import envforge.importers.repository as repository
from envforge.errors import SpecError
from envforge.importers.repository import read_repository
from tests.testing.packs import REGISTRY


def test_each_file_is_read_once_however_often_it_is_included(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reads: list[str] = []
    real = repository.read_input_text

    def counted(path: Path | str, limit: int, **options: object) -> str:
        reads.append(Path(path).name)
        return real(path, limit, **options)  # type: ignore[arg-type]

    monkeypatch.setattr(repository, "read_input_text", counted)
    for n in range(12):
        include = f"-r r{n + 1}.txt\n-r ./r{n + 1}.txt\n" if n < 11 else ""
        (tmp_path / f"r{n}.txt").write_text(f"{include}pkg{n}==1.0\n")
    (tmp_path / "requirements.txt").write_text("-r r0.txt\n-r sub/../r0.txt\n")
    (tmp_path / "sub").mkdir()
    repo = read_repository(tmp_path, REGISTRY)
    assert sorted(reads) == sorted({*reads}) and len(reads) == 13  # sniffed or included: once
    assert sorted(f.requirement for f in repo.imported.requirements) == sorted(
        f"pkg{n}==1.0" for n in range(12))


@pytest.mark.posix_only("symlinks")
def test_a_link_that_stays_inside_the_repository_is_read(tmp_path: Path) -> None:
    (tmp_path / "pins").mkdir()
    (tmp_path / "pins" / "base.txt").write_text("six==1.16.0\n")
    (tmp_path / "requirements.txt").symlink_to(Path("pins") / "base.txt")
    repo = read_repository(tmp_path, REGISTRY)
    assert [(f.requirement, f.origin) for f in repo.imported.requirements] == [
        ("six==1.16.0", "requirements.txt:1")]


@pytest.mark.posix_only("symlinks")
def test_another_txt_linked_out_is_not_sniffed(tmp_path: Path) -> None:
    """Only requirements*.txt and the known names are dependency files; a data file linked
    out of the repository is not read to see whether it is a conda list."""
    outside = tmp_path / "outside.txt"
    outside.write_text("numpy=1.19.5=py37h\n")
    repo_root = tmp_path / "repo"
    repo_root.mkdir()
    (repo_root / "data.txt").symlink_to(outside)
    (repo_root / "requirements.txt").write_text("six\n")
    repo = read_repository(repo_root, REGISTRY)
    assert repo.files == ("requirements.txt",)
    (repo_root / "requirements.txt").unlink()
    (repo_root / "requirements.txt").symlink_to(outside)
    with pytest.raises(SpecError, match=r"requirements\.txt: a link to .*outside"):
        read_repository(repo_root, REGISTRY)


def test_pkg_resources_of_an_ubuntu_pip_freeze_is_skipped_with_why(tmp_path: Path) -> None:
    """siqueira-hc's facial-expression repository (2020) pins ``pkg-resources==0.0.0``, a
    line Ubuntu's pip wrote into ``pip freeze`` (pypa/pip#4022): no index has it, and init's
    spec failed on it ("the index lists no release of pkg-resources at all")."""
    (tmp_path / "requirements.txt").write_text("six==1.14.0\npkg-resources==0.0.0\n")
    imported = read_repository(tmp_path, REGISTRY).imported
    assert [f.requirement for f in imported.requirements] == ["six==1.14.0"]
    (skipped,) = imported.skipped
    assert (skipped.what, skipped.origin) == ("pkg-resources==0.0.0", "requirements.txt:2")
    assert skipped.reason.startswith("not a distribution: `pip freeze` on Debian and Ubuntu")
