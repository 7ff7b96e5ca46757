"""The unpacked cache: an entry made once from a checked wheel (or a .deb: its data.tar and
its files), installed from by hard links (a copy where a link cannot be made), and an altered
entry detected and made again, never installed from (real Python 3.7 venvs, real dpkg-deb
packages)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import subprocess
import warnings
from collections import Counter
from pathlib import Path

import pytest

from envforge.errors import ArtifactError
from envforge.host.archives import sha256_file
from envforge.host.debunpack import unpack_deb
from envforge.host.filelink import clone_file, link_file
from envforge.host.interpreters import find_interpreter
from envforge.host.unpacked import entry_path, unpacked_deb, unpacked_wheel
from envforge.host.wheelinstall import WheelToInstall, install_wheels, install_wheels_into
from tests.host.test_debunpack import build_deb, needs_dpkg_deb
from tests.host.test_wheelinstall import make_wheel, run

pytestmark = pytest.mark.posix_only("the Python 3.7 here is pyenv's Linux build")

@pytest.fixture(scope="module")
def python37() -> Path:
    return find_interpreter("3.7", environ=dict(os.environ)).executable


MODULE = "import sys\ndef main():\n    print('hi from', sys.version_info[:2])\n"


def _wheel(folder: Path) -> WheelToInstall:
    built = make_wheel(folder, "hello_ef", "1.0",
                       {"hello_ef/__init__.py": MODULE, "hello_ef/data/table.txt": "a b\n"},
                       entry_points="[console_scripts]\nhello-ef = hello_ef:main\n",
                       scripts={"hello-raw": "#!python\nimport hello_ef\nhello_ef.main()\n"})
    return WheelToInstall(built, sha256_file(built))


def _venv(python37: Path, prefix: Path) -> Path:
    subprocess.run([str(python37), "-m", "venv", "--without-pip", str(prefix)], check=True)
    return prefix / "bin" / "python"


def _tree(prefix: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under the prefix's site-packages and bin: bytes (prefix spelled P) and its
    execute bits (a linked file is read-only, as its cache entry is)."""
    found = {}
    for top in ("lib", "bin"):
        for path in sorted((prefix / top).rglob("*")):
            if path.is_file() and not path.is_symlink():
                data = path.read_bytes().replace(str(prefix).encode(), b"P")
                if path.name == "RECORD":  # a script's hash covers its shebang: the prefix
                    data = b"\n".join(line for line in data.split(b"\n")
                                       if not line.startswith(b"../../../bin/"))
                found[str(path.relative_to(prefix))] = (data, path.stat().st_mode & 0o111)
    return found


def test_installing_from_the_cache_writes_what_installer_writes_from_the_zip(
        python37: Path, tmp_path: Path) -> None:
    wheel = _wheel(tmp_path)
    from_zip = _venv(python37, tmp_path / "a" / "env")
    from_cache = _venv(python37, tmp_path / "b" / "env")

    install_wheels([wheel], from_zip)
    assert install_wheels([wheel], from_cache, cache=tmp_path / "cache") == ["hello-ef==1.0"]

    assert _tree(tmp_path / "a" / "env") == _tree(tmp_path / "b" / "env")  # RECORD included
    script = tmp_path / "b" / "env" / "bin" / "hello-raw"
    assert script.read_text().splitlines()[0] == f"#!{from_cache}"
    out = subprocess.run([str(script)], check=True, capture_output=True, text=True).stdout
    assert out.strip() == "hi from (3, 7)"


def test_every_scheme_and_section_lands_where_installer_puts_it(
        python37: Path, tmp_path: Path) -> None:
    """The entry's own install (no installer ``install()``) against installer's from the zip:
    a platlib root, ``.data`` members for each scheme, console and GUI scripts, a member in
    ``__pycache__`` (skipped, as installer skips it), byte for byte, RECORD included."""
    dist = "every_ef-2.0"
    built = make_wheel(
        tmp_path, "every_ef", "2.0",
        {"every_ef/__init__.py": MODULE, "every_ef/__pycache__/stale.cpython-37.pyc": "x",
         f"{dist}.data/purelib/every_pure.py": "P = 1\n",
         f"{dist}.data/platlib/every_plat.py": "Q = 2\n",
         f"{dist}.data/data/share/every_ef/notes.txt": "notes\n",
         f"{dist}.data/headers/every.h": "#define EVERY 1\n"},
        entry_points="[console_scripts]\nevery-ef = every_ef:main\n"
                     "[gui_scripts]\nevery-gui = every_ef:main\n",
        scripts={"every-raw": "#!python\nimport every_ef\nevery_ef.main()\n"},
        purelib=False)
    wheel = WheelToInstall(built, sha256_file(built))
    from_zip = _venv(python37, tmp_path / "a" / "env")
    from_cache = _venv(python37, tmp_path / "b" / "env")

    with pytest.warns(RuntimeWarning, match="__pycache__"):
        install_wheels([wheel], from_zip)
    with pytest.warns(RuntimeWarning, match="__pycache__"):
        assert install_wheels([wheel], from_cache, cache=tmp_path / "cache") == \
            ["every-ef==2.0"]
    skipped: Counter[str] = Counter()
    again = _venv(python37, tmp_path / "c" / "env")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # counted for the step's one line, not warned
        install_wheels([wheel], again, cache=tmp_path / "cache", skipped=skipped)
    assert skipped == {"every_ef": 1}

    trees = []
    for prefix in (tmp_path / "a" / "env", tmp_path / "b" / "env"):
        tree = _tree(prefix)
        for top in ("share", "include"):
            tree.update({str(p.relative_to(prefix)): (p.read_bytes(), 0)
                         for p in sorted((prefix / top).rglob("*")) if p.is_file()})
        trees.append(tree)
    assert trees[0] == trees[1]
    assert "share/every_ef/notes.txt" in trees[1]
    assert "include/site/python3.7/every-ef/every.h" in trees[1]
    assert {"bin/every-ef", "bin/every-gui", "bin/every-raw"} <= set(trees[1])
    assert not [name for name in trees[1] if "stale" in name]
    assert run(from_cache, "import every_pure, every_plat; print(every_pure.P + every_plat.Q)") \
        == "3"


def test_an_entry_is_made_once_read_only_and_reused(python37: Path, tmp_path: Path) -> None:
    wheel = _wheel(tmp_path)
    cache = tmp_path / "cache"
    first = unpacked_wheel(cache, wheel.path, wheel.sha256)
    source = first.root / "hello_ef" / "__init__.py"
    assert stat.S_IMODE(source.stat().st_mode) == 0o444
    inode = source.stat().st_ino

    again = unpacked_wheel(cache, wheel.path, wheel.sha256)

    assert again == first and source.stat().st_ino == inode
    assert [p.name for p in entry_path(cache, wheel.sha256).parent.iterdir()] == [wheel.sha256]


def _corrupt_by_flipping_a_byte(path: Path) -> None:
    path.chmod(0o644)
    with open(path, "r+b") as handle:  # in place, as a write through a hard link would
        first = handle.read(1)
        handle.seek(0)
        handle.write(bytes([first[0] ^ 0x20]))


@pytest.mark.parametrize("damage", ["flip", "remove", "manifest"])
def test_an_altered_entry_is_made_again_and_never_installed(
        python37: Path, tmp_path: Path, damage: str) -> None:
    wheel = _wheel(tmp_path)
    cache = tmp_path / "cache"
    entry = unpacked_wheel(cache, wheel.path, wheel.sha256)
    module = entry.root / "hello_ef" / "__init__.py"
    if damage == "flip":
        _corrupt_by_flipping_a_byte(module)
    elif damage == "remove":
        module.unlink()
    else:
        (entry.root.parent / "manifest.json").write_text("{", encoding="utf-8")

    python = _venv(python37, tmp_path / "env")
    install_wheels([wheel], python, cache=cache)

    assert module.read_text() == MODULE  # made again from the wheel
    assert run(python, "import hello_ef; hello_ef.main()") == "hi from (3, 7)"


def _linked_env(python37: Path, tmp_path: Path) -> tuple[WheelToInstall, Path, Path]:
    wheel = _wheel(tmp_path)
    python = _venv(python37, tmp_path / "env")
    install_wheels([wheel], python, cache=tmp_path / "cache")
    return wheel, python, tmp_path / "env" / "lib" / "python3.7" / "site-packages" / "hello_ef"


def test_an_entry_s_files_are_hard_linked_read_only(python37: Path, tmp_path: Path) -> None:
    wheel, python, installed = _linked_env(python37, tmp_path)
    entry = unpacked_wheel(tmp_path / "cache", wheel.path, wheel.sha256)

    for name in ("__init__.py", "data/table.txt"):
        assert (installed / name).stat().st_ino == (entry.root / "hello_ef" / name).stat().st_ino
        assert stat.S_IMODE((installed / name).stat().st_mode) == 0o444
    script = tmp_path / "env" / "bin" / "hello-raw"  # its shebang names the environment
    assert script.stat().st_nlink == 1 and script.stat().st_mode & 0o100
    assert run(python, "import hello_ef; hello_ef.main()") == "hi from (3, 7)"


@pytest.mark.parametrize("edit", ["write", "chmod"])
def test_an_edit_made_in_the_environment_is_seen_and_the_entry_made_again(
        python37: Path, tmp_path: Path, edit: str) -> None:
    """A link shares the entry's bytes: a write in place (an editor keeping the inode, as
    root) reaches the entry, which its next use detects and makes again from the wheel; the
    edited environment keeps the edit."""
    wheel, _, installed = _linked_env(python37, tmp_path)
    if edit == "write":
        with open(installed / "__init__.py", "r+b") as handle:
            handle.write(b"#")
    else:
        (installed / "__init__.py").chmod(0o644)

    entry = unpacked_wheel(tmp_path / "cache", wheel.path, wheel.sha256)
    assert (entry.root / "hello_ef" / "__init__.py").read_text() == MODULE
    assert stat.S_IMODE((entry.root / "hello_ef" / "__init__.py").stat().st_mode) == 0o444
    assert (installed / "__init__.py").stat().st_ino != \
        (entry.root / "hello_ef" / "__init__.py").stat().st_ino
    if edit == "write":
        assert (installed / "__init__.py").read_bytes().startswith(b"#mport sys")

    python = _venv(python37, tmp_path / "env2")  # a new environment gets the wheel's bytes
    install_wheels([wheel], python, cache=tmp_path / "cache")
    assert run(python, "import hello_ef; hello_ef.main()") == "hi from (3, 7)"


def test_removing_a_linked_file_in_the_environment_leaves_the_entry_whole(
        python37: Path, tmp_path: Path) -> None:
    wheel, _, installed = _linked_env(python37, tmp_path)
    (installed / "data" / "table.txt").unlink()  # as a rollback or an uninstall removes it

    entry = unpacked_wheel(tmp_path / "cache", wheel.path, wheel.sha256)
    assert (entry.root / "hello_ef" / "data" / "table.txt").read_text() == "a b\n"


def test_link_file_copies_where_no_link_can_be_made(tmp_path: Path) -> None:
    """Across file systems (EXDEV): /dev/shm is a tmpfs, the tmp folder is not."""
    shm = Path("/dev/shm")
    if not shm.is_dir() or shm.stat().st_dev == tmp_path.stat().st_dev:
        pytest.skip("needs a second file system")
    target = shm / f"envforge-link-{os.getpid()}"
    source = tmp_path / "source"
    source.write_bytes(b"bytes")
    try:
        link_file(str(source), str(target), executable=False)
        assert target.read_bytes() == b"bytes" and source.stat().st_nlink == 1
    finally:
        target.unlink(missing_ok=True)


def test_clone_file_replaces_a_hard_link_instead_of_writing_through_it(tmp_path: Path) -> None:
    source, other, target = tmp_path / "source", tmp_path / "other", tmp_path / "target"
    source.write_bytes(b"new")
    other.write_bytes(b"keep")
    os.link(other, target)

    clone_file(source, target, executable=True)

    assert target.read_bytes() == b"new" and other.read_bytes() == b"keep"
    assert target.stat().st_mode & 0o100


def test_installing_over_a_hard_linked_file_leaves_the_link_target_alone(
        tmp_path: Path) -> None:
    """installer opened an existing file "wb", writing through any hard link to it."""
    wheel = _wheel(tmp_path)
    folder = tmp_path / "target"
    outside = tmp_path / "outside.py"
    outside.write_text("mine\n")
    (folder / "hello_ef").mkdir(parents=True)
    os.link(outside, folder / "hello_ef" / "__init__.py")

    install_wheels_into([wheel], folder, (3, 7))

    assert outside.read_text() == "mine\n"
    assert (folder / "hello_ef" / "__init__.py").read_text() == MODULE


def _demo_deb(folder: Path) -> Path:
    return build_deb(folder, "libdemo1", "1.0-1",
                     files={"usr/lib/libdemo.so.1.0": b"\x7fELF", "usr/bin/demo": b"#!/bin/sh\n",
                            "usr/share/doc/libdemo1/copyright": b"public domain\n"},
                     modes={"usr/bin/demo": 0o755},
                     symlinks={"usr/lib/libdemo.so.1": "libdemo.so.1.0",
                               "usr/bin/demo-abs": "/usr/bin/demo"})


@needs_dpkg_deb
def test_a_deb_s_files_are_hard_linked_from_its_entry(tmp_path: Path) -> None:
    """Regular files are the entry's (same inode, its read-only mode and time, the deb's
    execute bits); folders and symlinks are written as from the archive, and every file
    holds the deb's bytes."""
    demo_deb = _demo_deb(tmp_path)
    cached = unpacked_deb(tmp_path / "cache", demo_deb, sha256_file(demo_deb))
    unpack_deb(demo_deb, tmp_path / "direct")
    result = unpack_deb(demo_deb, tmp_path / "cached", cached=cached)

    root = tmp_path / "cached"
    for name in ("usr/lib/libdemo.so.1.0", "usr/bin/demo", "usr/share/doc/libdemo1/copyright"):
        linked, entry = (root / name).stat(), (cached.files / name).stat()
        assert linked.st_ino == entry.st_ino and linked.st_nlink >= 2, name
        assert linked.st_mtime_ns == entry.st_mtime_ns, name
        assert (root / name).read_bytes() == (tmp_path / "direct" / name).read_bytes(), name
    assert stat.S_IMODE((root / "usr/bin/demo").stat().st_mode) == 0o555
    assert stat.S_IMODE((root / "usr/lib/libdemo.so.1.0").stat().st_mode) == 0o444
    assert (root / "usr/bin/demo-abs").readlink() == Path("../../usr/bin/demo")
    assert (root / "usr/lib/libdemo.so.1").readlink() == Path("libdemo.so.1.0")
    assert {k: v[0] for k, v in _listing(root).items()} == \
        {k: v[0] for k, v in _listing(tmp_path / "direct").items()}
    assert root / "usr/bin/demo" in result.written

    assert unpacked_deb(tmp_path / "cache", demo_deb, sha256_file(demo_deb)) == cached  # kept
    assert (cached.files / "usr/bin/demo").stat().st_ino == (root / "usr/bin/demo").stat().st_ino


@needs_dpkg_deb
def test_a_deb_entry_hashes_none_of_its_files(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Its members have no RECORD to fill: the archive is checked against the lock, the
    entry by stat; the data.tar is not read back to be hashed either."""
    demo_deb = _demo_deb(tmp_path)
    sha256 = sha256_file(demo_deb)
    made = []
    real = hashlib.sha256
    monkeypatch.setattr(hashlib, "sha256", lambda *a: made.append(a) or real(*a))
    cached = unpacked_deb(tmp_path / "cache", demo_deb, sha256, checked=True)
    manifest = json.loads((cached.data_tar.parent.parent / "manifest.json").read_text())
    assert made == [] and set(manifest["sha256"]) == {""}
    assert len(manifest["paths"]) == len(manifest["sha256"]) > 1


@needs_dpkg_deb
@pytest.mark.parametrize("damage", [None, "flip", "flip-data-tar", "remove"])
def test_an_altered_deb_entry_is_made_again_and_never_linked_from(
        tmp_path: Path, damage: str | None) -> None:
    demo_deb = _demo_deb(tmp_path)
    sha256 = sha256_file(demo_deb)
    cache = tmp_path / "cache"
    cached = unpacked_deb(cache, demo_deb, sha256)
    library = cached.files / "usr/lib/libdemo.so.1.0"
    held = tmp_path / "held"  # the first entry's file: its inode is not freed for reuse
    os.link(library, held)
    if damage == "flip":
        _corrupt_by_flipping_a_byte(library)
    elif damage == "flip-data-tar":
        _corrupt_by_flipping_a_byte(cached.data_tar)
    elif damage == "remove":
        library.unlink()

    again = unpacked_deb(cache, demo_deb, sha256)
    unpack_deb(demo_deb, tmp_path / "direct")
    unpack_deb(demo_deb, tmp_path / "cached", cached=again)

    assert {k: v[0] for k, v in _listing(tmp_path / "cached").items()} == \
        {k: v[0] for k, v in _listing(tmp_path / "direct").items()}
    assert stat.S_IMODE(again.data_tar.stat().st_mode) == 0o444
    assert stat.S_IMODE((again.files / "usr/lib/libdemo.so.1.0").stat().st_mode) == 0o444
    linked = (tmp_path / "cached" / "usr/lib/libdemo.so.1.0").stat().st_ino
    assert linked == (again.files / "usr/lib/libdemo.so.1.0").stat().st_ino
    assert (linked == held.stat().st_ino) is (damage is None)  # never from a damaged entry
    if damage == "flip":
        assert library.read_bytes() == b"\x7fELF"  # made again from the deb


@needs_dpkg_deb
def test_a_deb_s_file_is_copied_with_the_deb_s_mode_where_no_link_can_be_made(
        tmp_path: Path) -> None:
    """Across file systems (EXDEV): the cache on /dev/shm, a tmpfs, the tree elsewhere. A copy
    is the tree's own file: it gets the deb's mode and time, as an unpack from the archive."""
    shm = Path("/dev/shm")
    if not shm.is_dir() or shm.stat().st_dev == tmp_path.stat().st_dev:
        pytest.skip("needs a second file system")
    demo_deb = _demo_deb(tmp_path)
    cache = shm / f"envforge-debcache-{os.getpid()}"
    try:
        cached = unpacked_deb(cache, demo_deb, sha256_file(demo_deb))
        unpack_deb(demo_deb, tmp_path / "direct")
        unpack_deb(demo_deb, tmp_path / "cached", cached=cached)

        assert _listing(tmp_path / "cached") == _listing(tmp_path / "direct")  # modes too
        for name in ("usr/bin/demo", "usr/lib/libdemo.so.1.0"):
            copied, direct = (tmp_path / "cached" / name).stat(), \
                (tmp_path / "direct" / name).stat()
            assert copied.st_nlink == 1 and copied.st_mtime == direct.st_mtime, name
        assert stat.S_IMODE((cached.files / "usr/bin/demo").stat().st_mode) == 0o555
    finally:
        shutil.rmtree(cache, ignore_errors=True)


@needs_dpkg_deb
def test_a_link_that_fails_midway_leaves_nothing(tmp_path: Path) -> None:
    """An entry's file gone after its check (another apply discarding it): the unpack stops
    and removes what it wrote, as a failed copy does."""
    demo_deb = _demo_deb(tmp_path)
    cached = unpacked_deb(tmp_path / "cache", demo_deb, sha256_file(demo_deb))
    (cached.files / "usr/share/doc/libdemo1/copyright").unlink()
    root = tmp_path / "root"

    with pytest.raises(ArtifactError, match="No such file or directory; nothing was left"):
        unpack_deb(demo_deb, root, cached=cached)

    assert not root.exists()
    assert (cached.files / "usr/bin/demo").stat().st_nlink == 1


def _listing(root: Path) -> dict[str, tuple[str, int]]:
    return {str(p.relative_to(root)): (
        f"link:{p.readlink()}" if p.is_symlink() else
        "folder" if p.is_dir() else sha256_file(p), stat.S_IMODE(p.lstat().st_mode))
        for p in root.rglob("*")}


def test_a_sha256_that_is_not_hex_never_names_a_folder(tmp_path: Path) -> None:
    wheel = _wheel(tmp_path)
    with pytest.raises(ArtifactError, match="is not 64 lowercase hex digits"):
        unpacked_wheel(tmp_path / "cache", wheel.path, "../" * 3 + "a" * 55)
    assert not (tmp_path / "cache").exists()


def test_a_file_two_wheels_install_is_the_later_one_s(python37: Path, tmp_path: Path) -> None:
    """Links land while installer reads the next wheel; a target queued twice still ends
    with the later wheel's file, as installing one after the other does."""
    wheels = []
    for name in ("first_ef", "second_ef"):
        files = {f"{name}/__init__.py": "", "shared_ef/__init__.py": f"by = {name!r}\n",
                 **{f"shared_ef/m{i}.py": f"by = {name!r}\n" for i in range(300)}}
        (tmp_path / name).mkdir()
        built = make_wheel(tmp_path / name, name, "1.0", files)
        wheels.append(WheelToInstall(built, sha256_file(built)))
    python = _venv(python37, tmp_path / "env")

    assert install_wheels(wheels, python, cache=tmp_path / "cache") == \
        ["first-ef==1.0", "second-ef==1.0"]

    shared = tmp_path / "env" / "lib" / "python3.7" / "site-packages" / "shared_ef"
    assert {p.read_text() for p in shared.glob("*.py")} == {"by = 'second_ef'\n"}
    assert run(python, "import shared_ef, second_ef; print(shared_ef.by)") == "second_ef"
