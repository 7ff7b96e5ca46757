"""RECORD from a cache entry's plan against installer's own, byte for byte: both installs
go to the same prefix in turn, so the entry-point scripts' rows (their hash covers the
shebang, which names the prefix) are compared too, with names that need csv quoting and rows
that installer's stable sort puts side by side (real Python 3.7 venvs)."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from installer import install
from installer.sources import WheelFile

from envforge.errors import ArtifactError
from envforge.host.archives import sha256_file
from envforge.host.unpacked import entry_path, unpacked_wheel
from envforge.host.wheelinstall import (  # no target Python: the install's own parts
    INSTALLER_NAME,
    WheelToInstall,
    _Destination,
    _install_entry,
    _Linker,
    _script_kind,
    install_wheels,
)
from envforge.platforms import Os, host_platform
from tests.host.test_unpacked import MODULE, python37
from tests.host.test_wheelinstall import make_wheel, run

POSIX_37 = pytest.mark.posix_only("the Python 3.7 here is pyenv's Linux build")

__all__ = ["python37"]  # the fixture


def _snapshot(prefix: Path) -> dict[str, tuple[bytes, int, int]]:
    return {str(p.relative_to(prefix)): (p.read_bytes(), p.stat().st_mode & 0o7777,
                                         p.stat().st_nlink)
            for top in ("lib", "bin", "share", "include") if (prefix / top).exists()
            for p in sorted((prefix / top).rglob("*")) if p.is_file() and not p.is_symlink()}


def _install_both_ways(python37: Path, tmp_path: Path,
                       wheel: WheelToInstall) -> tuple[dict[str, tuple[bytes, int]], ...]:
    """Each file's bytes and mode; a member linked from the entry has the entry's mode
    (read-only), so only its execute bits are compared."""
    prefix = tmp_path / "env"
    trees = []
    for cache in (None, tmp_path / "cache"):
        shutil.rmtree(prefix, ignore_errors=True)
        subprocess.run([str(python37), "-m", "venv", "--without-pip", str(prefix)], check=True)
        install_wheels([wheel], prefix / "bin" / "python", cache=cache)
        trees.append(_snapshot(prefix))
    return _comparable(trees)


def _comparable(trees: list[dict[str, tuple[bytes, int, int]]]) -> tuple[
        dict[str, tuple[bytes, int]], ...]:
    linked = {name for name, (_, _, links) in trees[1].items() if links > 1}
    return tuple({name: (data, mode & 0o111 if name in linked else mode)
                  for name, (data, mode, _) in tree.items()} for tree in trees)


def test_this_host_s_launchers_and_scheme_prefixes_match_installer_s(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No target interpreter: the same scheme folders, installer's ``install()`` from the zip
    then the entry's plan, on this host's launcher kind (``.exe`` ones on Windows, whose
    RECORD names folders outside the root scheme by absolute path). A Windows launcher ends
    in a zip that installer writes with the clock's time (a tick is two seconds): one clock
    for both installs, which the Windows lane once saw a tick apart under load."""
    clock = time.time()
    monkeypatch.setattr(time, "time", lambda: clock)
    wheel = _tricky_wheel(tmp_path)
    folder = tmp_path / "target"
    schemes = {name: str(folder / name) for name in ("purelib", "platlib", "scripts",
                                                     "data", "headers")}
    trees = []
    for cache in (None, tmp_path / "cache"):
        shutil.rmtree(folder, ignore_errors=True)
        with ThreadPoolExecutor(2) as pool:
            linker = _Linker(pool, 2)
            destination = _Destination(schemes, interpreter=str(folder / "python"),
                                       script_kind=_script_kind(), overwrite_existing=True,
                                       linker=linker)
            if cache is None:
                with WheelFile.open(wheel.path) as source:
                    install(source, destination, {"INSTALLER": INSTALLER_NAME})
            else:
                entry = unpacked_wheel(cache, wheel.path, wheel.sha256)
                _install_entry(entry, wheel.path, destination)
            linker.finish()
        trees.append({str(p.relative_to(folder)): (p.read_bytes(), p.stat().st_mode & 0o7777,
                                                   p.stat().st_nlink)
                      for p in sorted(folder.rglob("*")) if p.is_file()})

    from_zip, from_cache = _comparable(trees)
    assert from_cache == from_zip
    record = from_cache[str(Path("platlib", "tie_ef-1.0.dist-info", "RECORD"))][0].decode()
    assert '"tie_ef/a,b.txt"' in record and "tie-ef" in record


def _tricky_wheel(folder: Path) -> WheelToInstall:
    """Names csv quotes, root files named as scripts, a shipped INSTALLER, ``.data``."""
    dist = "tie_ef-1.0"
    quotable = host_platform().os is not Os.WINDOWS  # " is in no Windows file name
    quote = {'tie_ef/q"uote.txt': "q\n"} if quotable else {}
    built = make_wheel(
        folder, "tie_ef", "1.0",
        {"tie_ef/__init__.py": MODULE, "tie_ef/a,b.txt": "comma\n", **quote,
         "tie-ef": "a root file named as the console script\n",
         "tie-gui": "and as the GUI one\n",
         f"{dist}.dist-info/INSTALLER": "shipped by the wheel\n",  # installer's replaces it
         f"{dist}.data/purelib/tie_ef/extra.py": "E = 1\n",
         f"{dist}.data/data/share/tie_ef/z,notes.txt": "notes\n"},
        entry_points="[console_scripts]\ntie-ef = tie_ef:main\nb-first = tie_ef:main\n"
                     "[gui_scripts]\ntie-gui = tie_ef:main\n",
        scripts={"tie-raw": "#!python\nimport tie_ef\ntie_ef.main()\n"},
        purelib=False)
    return WheelToInstall(built, sha256_file(built))


@POSIX_37
def test_record_rows_sort_and_quote_as_installer_s(python37: Path, tmp_path: Path) -> None:
    from_zip, from_cache = _install_both_ways(python37, tmp_path, _tricky_wheel(tmp_path))

    assert from_cache == from_zip
    record = from_cache["lib/python3.7/site-packages/tie_ef-1.0.dist-info/RECORD"][0].decode()
    assert '"tie_ef/a,b.txt"' in record and '"tie_ef/q""uote.txt"' in record
    assert record.index("../../../bin/tie-ef,") < record.index("\ntie-ef,")
    assert from_cache["lib/python3.7/site-packages/tie_ef-1.0.dist-info/INSTALLER"][0] == \
        b"envforge"


@POSIX_37
def test_an_entry_made_before_plans_were_kept_is_made_again(
        python37: Path, tmp_path: Path) -> None:
    built = make_wheel(tmp_path, "old_ef", "1.0", {"old_ef/__init__.py": MODULE},
                       entry_points="[console_scripts]\nold-ef = old_ef:main\n")
    wheel = WheelToInstall(built, sha256_file(built))
    cache = tmp_path / "cache"
    manifest = entry_path(cache, wheel.sha256) / "manifest.json"
    unpacked_wheel(cache, wheel.path, wheel.sha256)
    old = json.loads(manifest.read_text(encoding="utf-8"))
    del old["wheel"]
    manifest.write_text(json.dumps(old), encoding="utf-8")

    from_zip, from_cache = _install_both_ways(python37, tmp_path, wheel)

    assert from_cache == from_zip
    assert "wheel" in json.loads(manifest.read_text(encoding="utf-8"))
    assert run(tmp_path / "env" / "bin" / "python", "import old_ef; old_ef.main()") == \
        "hi from (3, 7)"


def test_a_wheel_without_a_wheel_file_is_refused_and_no_entry_is_made(tmp_path: Path) -> None:
    built = tmp_path / "bare_ef-1.0-py3-none-any.whl"
    with zipfile.ZipFile(built, "w") as archive:
        archive.writestr("bare_ef/__init__.py", "")
        archive.writestr("bare_ef-1.0.dist-info/METADATA", "Name: bare_ef\nVersion: 1.0\n")
    cache = tmp_path / "cache"

    with pytest.raises(ArtifactError, match=r"no WHEEL file in bare_ef-1\.0\.dist-info"):
        unpacked_wheel(cache, built, sha256_file(built))
    assert not entry_path(cache, sha256_file(built)).exists()
