"""Wheels installed by pypa's installer into a real Python 3.7 venv that has no pip.

Most wheels here are written by ``make_wheel``: complete wheels (METADATA, WHEEL, RECORD
with hashes, entry points, a ``.data`` script) built in the test, so the cases that need
two versions or a foreign tag need no index. The six wheel is the real one from PyPI.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import json
import os
import subprocess
import zipfile
from pathlib import Path

import pytest

from envforge.errors import ArtifactError
from envforge.host.archives import sha256_file
from envforge.host.fetch import FileRef, download
from envforge.host.interpreters import find_interpreter
from envforge.host.wheelinstall import (
    WheelToInstall,
    accepted_tags,
    check_fits,
    install_wheels,
    target_scheme,
)
from envforge.lockfile import load_lock
from tests.testing.packs import REGISTRY

REPO = Path(__file__).resolve().parents[2]


def make_wheel(folder: Path, name: str, version: str, files: dict[str, str], *,
               tag: str = "py3-none-any", entry_points: str = "",
               scripts: dict[str, str] | None = None, purelib: bool = True) -> Path:
    """A complete wheel: the files, a dist-info with RECORD hashes, optional .data/scripts;
    ``purelib=False``: its root goes to platlib (``Root-Is-Purelib: false``)."""
    dist = f"{name}-{version}"
    info = f"{dist}.dist-info"
    members = dict(files)
    members[f"{info}/METADATA"] = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    members[f"{info}/WHEEL"] = ("Wheel-Version: 1.0\nGenerator: envforge-tests\n"
                                f"Root-Is-Purelib: {str(purelib).lower()}\nTag: {tag}\n")
    if entry_points:
        members[f"{info}/entry_points.txt"] = entry_points
    for script, text in (scripts or {}).items():
        members[f"{dist}.data/scripts/{script}"] = text
    record = io.StringIO(newline="")
    writer = csv.writer(record, lineterminator="\n")  # a name with a comma is quoted
    for member, text in members.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=")
        writer.writerow([member, f"sha256={digest.decode()}", len(text.encode())])
    writer.writerow([f"{info}/RECORD", "", ""])
    members[f"{info}/RECORD"] = record.getvalue()
    path = folder / f"{dist}-{tag}.whl"
    with zipfile.ZipFile(path, "w") as archive:
        for member, text in members.items():
            archive.writestr(member, text)
    return path


def wheel(path: Path) -> WheelToInstall:
    return WheelToInstall(path, sha256_file(path))


@pytest.fixture(scope="module")
def python37() -> Path:
    return find_interpreter("3.7", environ=dict(os.environ)).executable


@pytest.fixture
def venv37(python37: Path, tmp_path: Path) -> Path:
    """A fresh Python 3.7 venv without pip: nothing in it could install a wheel by itself."""
    prefix = tmp_path / "venv"
    subprocess.run([str(python37), "-m", "venv", "--without-pip", str(prefix)], check=True)
    return prefix / "bin" / "python"


def run(python: Path, code: str) -> str:
    return subprocess.run([str(python), "-c", code], check=True, capture_output=True,
                          text=True).stdout.strip()


@pytest.mark.posix_only("the Python 3.7 here is pyenv's Linux build (no Windows 3.7 is reachable)")
def test_scheme_comes_from_the_target_interpreter(venv37: Path) -> None:
    scheme = target_scheme(venv37)
    prefix = venv37.parent.parent
    assert scheme.version == (3, 7)
    assert scheme.purelib == prefix / "lib" / "python3.7" / "site-packages"
    assert scheme.scripts == prefix / "bin"
    assert scheme.headers == prefix / "include" / "site" / "python3.7"


@pytest.mark.posix_only("the Python 3.7 here is pyenv's Linux build (no Windows 3.7 is reachable)")
def test_a_second_venv_of_the_same_python_takes_the_kept_scheme(venv37: Path, python37: Path,
                                                                tmp_path: Path) -> None:
    memo = tmp_path / "schemes"
    first = target_scheme(venv37, memo=memo)
    assert first == target_scheme(venv37)
    (record,) = memo.iterdir()
    other = tmp_path / "other venv"
    subprocess.run([str(python37), "-m", "venv", "--without-pip", str(other)], check=True)
    python = other / "bin" / "python"
    record.write_text(record.read_text().replace('"bin"', '"bin-kept"'))  # seen if taken
    kept = target_scheme(python, memo=memo)
    assert kept.scripts == other / "bin-kept"
    record.unlink()
    assert target_scheme(python, memo=memo) == target_scheme(python)  # asked again, the same


@pytest.mark.posix_only("the Python 3.7 here is pyenv's Linux build (no Windows 3.7 is reachable)")
@pytest.mark.parametrize("folder", ["../elsewhere", "/tmp/elsewhere", "lib/../../up"])
def test_a_kept_scheme_leaving_the_prefix_is_not_taken(venv37: Path, tmp_path: Path,
                                                       folder: str) -> None:
    memo = tmp_path / "schemes"
    asked = target_scheme(venv37, memo=memo)
    (record,) = memo.iterdir()
    record.write_text(record.read_text().replace('"bin"', json.dumps(folder)))
    assert target_scheme(venv37, memo=memo) == asked  # asked again
    assert '"scripts": "bin"' in record.read_text()  # and kept anew


@pytest.mark.posix_only("the Python 3.7 here is pyenv's Linux build (no Windows 3.7 is reachable)")
def test_no_scheme_is_kept_for_an_interpreter_outside_a_venv(python37: Path,
                                                             tmp_path: Path) -> None:
    target_scheme(python37, memo=tmp_path / "schemes")
    assert not (tmp_path / "schemes").exists()


@pytest.mark.posix_only("the Python 3.7 here is pyenv's Linux build (no Windows 3.7 is reachable)")
def test_installs_module_entry_point_and_script(venv37: Path, tmp_path: Path) -> None:
    module = "import sys\ndef main():\n    print('hi from', sys.version_info[:2])\n"
    built = make_wheel(tmp_path, "hello_ef", "1.0", {"hello_ef/__init__.py": module},
                       entry_points="[console_scripts]\nhello-ef = hello_ef:main\n",
                       scripts={"hello-raw": "#!python\nimport hello_ef\nhello_ef.main()\n"})

    assert install_wheels([wheel(built)], venv37) == ["hello-ef==1.0"]

    prefix = venv37.parent.parent
    assert run(venv37, "import hello_ef; print(hello_ef.__file__)").startswith(str(prefix))
    for script in ("hello-ef", "hello-raw"):
        path = prefix / "bin" / script
        assert path.read_text().splitlines()[0] == f"#!{venv37}"
        out = subprocess.run([str(path)], check=True, capture_output=True, text=True).stdout
        assert out.strip() == "hi from (3, 7)"
    dist_info = prefix / "lib/python3.7/site-packages/hello_ef-1.0.dist-info"
    assert (dist_info / "INSTALLER").read_bytes() == b"envforge"
    assert "hello_ef/__init__.py" in (dist_info / "RECORD").read_text()


@pytest.mark.posix_only("the Python 3.7 here is pyenv's Linux build (no Windows 3.7 is reachable)")
def test_a_new_version_replaces_the_old_one_file_by_file(venv37: Path, tmp_path: Path) -> None:
    v1 = make_wheel(tmp_path, "multi", "1.0", {"multi/__init__.py": "V = 1\n",
                                               "multi/gone.py": "X = 1\n"})
    v2 = make_wheel(tmp_path, "multi", "2.0", {"multi/__init__.py": "V = 2\n"})
    install_wheels([wheel(v1)], venv37)
    run(venv37, "import multi.gone")  # leaves __pycache__ behind, as real use does
    install_wheels([wheel(v2)], venv37)

    site = venv37.parent.parent / "lib/python3.7/site-packages"
    assert run(venv37, "import multi; print(multi.V)") == "2"
    assert not (site / "multi" / "gone.py").exists()
    assert not list((site / "multi").glob("__pycache__/gone.*"))
    assert sorted(p.name for p in site.glob("multi-*.dist-info")) == ["multi-2.0.dist-info"]


@pytest.mark.posix_only("the Python 3.7 here is pyenv's Linux build (no Windows 3.7 is reachable)")
@pytest.mark.parametrize("cached", [False, True], ids=["from-zip", "unpacked-cache"])
def test_a_tampered_wheel_refuses_the_whole_batch(venv37: Path, tmp_path: Path,
                                                  cached: bool) -> None:
    good = make_wheel(tmp_path, "good_one", "1.0", {"good_one.py": "OK = True\n"})
    bad = make_wheel(tmp_path, "bad_one", "1.0", {"bad_one.py": "OK = True\n"})
    expected = sha256_file(bad)
    with bad.open("ab") as fh:
        fh.write(b"\0")

    with pytest.raises(ArtifactError, match=r"bad_one-1\.0-py3-none-any\.whl: sha256 .*"):
        install_wheels([wheel(good), WheelToInstall(bad, expected)], venv37,
                       cache=tmp_path / "cache" if cached else None)
    site = venv37.parent.parent / "lib/python3.7/site-packages"
    assert not list(site.iterdir())  # checked before the first wheel went in
    assert not list((tmp_path / "cache").rglob("bad_one.py"))


@pytest.mark.posix_only("the Python 3.7 here is pyenv's Linux build (no Windows 3.7 is reachable)")
def test_a_wheel_for_another_python_is_refused(venv37: Path, tmp_path: Path) -> None:
    cp311 = make_wheel(tmp_path, "native", "1.0", {"native.py": ""},
                       tag="cp311-cp311-manylinux_2_17_x86_64")
    with pytest.raises(ArtifactError, match=r"cp311-cp311, which Python 3\.7 cannot use"):
        install_wheels([wheel(cp311)], venv37)


def test_accepted_tags_follow_the_abi_rules() -> None:
    assert ("cp37", "cp37m") in accepted_tags((3, 7))
    assert ("cp311", "cp311") in accepted_tags((3, 11))
    assert ("cp37", "abi3") in accepted_tags((3, 11))
    assert ("py2.py3", "none") not in accepted_tags((3, 7))  # compressed sets are split first
    assert check_fits(Path("six-1.16.0-py2.py3-none-any.whl"), (3, 7)) == ("six", "1.16.0")
    with pytest.raises(ArtifactError):
        check_fits(Path("numpy-1.23.5-cp311-cp311-manylinux2014_x86_64.whl"), (3, 7))


@pytest.mark.network
def test_real_six_wheel_from_pypi_imports_in_python37(venv37: Path, tmp_path: Path) -> None:
    locked = next(f for f in load_lock(REPO / "locks/theano-cpu.lock",
                                       REGISTRY).platforms["linux-64"].pypi
                  if f.name == "six")
    target = tmp_path / locked.filename
    download(FileRef(locked.url, locked.sha256, locked.filename, locked.size), target)

    assert install_wheels([WheelToInstall(target, locked.sha256)], venv37) == ["six==1.16.0"]
    assert run(venv37, "import six, sys; print(six.__version__, sys.version_info[:2])") \
        == "1.16.0 (3, 7)"
