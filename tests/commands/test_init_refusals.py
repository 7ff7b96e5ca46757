"""envforge init on hostile or careless repositories (issue 29): reads only inside the
repository, each file once and bounded, and every refusal is one line naming the file (and
line), exit 2, with nothing written anywhere."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from envforge.cli import main
from envforge.inputfile import DEPENDENCY_LIMIT, LINE_LIMIT
from tests.faults.harness import envforge, snapshot


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """tmp_path holds the home, envforge's home, the repository and the spec's folder."""
    for name in ("home", "envforge-home", "repo", "specs"):
        (tmp_path / name).mkdir()
    (tmp_path / "secret.txt").write_text("root-password-here\n")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("ENVFORGE_HOME", str(tmp_path / "envforge-home"))
    return tmp_path


def refused(world: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """init's one line of refusal; the whole world unchanged."""
    before = snapshot(world)
    code = main(["init", str(world / "repo"), "-o", str(world / "specs" / "out.toml"),
                 "--offline"])
    captured = capsys.readouterr()
    assert code == 2, captured
    assert snapshot(world) == before
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    assert "Traceback" not in captured.err and "unexpected error" not in captured.err
    assert "root-password-here" not in captured.out + captured.err
    return lines[0]


@pytest.mark.parametrize("include", ["../secret.txt", "/etc/passwd", "sub/../../secret.txt"])
def test_an_include_outside_the_repository_is_refused_naming_its_line(
        world: Path, capsys: pytest.CaptureFixture[str], include: str) -> None:
    (world / "repo" / "requirements.txt").write_text(f"six==1.16.0\n-r {include}\n")
    line = refused(world, capsys)
    assert f"requirements.txt:2: -r {include}:" in line
    assert "init reads only inside the repository" in line


@pytest.mark.posix_only("symlinks")
def test_a_requirements_file_linked_out_of_the_repository_is_refused(
        world: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (world / "repo" / "requirements.txt").symlink_to(world / "secret.txt")
    line = refused(world, capsys)
    assert f"{world / 'repo' / 'requirements.txt'}: a link to" in line and "outside" in line


@pytest.mark.posix_only("symlinks")
def test_an_include_linked_out_of_the_repository_is_refused_naming_the_including_line(
        world: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (world / "repo" / "base.txt").symlink_to(world / "secret.txt")
    (world / "repo" / "requirements.txt").write_text("# pins\n-r base.txt\n")
    assert "requirements.txt:2: -r base.txt: a link to" in refused(world, capsys)


def test_a_diamond_of_includes_reads_each_file_once(world: Path) -> None:
    repo = world / "repo"
    for n in range(30):
        include = f"-r r{n + 1}.txt\n" * 2 if n < 29 else ""
        (repo / f"r{n}.txt").write_text(f"{include}pkg{n}==1.0\n")
    (repo / "requirements.txt").write_text("-r r0.txt\n")
    started = time.monotonic()
    done = envforge("init", str(repo), "-o", str(world / "specs" / "out.toml"), "--offline",
                    env=dict(os.environ), timeout=60)
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - started < 30
    text = (world / "specs" / "out.toml").read_text()
    assert all(f'"pkg{n}==1.0",  # r{n}.txt:3' in text for n in range(29))


def test_an_include_through_its_own_folder_is_read_once_by_its_normal_name(
        world: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (world / "repo" / "sub").mkdir()
    (world / "repo" / "requirements.txt").write_text("six==1.16.0\n-r sub/../requirements.txt\n")
    out = world / "specs" / "out.toml"
    assert main(["init", str(world / "repo"), "-o", str(out), "--offline"]) == 0
    err = capsys.readouterr().err
    assert "must write" not in err and "sub/.." not in err
    assert '"six==1.16.0",  # requirements.txt:1\n' in out.read_text()


def test_a_file_over_the_limit_is_refused_before_it_is_read(
        world: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with (world / "repo" / "requirements.txt").open("w") as handle:
        handle.write("six==1.16.0\n" * (DEPENDENCY_LIMIT // 12 + 1))
    started = time.monotonic()
    line = refused(world, capsys)
    assert time.monotonic() - started < 10
    assert "requirements.txt: " in line and "more than the 1 MiB" in line


@pytest.mark.parametrize("name", ["requirements.txt", "environment.yml"])
def test_a_line_over_the_limit_is_refused_naming_it(
        world: Path, capsys: pytest.CaptureFixture[str], name: str) -> None:
    body = "dependencies:\n  - " if name == "environment.yml" else "six==1.16.0\n"
    (world / "repo" / name).write_text(body + "a" * 900_000 + "\n")
    started = time.monotonic()
    line = refused(world, capsys)
    assert time.monotonic() - started < 10
    assert f"{name}:2: a line of 900" in line and f"more than the {LINE_LIMIT}" in line


@pytest.mark.posix_only("fifos")
def test_a_fifo_is_refused_without_blocking(world: Path) -> None:
    os.mkfifo(world / "repo" / "requirements.txt")
    before = snapshot(world)
    done = envforge("init", str(world / "repo"), "-o", str(world / "specs" / "out.toml"),
                    "--offline", env=dict(os.environ), timeout=30)
    assert done.returncode == 2 and snapshot(world) == before
    assert done.stderr.strip().endswith("requirements.txt: a FIFO, not a regular file: "
                                        "envforge reads only regular files")


@pytest.mark.parametrize("byte", ["\x00", "\x1b"])
def test_a_control_byte_is_named_in_the_input_not_in_the_spec_never_written(
        world: Path, capsys: pytest.CaptureFixture[str], byte: str) -> None:
    (world / "repo" / "requirements.txt").write_text(f"six==1.16.0\n# a{byte}b\nh5py\n")
    line = refused(world, capsys)
    assert f"{world / 'repo' / 'requirements.txt'}:2: a NUL or control character" in line
    assert "out.toml" not in line


PIPFILE_LOCKS = {
    "a list": ([], "Pipfile.lock: a list, not a JSON object"),
    "default a list": ({"default": []}, "default: a list, not a table"),
    "default a string": ({"default": "six"}, "default: a string, not a table"),
    "a null entry": ({"default": {"six": None}}, "default.six: null, not an object"),
    "a number as version": ({"default": {"six": {"version": 1}}},
                            "default.six.version: a number, not a string"),
    "_meta a list": ({"_meta": [], "default": {}}, "_meta: a list, not a table"),
    "requires a string": ({"_meta": {"requires": "3.7"}}, "_meta.requires: a string, not a table"),
}


@pytest.mark.parametrize("case", sorted(PIPFILE_LOCKS))
def test_a_pipfile_lock_of_wrong_types_is_one_line(
        world: Path, capsys: pytest.CaptureFixture[str], case: str) -> None:
    document, message = PIPFILE_LOCKS[case]
    (world / "repo" / "Pipfile.lock").write_text(json.dumps(document, indent=4))
    line = refused(world, capsys)
    assert f"{world / 'repo' / 'Pipfile.lock'}" in line and message in line


@pytest.mark.parametrize("name,text", [
    ("Pipfile.lock", "[\n" * 100_000 + "]\n" * 100_000),
    ("Pipfile", "[packages]\nsix = " + "[\n" * 100_000 + "]\n" * 100_000),
    ("setup.py", "from setuptools import setup\nsetup(install_requires=['six']"
     + "\n + ['a']" * 20_000 + ")\n"),
])
def test_a_file_nested_too_deeply_is_one_line(
        world: Path, capsys: pytest.CaptureFixture[str], name: str, text: str) -> None:
    (world / "repo" / name).write_text(text)
    line = refused(world, capsys)
    assert f"{world / 'repo' / name}" in line and "nested too deeply to parse" in line


def test_a_pipfile_whose_packages_is_a_list_is_one_line(
        world: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (world / "repo" / "Pipfile").write_text('packages = ["six"]\n\n'
                                            '[requires]\npython_version = "3.7"\n')
    assert f"{world / 'repo' / 'Pipfile'}:1: packages: a list, not a table" in refused(
        world, capsys)


def test_a_long_line_in_setup_py_or_a_minified_pipfile_lock_is_read(
        world: Path, capsys: pytest.CaptureFixture[str]) -> None:
    description = "x" * (LINE_LIMIT * 2)
    (world / "repo" / "setup.py").write_text(
        f"from setuptools import setup\nsetup(long_description={description!r}, "
        "install_requires=['six==1.16.0'])\n")
    (world / "repo" / "Pipfile.lock").write_text(json.dumps(
        {"_meta": {"hash": {"sha256": description}}, "default": {"h5py": {"version":
                                                                           "==2.10.0"}}}))
    out = world / "specs" / "out.toml"
    assert main(["init", str(world / "repo"), "-o", str(out), "--offline"]) == 0, \
        capsys.readouterr().err
    text = out.read_text()
    assert '"six==1.16.0"' in text and '"h5py==2.10.0"' in text
