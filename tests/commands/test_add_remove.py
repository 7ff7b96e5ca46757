"""envforge add / remove: the spec edited in place, re-locked with real uv against PyPI, and
nothing written when the result does not lock or the input is bad."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from envforge.app import editing
from envforge.cli import main
from envforge.lockfile import load_lock
from tests.testing.packs import REGISTRY

SPEC = """\
# a small stack, commented by its author
[project]
name = "tiny"
platforms = ["linux-64", "win-64"]

[python]
version = "3.7"

[environment]
kind = "venv"

[pypi]
packages = [
    "six==1.16.0",  # everything needs six
    "attrs<22",     # pinned by the era
]
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "specs").mkdir()
    spec = tmp_path / "specs" / "tiny.toml"
    spec.write_text(SPEC)
    monkeypatch.chdir(tmp_path)
    return spec


@pytest.fixture
def locked(project: Path) -> Path:
    assert main(["lock", str(project), "--quiet"]) == 0
    return project


def versions(lock: Path, platform: str) -> dict[str, str]:
    return {f.name: f.version for f in load_lock(lock, REGISTRY).platforms[platform].pypi}


def snapshot(project: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in sorted(project.parent.parent.rglob("*"))
            if p.is_file() and "home" not in p.parts}


@pytest.mark.network
def test_add_edits_in_place_relocks_keeping_the_rest_and_shows_what_moved(
        locked: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lock = Path("locks/tiny.lock")
    before = versions(lock, "linux-64")
    capsys.readouterr()
    assert main(["add", "attrs==21.2.0", "colorama==0.4.4"]) == 0  # the one spec under specs/
    assert locked.read_text() == SPEC.replace('"attrs<22",     #', '"attrs==21.2.0",     #') \
        .replace("# pinned by the era\n", '# pinned by the era\n    "colorama==0.4.4",\n')
    after = versions(lock, "linux-64")
    assert after == {**before, "attrs": "21.2.0", "colorama": "0.4.4"}
    out, err = capsys.readouterr()
    assert "attrs    │ 21.4.0 │ 21.2.0" in out and "colorama │ (new)  │ 0.4.4" in out
    assert err.splitlines()[-1] == f"next: envforge apply {Path('specs/tiny.toml')}"


@pytest.mark.network
def test_remove_relocks_without_the_package_and_keeps_the_other_comments(
        locked: Path, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(["remove", "attrs", "-s", str(locked), "--json"]) == 0
    assert locked.read_text() == SPEC.replace('    "attrs<22",     # pinned by the era\n', "")
    assert "attrs" not in versions(Path("locks/tiny.lock"), "win-64")
    document = json.loads(capsys.readouterr().out)
    assert document["kind"] == "remove" and document["after"] == ["six==1.16.0"]
    assert {"platform": "win-64", "source": "pypi", "name": "attrs", "before": "21.4.0",
            "after": None} in document["moved"]


@pytest.mark.network
def test_a_platform_s_packages_go_to_its_own_table(locked: Path) -> None:
    assert main(["add", "colorama==0.4.4", "--platform", "win-64", "-q"]) == 0
    assert locked.read_text() == SPEC + '\n[pypi.platform.win-64]\npackages = ["colorama==0.4.4"]\n'
    assert "colorama" in versions(Path("locks/tiny.lock"), "win-64")
    assert "colorama" not in versions(Path("locks/tiny.lock"), "linux-64")


@pytest.mark.network
def test_an_addition_that_does_not_resolve_changes_nothing(
        locked: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = snapshot(locked)
    capsys.readouterr()
    assert main(["add", "attrs==99.0"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert err.startswith(f"error: {Path('specs/tiny.toml')}: pypi.packages: attrs==99.0 cannot "
                          "be installed on Python 3.7")
    assert snapshot(locked) == before


@pytest.mark.parametrize(("words", "message"), [
    (["add", "attrs=21"], "envforge add: 'attrs=21' is not a requirement (PEP 508)"),
    (["remove", "attrs<22"], "envforge remove: 'attrs<22' is not a project name"),
    (["remove", "numpy"], "numpy is not in [pypi] packages (it holds: six==1.16.0, attrs<22)"),
    (["add", "six; python_version < '3'"], "its marker excludes it"),
    (["add", "six", "--platform", "win-64", "-s", "specs/nope.toml"], "no such spec file"),
])
def test_bad_input_is_one_line_exit_2_and_no_change(
        project: Path, capsys: pytest.CaptureFixture[str], words: list[str],
        message: str) -> None:
    before = snapshot(project)
    assert main(words) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err
    assert snapshot(project) == before


def test_a_refusal_of_the_added_pin_names_no_line_the_spec_on_disk_lacks(
        project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Checked before any resolution: the pin's line is the edited spec's, not the file's."""
    project.write_text(SPEC.replace('"attrs<22",', '"attrs<22", "Theano-PyMC==1.0.5",'))
    before = snapshot(project)
    assert main(["add", "Theano==1.0.5"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {Path('specs/tiny.toml')}: pypi.packages: linux-64: ")
    assert "fix: drop Theano==1.0.5" in err and err.count("\n") == 1
    assert snapshot(project) == before


def test_no_lock_edits_only_the_spec(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["add", "h5py==2.10.0", "--no-lock"]) == 0
    assert project.read_text().endswith('    "attrs<22",     # pinned by the era\n'
                                        '    "h5py==2.10.0",\n]\n')
    assert not Path("locks").exists()
    assert capsys.readouterr().err.splitlines()[-1] == \
        f"next: envforge lock {Path('specs/tiny.toml')}"


def test_two_specs_and_none_named_is_refused(project: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    (project.parent / "other.toml").write_text(SPEC)
    assert main(["add", "h5py", "--no-lock"]) == 2
    assert "2 specs under specs/: name the one to edit with -s SPEC" in capsys.readouterr().err


@pytest.mark.network
def test_the_spec_goes_back_byte_for_byte_when_the_lock_cannot_be_written(
        locked: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A full disk cannot be made here: the lock's write fails by a stand-in."""
    before = snapshot(locked)

    def full(*args: object, **kwargs: object) -> bool:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(editing, "write_lock", full)
    assert main(["add", "colorama==0.4.4"]) == 1
    assert snapshot(locked) == before


@pytest.mark.network
def test_a_spec_edited_by_hand_while_the_lock_resolves_is_not_overwritten(
        locked: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    lock_before = Path("locks/tiny.lock").read_bytes()
    real_lock = editing.lock

    def meanwhile(*args: Any, **kwargs: Any) -> Any:
        locked.write_text(SPEC + "# the user's edit\n")
        return real_lock(*args, **kwargs)

    monkeypatch.setattr(editing, "lock", meanwhile)
    assert main(["add", "colorama==0.4.4"]) == 2
    assert "changed while envforge locked it; nothing was written" in capsys.readouterr().err
    assert locked.read_text() == SPEC + "# the user's edit\n"
    assert Path("locks/tiny.lock").read_bytes() == lock_before
