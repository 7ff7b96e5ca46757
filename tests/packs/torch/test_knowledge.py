"""The PyTorch pack's knowledge: every row names a source, the lookups answer for the
committed specs' releases, the probe runs the kernels compat allows, the fatbin reader
reads a fatbin, and (network) each wheel row's CUDA runtime is what the real PyPI wheel's
torch/version.py says, read by HTTP range requests (no 500 MB download)."""

from __future__ import annotations

import ast
import re
import struct
import tomllib
import zipfile
from pathlib import Path
from typing import Any

import pytest
import requests
from packaging.version import Version

from envforge.knowledge.models import in_range
from envforge.packs.pitfalls import capped
from envforge.packs.torch import PROBE_SCRIPT, TORCH
from envforge.packs.torch.fatbin import MAGIC, fatbin_arches
from envforge.packs.torch.knowledge import (
    pairing,
    placeholder,
    pypi_platforms,
    stack_names,
    torch_knowledge,
    wheel,
)
from envforge.packs.torch.section import PROBE_KERNELS
from envforge.resolve.remotewheel import RangeFile
from tests.testing.probes import load_probe

TOML = Path(__file__).resolve().parents[3] / "envforge" / "packs" / "torch" / "torch.toml"


def test_every_row_names_a_source() -> None:
    raw = tomllib.loads(TOML.read_text(encoding="utf-8"))
    rows = [row for body in raw.values() for row in body]
    assert rows and all(str(row.get("source", "")).strip() for row in rows)
    assert len(torch_knowledge().torchvision) == 23


def test_lookups_for_the_committed_stacks() -> None:
    assert [pairing(v).torchvision for v in ("1.0.1", "1.4.0", "1.13.1")  # type: ignore[union-attr]
            ] == [">=0.2.2,<0.2.3", "==0.5.0", "==0.14.1"]
    assert pairing("2.0.0") is None
    assert pypi_platforms("1.0.1").platforms == ("linux-64",)  # type: ignore[union-attr]
    assert "win-64" in pypi_platforms("1.7.0").platforms  # type: ignore[union-attr]
    row = wheel("1.4.0", "linux-64")
    assert row is not None and (row.cuda, row.arches[0], row.arches[-1]) == ("10.1", "sm_35",
                                                                            "sm_75")
    assert wheel("1.4.0", "win-64") is None
    assert placeholder("pytorch") is not None and placeholder("torch") is None
    assert stack_names()["pytorch"] == "torch"


def test_the_probe_is_python_3_5_syntax() -> None:
    """The environment's Python runs it: torch 1.0's wheels go back to Python 3.5."""
    ast.parse(PROBE_SCRIPT.read_text(encoding="utf-8"), feature_version=(3, 5))
    with pytest.raises(SyntaxError):
        ast.parse('x = f"{1}"', feature_version=(3, 5))


def test_the_pack_names_its_distributions_as_its_knowledge() -> None:
    assert dict(TORCH.stack_names) == stack_names()


def test_the_probe_runs_the_kernels_compat_allows() -> None:
    assert tuple(load_probe(PROBE_SCRIPT).KERNELS) == PROBE_KERNELS


def _entry(kind: int, arch: int, payload: bytes) -> bytes:
    header = struct.pack("<HHII", kind, 0x101, 64, len(payload)) + bytes(16)
    return header + struct.pack("<I", arch) + bytes(64 - 32) + payload


def test_the_fatbin_reader_counts_images_and_ptx() -> None:
    entries = _entry(2, 35, b"\x7fELF" * 4) + _entry(2, 70, b"x" * 8) + _entry(1, 50, b"ptx")
    fatbin = MAGIC + struct.pack("<HHQ", 1, 16, len(entries)) + entries
    blob = b"\x00" * 40 + fatbin + b"junk" + MAGIC + b"\x02\x00"  # a stray magic is skipped
    assert dict(fatbin_arches(blob)) == {"sm_35": 1, "sm_70": 1, "compute_50": 1}


def _remote(url: str) -> RangeFile:
    """A wheel on PyPI read by HTTP range requests (envforge's reader), whole central
    directory and all: a torch wheel's runs past a megabyte."""
    http = requests.Session()
    size = int(http.head(url, allow_redirects=True, timeout=60).headers["Content-Length"])
    return RangeFile(http, url, size, timeout=60, limit=None)


def _index(project: str) -> Any:
    return requests.get(f"https://pypi.org/simple/{project}/", timeout=60, headers={
        "Accept": "application/vnd.pypi.simple.v1+json"}).json()


def _wheel_url(version: str, python: str) -> str:
    index = _index("torch")
    name = f"torch-{version}-{python}-{python}{'m' if python < 'cp38' else ''}-" \
           "manylinux1_x86_64.whl"
    return str(next(f["url"] for f in index["files"] if f["filename"] == name))


@pytest.mark.network
@pytest.mark.parametrize(("version", "python"), [("1.0.0", "cp37"), ("1.0.1", "cp37"),
                                                  ("1.1.0", "cp37"),
                                                  ("1.3.0", "cp37"), ("1.4.0", "cp37"),
                                                  ("1.7.1", "cp37"), ("1.13.1", "cp37"),
                                                  ("2.1.0", "cp38")])
def test_the_wheel_carries_the_cuda_runtime_of_its_row(version: str, python: str) -> None:
    row = wheel(version, "linux-64")
    assert row is not None
    with zipfile.ZipFile(_remote(_wheel_url(version, python))) as archive:
        text = archive.read("torch/version.py").decode()
        assert row.library in archive.namelist()
    assert f"cuda = '{row.cuda}'" in text


@pytest.mark.network
@pytest.mark.slow
def test_each_torchvision_wheel_requires_the_torch_of_its_pair() -> None:
    """Every torchvision release with a cp37 linux wheel (0.3.0 ... 0.14.1): the torch its
    METADATA pins is paired with it by torch.toml (0.11.0's `+cu102` pin has no PyPI torch)."""
    wheels = {f["filename"].split("-")[1]: f["url"] for f in _index("torchvision")["files"]
              if "-cp37-cp37m-manylinux1_x86_64.whl" in f["filename"]}
    checked = []
    for version, url in sorted(wheels.items(), key=lambda item: Version(item[0])):
        if Version(version) >= Version("0.15"):
            continue
        with zipfile.ZipFile(_remote(url)) as archive:
            meta = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
            text = archive.read(meta).decode()
        [pin] = re.findall(r"^Requires-Dist: torch \((.+)\)$", text, re.MULTILINE)
        torch = pin.removeprefix("==").removeprefix(">=").split("+")[0]
        row = pairing(torch)
        assert row is not None and in_range(version, row.torchvision), (version, pin)
        checked.append(version)
    assert len(checked) == 24 and (checked[0], checked[-1]) == ("0.3.0", "0.14.1")


@pytest.mark.network
def test_pypi_has_windows_torch_wheels_where_the_rows_say() -> None:
    files = [f["filename"] for f in _index("torch")["files"]]
    releases = {name.split("-")[1] for name in files if name.endswith(".whl")}
    ones = sorted((v for v in releases if Version(v).major == 1 and not Version(v).local),
                  key=Version)
    assert ones[0] == "1.0.0" and ones[-1] == "1.13.1"
    for version in ones:
        row = pypi_platforms(version)
        windows = any(name.startswith(f"torch-{version}-") and name.endswith("win_amd64.whl")
                      for name in files)
        assert row is not None and ("win-64" in row.platforms) == windows, version


def test_a_pitfalls_cap_is_what_lock_adds_where_the_other_part_is_resolved() -> None:
    """torchvision before 0.5 imports PILLOW_VERSION (gone in Pillow 7) while its metadata
    asks only pillow>=4.1.1: lock adds pillow<7 beside it, as for any undeclared import."""
    rows = torch_knowledge().pitfalls
    (found,) = capped(rows, {"torch": "1.2.0", "torchvision": "0.4.0"})
    assert (found.requirement, found.module) == ("pillow<7", "PIL.PILLOW_VERSION")
    assert found.imported_at.startswith("torchvision/transforms/functional.py:5")
    assert capped(rows, {"torch": "1.4.0", "torchvision": "0.5.0"}) == ()
    assert capped(rows, {"torch": "1.2.0"}) == ()
    assert TORCH.undeclared_imports({"torchvision": "0.2.1"}) == capped(
        rows, {"torchvision": "0.2.1"})


def test_torch_1_10_gets_the_setuptools_its_version_module_imports() -> None:
    """torch 1.10.x's torch/torch_version.py imports pkg_resources at `import torch` and its
    metadata requires typing-extensions alone (huggingface/torchMoji on Python 3.6 resolved
    1.10.2 with no setuptools): lock adds setuptools<80.9 beside 1.10, not 1.9 or 1.11."""
    rows = torch_knowledge().pitfalls
    (found,) = capped(rows, {"torch": "1.10.2"})
    assert (found.requirement, found.module) == ("setuptools<80.9", "pkg_resources")
    assert found.imported_at.startswith("torch/torch_version.py:3")
    assert capped(rows, {"torch": "1.9.1"}) == capped(rows, {"torch": "1.11.0"}) == ()


@pytest.mark.network
@pytest.mark.parametrize(("version", "at_import"), [("1.9.1", False), ("1.10.0", True),
                                                    ("1.10.2", True), ("1.11.0", False)])
def test_the_pkg_resources_rows_range_is_the_wheels_own(version: str, at_import: bool) -> None:
    """The cap's range read from PyPI's wheels: torch/torch_version.py imports pkg_resources
    at module level in 1.10.x only (1.9 has no import of it, 1.11 only inside a function),
    and their METADATA requires no setuptools."""
    with zipfile.ZipFile(_remote(_wheel_url(version, "cp37"))) as archive:
        names = archive.namelist()
        source = archive.read("torch/torch_version.py").decode() \
            if "torch/torch_version.py" in names else ""
        meta = archive.read(next(n for n in names if n.endswith(".dist-info/METADATA")))
    top = [node for node in ast.parse(source).body
           if isinstance(node, ast.ImportFrom) and node.module == "pkg_resources"]
    assert bool(top) == at_import
    assert b"Requires-Dist: setuptools" not in meta
    assert bool(capped(torch_knowledge().pitfalls, {"torch": version})) == at_import
