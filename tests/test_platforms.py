"""The platform model: one TargetPlatform per spec platform, its facts sourced and checked
against the tools and files that define them (uv, packaging, the knowledge base, this host)."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import tomllib
from dataclasses import FrozenInstanceError, fields
from importlib import resources
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import get_args

import pytest
from packaging.tags import parse_tag

from envforge import spec
from envforge.host.uv import uv_binary
from envforge.platforms import PLATFORMS, Os, Platform, TargetPlatform, host_platform, platform_of

LINUX, WINDOWS = PLATFORMS["linux-64"], PLATFORMS["win-64"]
SOURCED = ("sys_platform", "platform_system", "os_name", "platform_machine", "uv_triple",
           "wheel_tags", "conda_subdir", "debian_arch", "library_path_var", "linker_files")


def _knowledge(name: str) -> dict[str, object]:
    return tomllib.loads(resources.files("envforge.knowledge").joinpath(name).read_text())


def test_one_entry_per_spec_platform() -> None:
    assert tuple(PLATFORMS) == spec.PLATFORMS == get_args(Platform)
    assert all(p.name == name for name, p in PLATFORMS.items())
    assert {p.os for p in PLATFORMS.values()} == set(Os)  # every OS has a target


def test_frozen() -> None:
    with pytest.raises(FrozenInstanceError):
        LINUX.pathsep = ";"  # type: ignore[misc]


@pytest.mark.parametrize("target", PLATFORMS.values(), ids=str)
def test_facts_with_a_source_name_it(target: TargetPlatform) -> None:
    assert set(target.sources) == set(SOURCED)
    assert all(len(text) > 10 for text in target.sources.values())
    assert set(SOURCED) - {"linker_files"} <= {f.name for f in fields(target)}


@pytest.mark.parametrize("target", PLATFORMS.values(), ids=str)
def test_wheel_tags_are_tags_of_its_arch(target: TargetPlatform) -> None:
    arch = {"x86_64": ("x86_64", "amd64")}[target.arch.value]
    for tag in target.wheel_tags:
        assert {t.platform for t in parse_tag(f"cp37-cp37m-{tag}")} == {tag}
        assert tag.endswith(arch)


@pytest.mark.parametrize("target", PLATFORMS.values(), ids=str)
def test_conda_subdir_is_one_the_knowledge_base_uses(target: TargetPlatform) -> None:
    """The subdir is the spec's name (envforge names platforms as conda does), and the
    virtual packages assumed when solving have a table for it."""
    assert target.conda_subdir == target.name
    assert target.conda_subdir in _knowledge("virtual_packages.toml")


def test_debian_arch_is_the_one_the_debian_rows_were_read_from() -> None:
    rows = _knowledge("debian.toml")
    text = repr(rows)
    assert LINUX.debian_arch is not None and f"binary-{LINUX.debian_arch}/" in text
    assert WINDOWS.debian_arch is None


@pytest.mark.parametrize("target", PLATFORMS.values(), ids=str)
def test_uv_accepts_the_triple(target: TargetPlatform, tmp_path: Path) -> None:
    """Real uv: an empty requirement set compiles for the target; a wrong triple is refused."""
    requirements = tmp_path / "requirements.in"
    requirements.write_text("")

    def compile_for(triple: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([uv_binary(), "pip", "compile", str(requirements), "--offline",
                               "--no-cache", "--no-config", "--python", sys.executable,
                               "--python-version", "3.7", "--python-platform",
                               triple, "-q"], capture_output=True, text=True, timeout=60,
                              check=False, cwd=tmp_path)  # not the repository's .venv

    assert compile_for(target.uv_triple).returncode == 0
    assert "invalid value" in compile_for(target.uv_triple + "-nope").stderr


def test_host_platform_is_this_process() -> None:
    host = host_platform()
    assert host.sys_platform == sys.platform
    assert host.pathsep == os.pathsep
    assert isinstance(Path(), host.pure_path)


def test_platform_of() -> None:
    assert platform_of("win-64") is WINDOWS
    assert platform_of(LINUX) is LINUX
    assert str(LINUX) == "linux-64"


def test_paths_and_names() -> None:
    assert WINDOWS.pure_path is PureWindowsPath and LINUX.pure_path is PurePosixPath
    assert WINDOWS.pure_path(r"C:\a") / "b" == PureWindowsPath(r"C:\a\b")
    assert LINUX.shared_lib("gomp", "1") == "libgomp.so.1"
    assert LINUX.shared_lib("gomp") == "libgomp.so"
    assert WINDOWS.shared_lib("zlib") == "zlib.dll"
    assert LINUX.linker_files("openblas") == ("libopenblas.so", "libopenblas.a")
    assert WINDOWS.linker_files("openblas")[0] == "libopenblas.dll.a"
    assert (LINUX.exe_suffix, WINDOWS.exe_suffix) == ("", ".exe")


def test_environment_and_file_names_by_case() -> None:
    env = {"Path": r"C:\Windows", "HOME": "/home/me"}
    assert WINDOWS.getenv(env, "PATH") == r"C:\Windows"
    assert LINUX.getenv(env, "PATH") is None
    assert LINUX.getenv(env, "HOME") == "/home/me"
    assert WINDOWS.same_file_name("CUDART64_110.DLL", "cudart64_110.dll")
    assert not LINUX.same_file_name("LIBGOMP.so.1", "libgomp.so.1")


def test_library_path_variable() -> None:
    assert (LINUX.library_path_var, WINDOWS.library_path_var) == ("LD_LIBRARY_PATH", "PATH")


@pytest.mark.slow
def test_mypy_lists_every_place_a_new_os_must_handle(tmp_path: Path) -> None:
    """Add an OS to a copy of the package: mypy --strict fails at every ``match platform.os``
    (each ``assert_never`` it can now reach), and only there."""
    root = Path(__file__).resolve().parents[1]
    copy = tmp_path / "envforge"
    shutil.copytree(root / "envforge", copy, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(root / "pyproject.toml", tmp_path)
    model = copy / "platforms.py"
    text = model.read_text(encoding="utf-8")
    model.write_text(text.replace('    WINDOWS = "windows"\n',
                                  '    WINDOWS = "windows"\n    MACOS = "macos"\n'),
                     encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "mypy", "envforge"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=600, check=False)
    errors = [line for line in done.stdout.splitlines() if ": error:" in line]
    assert errors and all("assert_never" in line for line in errors), done.stdout
    calls = {p.relative_to(root).as_posix(): _assert_never_calls(p)
             for p in (root / "envforge").rglob("*.py")}
    assert {line.split(":")[0] for line in errors} == {f for f, n in calls.items() if n}
    assert len(errors) == sum(calls.values())


def _assert_never_calls(path: Path) -> int:
    return sum(isinstance(node, ast.Call) and ast.unparse(node.func) == "assert_never"
               for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))))


def test_the_host_s_markers_are_the_ones_packaging_reads_on_it() -> None:
    """PEP 508's variables for the host's platform, as packaging's default_environment()
    reads them from this interpreter (Linux here, Windows in the Wine lane)."""
    from packaging.markers import default_environment

    host = default_environment()
    ours = host_platform().markers(host["python_full_version"])
    keys = ("sys_platform", "platform_system", "os_name", "platform_machine",
            "python_version", "python_full_version", "implementation_name")
    assert {k: ours[k] for k in keys} == {k: host[k] for k in keys}
