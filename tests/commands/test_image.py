"""``envforge image BUNDLE --base IMAGE -o DIR --no-build`` against a real bundle made
``--with-envforge``: the build context replaces only a folder envforge marked as its own, is
never inside the bundle, and --base/-t are image references or exit 2 with nothing written."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from envforge.cli import main
from envforge.commands.image import CONTAINERFILE, MARKER

pytestmark = [pytest.mark.slow, pytest.mark.network]

TINY = """\
[project]
name = "tiny"
platforms = ["linux-64"]

[python]
version = "3.11"

[environment]
kind = "venv"

[pypi]
packages = ["six==1.16.0"]
"""


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A whole bundle of a one-package spec, with envforge's own wheels (what image needs)."""
    root = tmp_path_factory.mktemp("image-bundle")
    (root / "specs").mkdir()
    (root / "specs" / "tiny.toml").write_text(TINY)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ENVFORGE_HOME", str(root / "ef"))
        patch.setenv("HOME", str(root / "home"))
        assert main(["lock", str(root / "specs" / "tiny.toml"), "-q"]) == 0
        assert main(["bundle", str(root / "locks" / "tiny.lock"), "-o", str(root / "bundle"),
                     "--with-envforge", "--envforge-python", "3.11", "-q"]) == 0
    yield root / "bundle"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    (home / ".bashrc").write_text("# the user's\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("ENVFORGE_HOME", str(tmp_path / "ef"))
    return home


def snapshot(*roots: Path) -> dict[str, str]:
    """Every path under each root with its bytes' sha256 (or 'dir')."""
    found = {}
    for root in roots:
        for path in [root, *sorted(root.rglob("*"))]:
            found[str(path)] = (hashlib.sha256(path.read_bytes()).hexdigest()
                                if path.is_file() else "dir")
    return found


def refused(args: list[str], capsys: pytest.CaptureFixture[str], *roots: Path) -> str:
    """Run ``image`` expecting exit 2, one line, and no file changed under ``roots``."""
    untouched = snapshot(*roots)
    capsys.readouterr()
    assert main(["image", *args, "--no-build"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert snapshot(*roots) == untouched
    return err


def test_a_folder_holding_a_users_files_and_a_containerfile_is_not_replaced(
        bundle: Path, home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 29, finding 2: such a folder was deleted whole (the user's notes with it)."""
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / CONTAINERFILE).write_text("FROM scratch\n")
    (mine / "notes.txt").write_text("my notes\n")
    err = refused([str(bundle), "--base", "debian:12", "-o", str(mine)], capsys, tmp_path,
                  bundle)
    assert f"-o {mine}: not empty and not a build context envforge made" in err


def test_a_context_inside_the_bundle_is_refused(
        bundle: Path, home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 29, finding 2: ``-o BUNDLE/ctx`` copied the bundle into itself until
    RecursionError."""
    err = refused([str(bundle), "--base", "debian:12", "-o", str(bundle / "ctx")], capsys,
                  tmp_path, bundle)
    assert f"overlaps the command's input {bundle}" in err


def test_a_context_envforge_made_is_replaced_whole_and_an_empty_folder_is_filled(
        bundle: Path, home: Path, tmp_path: Path) -> None:
    context = tmp_path / "ctx"
    context.mkdir()
    for base in ("debian:12", "docker.io/library/python:3.11-slim-bookworm"):
        assert main(["image", str(bundle), "--base", base, "-o", str(context), "--no-build",
                     "-q"]) == 0
        assert (context / MARKER).is_file() and (context / "bundle" / "manifest.json").is_file()
        assert f"FROM {base}\n" in (context / CONTAINERFILE).read_text()
        (context / "left-by-a-build").write_text("")
    assert sorted(p.name for p in context.iterdir()) == [
        MARKER, CONTAINERFILE, "bundle", "envforge.def", "left-by-a-build"]


@pytest.mark.parametrize(("flag", "value"), [
    ("--base", "debian:12\nRUN touch /pwned"), ("--base", ""), ("--base", "debian 12"),
    ("--base", "Debian:12"), ("-t", "x:1\nRUN touch /pwned"), ("-t", "x y")])
def test_base_and_tag_must_be_image_references(
        bundle: Path, home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        flag: str, value: str) -> None:
    """Issue 29, finding 2: a newline in --base added a RUN line to the Containerfile and
    envforge.def; an empty base or one with spaces was accepted."""
    args = [str(bundle), "--base", value if flag == "--base" else "debian:12", "-o",
            str(tmp_path / "ctx"), *(["-t", value] if flag == "-t" else [])]
    err = refused(args, capsys, tmp_path, bundle)
    assert f"error: {flag} {value!r}: not an image reference" in err
    assert not (tmp_path / "ctx").exists()
