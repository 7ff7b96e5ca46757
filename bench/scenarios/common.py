"""What every scenario shares: the tools, the sizes, and a project folder per size."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

from bench.harness import clean_environ, timed

ROOT = Path(__file__).resolve().parents[2]
INDEX = "https://pypi.org/simple"
# uv's names for the specs' platforms (envforge's resolve/pypi.py passes the same)
UV_PLATFORMS = {"linux-64": "x86_64-manylinux_2_17", "win-64": "x86_64-pc-windows-msvc"}
PIP_PY37 = "pip==24.0"  # the last pip that runs on Python 3.7

SIZES = {  # name -> spec; the locked file counts are measured and printed
    "theano-cpu": ROOT / "specs" / "theano-cpu.toml",
    "ml30": ROOT / "bench" / "specs" / "ml30.toml",
    "ml75": ROOT / "bench" / "specs" / "ml75.toml",
}


@dataclass(frozen=True)
class Tools:
    envforge: str
    python: str  # the interpreter envforge runs on: the start-up floor
    uv: str
    python37: str
    python37_version: str
    pip37: Path  # a folder holding pip 24.0, run as ``python <folder>/pip``


def find_tools(cache: Path) -> Tools:
    from envforge.host.interpreters import find_interpreter
    from envforge.host.uv import uv_binary

    bindir = Path(sys.executable).parent
    uv = uv_binary()
    found = find_interpreter("3.7")
    pip37 = cache / PIP_PY37.replace("==", "-")
    if not (pip37 / "pip" / "__main__.py").is_file():  # once, not timed
        timed([uv, "pip", "install", "--quiet", "--no-config", "--index-url", INDEX,
               "--target", pip37, PIP_PY37], env=clean_environ())
    return Tools(envforge=str(bindir / "envforge"), python=sys.executable, uv=uv,
                 python37=str(found.executable), python37_version=found.version, pip37=pip37)


@dataclass(frozen=True)
class Project:
    size: str
    root: Path
    spec: Path  # relative to root: specs/NAME.toml

    @property
    def lock(self) -> Path:
        return self.root / "locks" / f"{self.spec.stem}.lock"

    def requirements(self) -> list[str]:
        """The spec's PyPI packages and what envforge adds for its Theano, as uv is given."""
        from envforge.app.packs import installed_packs
        from envforge.lockplan import undeclared_expected

        packages = tomllib.loads((self.root / self.spec).read_text("utf-8"))["pypi"]["packages"]
        added = undeclared_expected(packages, installed_packs())
        return [*packages, *(row.requirement for row in added)]

    def platforms(self) -> list[str]:
        text = (self.root / self.spec).read_text("utf-8")
        return list(tomllib.loads(text)["project"]["platforms"])


def new_project(scratch: Path, size: str, tag: str) -> Project:
    root = scratch / f"{size}-{tag}"
    (root / "specs").mkdir(parents=True)
    shutil.copy2(SIZES[size], root / "specs" / SIZES[size].name)
    return Project(size, root, Path("specs") / SIZES[size].name)


def export_requirements(tools: Tools, project: Project, target: Path) -> Path:
    """The lock's linux-64 files as hash-pinned requirements (uv's and pip's input)."""
    text = subprocess.run([tools.envforge, "export", str(project.lock), "--format",
                           "requirements", "--platform", "linux-64"], check=True,
                          capture_output=True, text=True, env=clean_environ()).stdout
    target.write_text(text, encoding="utf-8")
    return target


def locked_files(project: Project, platform: str = "linux-64") -> int:
    lock = tomllib.loads(project.lock.read_text("utf-8"))
    return len(lock["platforms"][platform].get("pypi", []))
