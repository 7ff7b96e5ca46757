"""Tampered bundles: a real bundle of the CPU lock, mutated one way per case, each refused by
``apply --bundle`` with exit 2 and one line, nothing written to the environment or the state.

The bundle is built once (network: PyPI and Debian's archive; Theano-PyMC's wheel is built
from its sdist, its sha256 in the manifest). Each case works on a hard-linked copy and
replaces the files it changes, so the original stays intact. Where a mutation also fixes the
manifest (hash and size), only the lock can catch it, or for the built wheel, which the lock
cannot hash, its checks against the sdist (name, version, install scheme): that is the point
of those cases. A built wheel edited inside those bounds with its manifest fixed to match is
beyond what an unsigned bundle can show (issue 25: the manifest is its hash's anchor).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import zipfile
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from envforge.cli import main

REPO = Path(__file__).resolve().parent.parent.parent
Mutation = Callable[[Path], None]


def _manifest(bundle: Path) -> dict:
    return json.loads((bundle / "manifest.json").read_text())


def _write_manifest(bundle: Path, data: dict) -> None:
    (bundle / "manifest.json").unlink()
    (bundle / "manifest.json").write_text(json.dumps(data, indent=2))


def _replace_file(bundle: Path, relative: str, data: bytes, *, fix_manifest: bool) -> None:
    path = bundle / relative
    path.unlink()
    path.write_bytes(data)
    if fix_manifest:
        manifest = _manifest(bundle)
        for entry in manifest["files"]:
            if entry["path"] == relative:
                entry["sha256"] = hashlib.sha256(data).hexdigest()
                entry["size"] = len(data)
        _write_manifest(bundle, manifest)


def _built_wheel(bundle: Path) -> str:
    return next(f["path"] for f in _manifest(bundle)["files"] if f["role"] == "built-wheel")


def _edit_wheel(edit: Callable[[str, bytes], bytes | None],
                extra: dict[str, bytes] | None = None, *, fix_manifest: bool = True) -> Mutation:
    def mutate(bundle: Path) -> None:
        relative = _built_wheel(bundle)
        out = Path(str(bundle / relative) + ".new")
        with zipfile.ZipFile(bundle / relative) as src, zipfile.ZipFile(out, "w") as dst:
            for info in src.infolist():
                data = edit(info.filename, src.read(info))
                if data is not None:
                    dst.writestr(info, data)
            for name, data in (extra or {}).items():
                dst.writestr(name, data)
        data = out.read_bytes()
        out.unlink()
        _replace_file(bundle, relative, data, fix_manifest=fix_manifest)
    return mutate


def _manifest_edit(edit: Callable[[dict], None]) -> Mutation:
    def mutate(bundle: Path) -> None:
        data = _manifest(bundle)
        edit(data)
        _write_manifest(bundle, data)
    return mutate


def _lock_edit(old: str, new: str, *, fix_manifest: bool = True) -> Mutation:
    def mutate(bundle: Path) -> None:
        lock = bundle / "locks" / "theano-cpu.lock"
        text = lock.read_text()
        assert re.search(old, text), old
        data = re.sub(old, new, text, count=1).encode()
        lock.unlink()
        lock.write_bytes(data)
        if fix_manifest:
            manifest = _manifest(bundle)
            manifest["lock_sha256"] = hashlib.sha256(data).hexdigest()
            _write_manifest(bundle, manifest)
    return mutate


def _first(source: str) -> Callable[[dict], dict]:
    return lambda data: next(f for f in data["files"] if f["source"] == source)


def _set_path(source: str, path: str) -> Mutation:
    return _manifest_edit(lambda data: _first(source)(data).update(path=path))


def _flip_byte(source: str) -> Mutation:
    def mutate(bundle: Path) -> None:
        relative = _first(source)(_manifest(bundle))["path"]
        data = bytearray((bundle / relative).read_bytes())
        data[len(data) // 2] ^= 1
        _replace_file(bundle, relative, bytes(data), fix_manifest=False)
    return mutate


def _swap_deb(fix_manifest: bool) -> Mutation:
    """A .deb whose ar header says -61 (the MemoryError loop), hashes fixed in the manifest."""
    def mutate(bundle: Path) -> None:
        relative = _first("deb")(_manifest(bundle))["path"]
        evil = (b"!<arch>\ndebian-binary   0           0     0     100644  -61       `\n"
                + b"2.0\n")
        _replace_file(bundle, relative, evil, fix_manifest=fix_manifest)
    return mutate


def _broken_manifest(bundle: Path) -> None:
    (bundle / "manifest.json").unlink()
    (bundle / "manifest.json").write_text("{")


def _remove(source: str) -> Mutation:
    def mutate(bundle: Path) -> None:
        (bundle / _first(source)(_manifest(bundle))["path"]).unlink()
    return mutate


MUTATIONS: dict[tuple[str, str], Mutation] = {
    ("path", "manifest-dotdot"): _set_path("deb", "../outside.deb"),
    ("path", "manifest-absolute"): _set_path("pypi", "/etc/hostname"),
    ("path", "manifest-backslash"): _set_path("pypi", "pypi\\..\\..\\x.whl"),
    ("path", "lock-deb-filename"): _lock_edit(r'filename = "pool/main/g/gcc-12/libgfortran5[^"]*"',
                                              'filename = "../../../../outside/x.deb"'),
    ("hash", "deb-byte"): _flip_byte("deb"),
    ("hash", "wheel-byte"): _flip_byte("pypi"),
    ("hash", "deb-swapped-manifest-fixed"): _swap_deb(fix_manifest=True),
    ("hash", "lock-copy-edited"): _lock_edit(r'version = "1\.16\.0"', 'version = "1.16.1"',
                                             fix_manifest=False),
    ("built-wheel", "pth-added"): _edit_wheel(
        lambda name, data: data, {"evil.pth": b"import os; os.system('id')\n"},
        fix_manifest=False),
    ("built-wheel", "module-edited"): _edit_wheel(
        lambda name, data: data + b"\nimport os\n" if name == "theano/__init__.py" else data,
        fix_manifest=False),
    ("built-wheel", "version-changed-manifest-fixed"): _edit_wheel(
        lambda name, data: data.replace(b"\nVersion: 1.0.5\n", b"\nVersion: 1.0.6\n")
        if name.endswith(".dist-info/METADATA") else data),
    ("built-wheel", "dotdot-member"): _edit_wheel(lambda name, data: data,
                                                  {"../../../outside.py": b"x = 1\n"}),
    ("built-wheel", "data-outside-scheme"): _edit_wheel(
        lambda name, data: data, {"Theano_PyMC-1.0.5.data/etc/cron.d/x": b"* * * * * id\n"}),
    ("removal", "deb-file"): _remove("deb"),
    ("removal", "wheel-file"): _remove("pypi"),
    ("removal", "manifest-entry"): _manifest_edit(lambda data: data["files"].pop(0)),
    ("duplicate", "lock-numpy"): _lock_edit(
        r'(\[\[platforms\.linux-64\.pypi\]\]\nfilename = "numpy[^\[]*)', r"\g<1>\g<1>"),
    ("value", "manifest-version"): _manifest_edit(lambda data: data.update(version=99)),
    ("value", "manifest-platform"): _manifest_edit(lambda data: data.update(platform="win-64")),
    ("value", "manifest-negative-size"): _manifest_edit(
        lambda data: data["files"][0].update(size=-61)),
    ("value", "manifest-not-json"): lambda bundle: _broken_manifest(bundle),
}


@pytest.fixture(scope="module")
def real_bundle(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("tamper-bundle")
    for folder, name in (("specs", "theano-cpu.toml"), ("locks", "theano-cpu.lock")):
        (root / folder).mkdir()
        shutil.copyfile(REPO / folder / name, root / folder / name)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ENVFORGE_HOME", str(root / "home"))
        assert main(["bundle", str(root / "locks" / "theano-cpu.lock"), "-o",
                     str(root / "bundle")]) == 0
    yield root / "bundle"


def _tree(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")} if root.exists() else set()


@pytest.mark.slow
@pytest.mark.network
def test_every_tampered_bundle_is_refused_before_anything_is_written(
        real_bundle: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("ENVFORGE_HOME", str(home))
    control = tmp_path / "control"
    shutil.copytree(real_bundle, control, copy_function=os.link)
    assert main(["plan", str(control / "specs" / "theano-cpu.toml"), "--bundle",
                 str(control), "--prefix", str(tmp_path / "env")]) == 3  # the bundle is sound
    capsys.readouterr()
    refused: Counter[str] = Counter()
    failures: list[str] = []
    for (field_class, name), mutate in MUTATIONS.items():
        bundle = tmp_path / f"{field_class}-{name}"
        shutil.copytree(real_bundle, bundle, copy_function=os.link)
        mutate(bundle)
        prefix = tmp_path / f"env-{name}"
        before = _tree(home)
        code = main(["apply", str(bundle / "specs" / "theano-cpu.toml"), "--bundle",
                     str(bundle), "--yes", "--prefix", str(prefix)])
        err = capsys.readouterr().err
        written = (_tree(home) - before) | _tree(prefix)
        if code == 2 and err.count("\n") == 1 and not written:
            refused[field_class] += 1
        else:
            failures.append(f"{field_class}/{name}: exit {code}, {err.strip()[-300:]!r}, "
                            f"wrote {sorted(written)[:3]}")
    for outside in (tmp_path / "outside.deb", tmp_path / "outside.py", Path("/outside.py")):
        assert not outside.exists()
    print(f"\ntampered bundles: {len(MUTATIONS)} cases, {sum(refused.values())} refused with "
          f"exit 2, {len(failures)} failed; by field class: {dict(sorted(refused.items()))}")
    print("\n".join(failures))
    assert failures == []
