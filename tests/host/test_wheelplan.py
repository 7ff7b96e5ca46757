"""RECORD from a cache entry's plan against installer's own, byte for byte: both installs
go to the same prefix in turn, so the entry-point scripts' rows (their hash covers the
shebang, which names the prefix) are compared too, with names that need csv quoting and rows
that installer's stable sort puts side by side (real Python 3.7 venvs)."""

from __future__ import annotations

import json
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

from envforge.errors import ArtifactError
from envforge.host.archives import sha256_file
from envforge.host.unpacked import entry_path, unpacked_wheel
from envforge.host.wheelinstall import WheelToInstall, install_wheels
from tests.host.test_unpacked import MODULE, python37
from tests.host.test_wheelinstall import make_wheel, run

pytestmark = pytest.mark.posix_only("the Python 3.7 here is pyenv's Linux build")

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
    linked = {name for name, (_, _, links) in trees[1].items() if links > 1}
    assert linked  # the members, not what install writes
    return tuple({name: (data, mode & 0o111 if name in linked else mode)
                  for name, (data, mode, _) in tree.items()} for tree in trees)


def test_record_rows_sort_and_quote_as_installer_s(python37: Path, tmp_path: Path) -> None:
    dist = "tie_ef-1.0"
    built = make_wheel(
        tmp_path, "tie_ef", "1.0",
        {"tie_ef/__init__.py": MODULE, "tie_ef/a,b.txt": "comma\n", 'tie_ef/q"uote.txt': "q\n",
         "tie-ef": "a root file named as the console script\n",
         "tie-gui": "and as the GUI one\n",
         f"{dist}.dist-info/INSTALLER": "shipped by the wheel\n",  # installer's replaces it
         f"{dist}.data/purelib/tie_ef/extra.py": "E = 1\n",
         f"{dist}.data/data/share/tie_ef/z,notes.txt": "notes\n"},
        entry_points="[console_scripts]\ntie-ef = tie_ef:main\nb-first = tie_ef:main\n"
                     "[gui_scripts]\ntie-gui = tie_ef:main\n",
        scripts={"tie-raw": "#!python\nimport tie_ef\ntie_ef.main()\n"},
        purelib=False)
    wheel = WheelToInstall(built, sha256_file(built))

    from_zip, from_cache = _install_both_ways(python37, tmp_path, wheel)

    assert from_cache == from_zip
    record = from_cache["lib/python3.7/site-packages/tie_ef-1.0.dist-info/RECORD"][0].decode()
    assert '"tie_ef/a,b.txt"' in record and '"tie_ef/q""uote.txt"' in record
    assert record.index("../../../bin/tie-ef,") < record.index("\ntie-ef,")
    assert from_cache["lib/python3.7/site-packages/tie_ef-1.0.dist-info/INSTALLER"][0] == \
        b"envforge"


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
