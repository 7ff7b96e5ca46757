"""A local conda channel of real packages, built with py-rattler-build and indexed by rattler.

The packages mimic the Theano GPU stack of KNOWLEDGE.md section 6 (names, versions and
constraints), but hold only a text file each, so building needs no network and no
compiler: recipes have no build or host requirements. Arch packages are cross-built for
linux-64 and win-64 (``target_platform``); the build script runs on the build platform,
so it is POSIX sh and only writes files: building on a Windows host would need cmd syntax.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import http.server
import json
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

ARCH_SUBDIRS = ("linux-64", "win-64")


@dataclass(frozen=True)
class FakePackage:
    """One recipe: built once per subdir (or once as ``noarch: generic``)."""

    name: str
    version: str
    depends: tuple[str, ...] = ()
    linux_depends: tuple[str, ...] = ()
    noarch: bool = False

    def marker(self) -> str:
        """Where the package puts its one file, relative to the prefix."""
        return f"etc/envforge-test/{self.name}.txt"


PACKAGES: tuple[FakePackage, ...] = (
    FakePackage("python", "3.7.16"),
    FakePackage("python", "3.8.18"),
    FakePackage("libgpuarray", "0.7.6", linux_depends=("__glibc >=2.12",)),
    FakePackage("libgpuarray", "0.8.0", linux_depends=("__glibc >=2.12",)),
    FakePackage("pygpu", "0.7.6", depends=("libgpuarray >=0.7.6,<0.8", "python >=3.7,<3.8")),
    # Newer and satisfiable on its own: theano-pymc must still get 0.7.6.
    FakePackage("pygpu", "0.8.0", depends=("libgpuarray >=0.8.0,<0.9", "python >=3.7,<3.9")),
    FakePackage("theano-pymc", "1.0.5", noarch=True,
                depends=("python >=3.6,<3.9", "pygpu >=0.7.0,<0.8")),
    # Windows only, as a noarch package guarded by a virtual package (conda-forge's way).
    FakePackage("m2w64-toolchain", "5.3.0", noarch=True, depends=("__win",)),
    # Needs a CUDA driver: solvable only when the target's __cuda is new enough.
    FakePackage("cudnn", "7.6.5", depends=("__cuda >=10.0",)),
)


def _recipe(package: FakePackage, subdir: str) -> str:
    depends = [*package.depends, *(package.linux_depends if subdir == "linux-64" else ())]
    lines = [
        "package:",
        f"  name: {package.name}",
        f"  version: {package.version}",
        "build:",
        "  number: 0",
    ]
    if package.noarch:
        lines.append("  noarch: generic")
    marker = package.marker()
    folder = marker.rsplit("/", 1)[0]
    lines += [
        "  script:",
        f"    - mkdir -p \"$PREFIX/{folder}\"",
        f"    - echo '{package.name} {package.version} {subdir}' > \"$PREFIX/{marker}\"",
        # A text file holding the build prefix: installing must rewrite it.
        f"    - echo \"prefix=$PREFIX\" >> \"$PREFIX/{marker}\"",
    ]
    if depends:
        lines += ["requirements:", "  run:"] + [f"    - {json.dumps(d)}" for d in depends]
    return "\n".join(lines) + "\n"


def build_channel(root: Path, packages: tuple[FakePackage, ...] = PACKAGES) -> Path:
    """Build every package into ``root/channel`` and index it; return the channel folder."""
    from rattler.index import index_fs
    from rattler_build import PlatformConfig, RenderConfig, Stage0Recipe, ToolConfiguration

    channel = root / "channel"
    recipes = root / "recipes"
    for package in packages:
        for subdir in ("noarch",) if package.noarch else ARCH_SUBDIRS:
            target = "linux-64" if subdir == "noarch" else subdir
            folder = recipes / f"{package.name}-{package.version}-{subdir}"
            recipe = Stage0Recipe.from_yaml(_recipe(package, subdir), recipe_dir=folder)
            render = RenderConfig(platform=PlatformConfig(target_platform=target))
            recipe.run_build(tool_config=ToolConfiguration(test_strategy="skip"),
                             output_dir=channel, channels=[], render_config=render,
                             no_build_id=True)
    for subdir in ("noarch", *ARCH_SUBDIRS):
        (channel / subdir).mkdir(parents=True, exist_ok=True)
    # rattler-build writes a repodata.json as it goes; index once more so every subdir
    # is complete and consistent, with rattler's own indexer.
    asyncio.run(index_fs(channel, force=True, write_zst=False, write_shards=False))
    return channel


_BUILT: dict[Path, Path] = {}


def shared_channel(factory: pytest.TempPathFactory) -> Path:
    """The channel built once per test session (per xdist worker); never modify it."""
    base = factory.getbasetemp()
    if base not in _BUILT:
        _BUILT[base] = build_channel(factory.mktemp("conda-channel"))
    return _BUILT[base]


def copy_channel(channel: Path, dest: Path) -> Path:
    """A private copy of a channel, for tests that tamper with it."""
    shutil.copytree(channel, dest)
    return dest


def archive(channel: Path, subdir: str, name: str, version: str) -> Path:
    """The one built archive of ``name`` ``version`` in ``subdir``."""
    (found,) = channel.glob(f"{subdir}/{name}-{version}-*.conda")
    return found


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@contextmanager
def serve(folder: Path) -> Iterator[str]:
    """Serve ``folder`` over HTTP on localhost; yield its base URL."""
    handler = functools.partial(_QuietHandler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


def conda_spec_text(channel: Path, *, name: str = "condaenv",
                    platforms: tuple[str, ...] = ("linux-64", "win-64"), extra: str = "") -> str:
    """A conda spec of Theano-PyMC 1.0.5 on the built channel; ``extra`` adds TOML tables."""
    listed = ", ".join(f'"{p}"' for p in platforms)
    return f"""\
[project]
name = "{name}"
platforms = [{listed}]

[python]
version = "3.7"

[environment]
kind = "conda"
channels = ["{channel.as_uri()}"]

[conda]
packages = ["python=3.7", "theano-pymc=1.0.5"]
{extra}"""
