"""What a wheel built from a locked sdist is held to, on crafted wheels (the seam: a real build
gives only faithful ones): the sdist's name and version, the install scheme, the target's tags.
A compiled wheel passes, though no file of it is a file of its sdist."""

from __future__ import annotations

import io
import tarfile
import zipfile
from pathlib import Path

import pytest

from envforge.bundle.wheelcheck import check_built_wheel
from envforge.errors import ArtifactError
from envforge.lockfile import LockedPypiFile

COMPILED = "demo-1.0-cp37-cp37m-linux_x86_64.whl"


def sdist(path: Path, *, name: str = "demo", version: str = "1.0") -> Path:
    with tarfile.open(path, "w:gz") as tar:
        pkg_info = f"Metadata-Version: 1.1\nName: {name}\nVersion: {version}\n".encode()
        for member, data in (("demo-1.0/PKG-INFO", pkg_info),
                             ("demo-1.0/demo.c", b"int answer(void) { return 42; }\n")):
            info = tarfile.TarInfo(member)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def wheel(path: Path, *, name: str = "demo", version: str = "1.0",
          extra: dict[str, bytes] | None = None) -> Path:
    """A wheel as a compiler leaves it: a shared object no sdist holds."""
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("demo/__init__.py", b"from demo._speedups import answer\n")
        zf.writestr("demo/_speedups.cpython-37m-x86_64-linux-gnu.so", b"\x7fELF compiled")
        zf.writestr("demo-1.0.data/headers/demo.h", b"int answer(void);\n")
        zf.writestr("demo-1.0.dist-info/METADATA",
                    f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode())
        zf.writestr("demo-1.0.dist-info/WHEEL", b"Wheel-Version: 1.0\nRoot-Is-Purelib: false\n")
        for member, data in (extra or {}).items():
            zf.writestr(member, data)
        zf.writestr("demo-1.0.dist-info/RECORD", b"")
    return path


def locked(archive: Path, *, name: str = "demo", version: str = "1.0") -> LockedPypiFile:
    return LockedPypiFile(name=name, version=version, kind="sdist", filename=archive.name,
                          url=f"https://x.invalid/{archive.name}", sha256="0" * 64)


def check(whl: Path, entry: LockedPypiFile, archive: Path | None, *,
          python: str = "3.7.16", platform: str = "linux-64") -> None:
    check_built_wheel(whl, entry, archive, target_python=python,
                      platform=platform)  # type: ignore[arg-type]


def test_a_compiled_wheel_of_its_sdist_passes(tmp_path: Path) -> None:
    archive = sdist(tmp_path / "demo-1.0.tar.gz")
    check(wheel(tmp_path / COMPILED), locked(archive), archive)
    check(wheel(tmp_path / COMPILED), locked(archive), None)  # a bundle: no sdist at hand
    # PEP 503/440 spellings of one name and version are one: Demo_pkg 1.0.0 is demo-pkg 1.0
    other = sdist(tmp_path / "Demo_pkg-1.0.0.tar.gz", name="Demo_pkg", version="1.0.0")
    check(wheel(tmp_path / COMPILED, name="demo-pkg", version="1.0"),
          locked(other, name="demo.pkg", version="1.0.0"), other)


@pytest.mark.parametrize(("name", "version"), [("evil", "1.0"), ("demo", "1.1")])
def test_a_wheel_naming_another_distribution_or_version_is_refused(
        tmp_path: Path, name: str, version: str) -> None:
    archive = sdist(tmp_path / "demo-1.0.tar.gz")
    for at_hand in (archive, None):
        with pytest.raises(ArtifactError, match=rf"METADATA names {name} {version}, not demo "
                                                r"1\.0 of demo-1\.0\.tar\.gz"):
            check(wheel(tmp_path / COMPILED, name=name, version=version), locked(archive),
                  at_hand)


def zip_sdist(path: Path, *, version: str = "1.0") -> Path:
    """An sdist as setuptools' ``--formats=zip`` made them (networkx 2.2's only sdist)."""
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("demo-1.0/PKG-INFO", f"Metadata-Version: 1.1\nName: demo\nVersion: {version}\n")
        zf.writestr("demo-1.0/demo.c", b"int answer(void) { return 42; }\n")
    return path


def test_an_sdist_whose_pkg_info_is_not_the_locked_one_is_refused(tmp_path: Path) -> None:
    archive = sdist(tmp_path / "demo-1.0.tar.gz", version="2.0")
    with pytest.raises(ArtifactError, match=r"PKG-INFO does not name demo 1\.0"):
        check(wheel(tmp_path / COMPILED), locked(archive), archive)
    other = zip_sdist(tmp_path / "demo-1.0.zip", version="2.0")
    with pytest.raises(ArtifactError, match=r"PKG-INFO does not name demo 1\.0"):
        check(wheel(tmp_path / COMPILED), locked(other), other)


def test_a_zip_sdist_is_read_as_a_tarball_is(tmp_path: Path) -> None:
    archive = zip_sdist(tmp_path / "demo-1.0.zip")
    check(wheel(tmp_path / COMPILED), locked(archive), archive)
    (tmp_path / "junk-1.0.zip").write_bytes(b"neither tar nor zip")
    with pytest.raises(ArtifactError, match=r"junk-1\.0\.zip: cannot read the sdist"):
        check(wheel(tmp_path / COMPILED), locked(archive), tmp_path / "junk-1.0.zip")


def tarball(path: Path, members: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for member, data in members.items():
            info = tarfile.TarInfo(member)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_an_sdist_with_only_an_egg_info_is_held_to_it(tmp_path: Path) -> None:
    """dill 0.2.9's sdist (made by hand) carries ``dill.egg-info/PKG-INFO`` and no top-level
    one: init widened its day for it, as if it did not build."""
    for version, passes in (("1.0", True), ("2.0", False)):
        archive = tarball(tmp_path / f"demo-{version}.tar.gz", {
            "demo-1.0/setup.py": b"",
            "demo-1.0/demo.egg-info/PKG-INFO":
                f"Metadata-Version: 1.1\nName: demo\nVersion: {version}\n".encode()})
        if passes:
            check(wheel(tmp_path / COMPILED), locked(archive), archive)
        else:
            with pytest.raises(ArtifactError, match=r"PKG-INFO does not name demo 1\.0"):
                check(wheel(tmp_path / COMPILED), locked(archive), archive)


def test_an_sdist_with_no_metadata_is_held_to_the_lock_entry(tmp_path: Path) -> None:
    archive = tarball(tmp_path / "demo-1.0.tar.gz", {"demo-1.0/setup.py": b""})
    check(wheel(tmp_path / COMPILED), locked(archive), archive)
    with pytest.raises(ArtifactError, match=r"METADATA names demo 1\.1, not demo 1\.0"):
        check(wheel(tmp_path / COMPILED, version="1.1"), locked(archive), archive)


@pytest.mark.parametrize(("member", "why"), [
    ("demo-1.0.data/etc/passwd", "outside the install scheme"),
    ("../../outside.py", "refusing to unpack member"),
    ("/etc/cron.d/x", "refusing to unpack member"),
    ("other-2.0.dist-info/METADATA", "not one .dist-info"),
])
def test_a_wheel_with_a_member_outside_the_scheme_is_refused(
        tmp_path: Path, member: str, why: str) -> None:
    archive = sdist(tmp_path / "demo-1.0.tar.gz")
    with pytest.raises(ArtifactError, match=why):
        check(wheel(tmp_path / COMPILED, extra={member: b"x"}), locked(archive), archive)


@pytest.mark.parametrize(("filename", "python", "platform", "why"), [
    ("demo-1.0-cp38-cp38-linux_x86_64.whl", "3.7.16", "linux-64", "Python 3.7 cannot use"),
    (COMPILED, "3.8.10", "linux-64", "Python 3.8 cannot use"),
    ("demo-1.0-cp37-cp37m-win_amd64.whl", "3.7.16", "linux-64", "built for win_amd64, not "
                                                                "linux-64"),
    (COMPILED, "3.7.16", "win-64", "built for linux_x86_64, not win-64"),
])
def test_a_wheel_the_target_cannot_use_is_refused(tmp_path: Path, filename: str, python: str,
                                                  platform: str, why: str) -> None:
    archive = sdist(tmp_path / "demo-1.0.tar.gz")
    with pytest.raises(ArtifactError, match=why):
        check(wheel(tmp_path / filename), locked(archive), archive, python=python,
              platform=platform)


def test_a_manylinux_or_pure_wheel_fits_linux(tmp_path: Path) -> None:
    archive = sdist(tmp_path / "demo-1.0.tar.gz")
    for filename in ("demo-1.0-cp37-cp37m-manylinux2014_x86_64.whl", "demo-1.0-py3-none-any.whl"):
        check(wheel(tmp_path / filename), locked(archive), archive)


def test_a_wheel_replaced_after_it_passed_is_checked_again(tmp_path: Path) -> None:
    """apply checks a built wheel twice (preflight, install); the second is skipped only while
    the wheel and its sdist are the files that passed."""
    archive = sdist(tmp_path / "demo-1.0.tar.gz")
    whl = wheel(tmp_path / COMPILED)
    check(whl, locked(archive), archive)
    check(whl, locked(archive), archive)
    other = wheel(tmp_path / "other.whl", name="other")
    other.replace(whl)  # a new inode under the same name
    with pytest.raises(ArtifactError, match=r"names other 1\.0"):
        check(whl, locked(archive), archive)
    whl.unlink()
    with pytest.raises(ArtifactError, match="not a readable wheel"):
        check(whl, locked(archive), archive)
