"""cuDNN: the user's NVIDIA archive, checked against the lock, copied into the CUDA tree.

NVIDIA's download needs a developer login, so envforge never fetches cuDNN: it takes
the file the user downloaded, refuses it unless its sha256 is the lock's, unpacks it
safely into a staging folder in envforge's cache and copies its files into the toolkit's
folders, where Theano looks (``<cuda>/include``, ``<cuda>/lib/x64`` or ``lib64``,
``<cuda>/bin``). The archive is hashed and unpacked once, when the step plans: its actions
carry the staged files with their sha256, which the executor checks again before copying.
Files already there are backed up by the journal, so rollback puts them back.
The layout follows the context's platform, not the host's: a win-64 zip can be
installed into a Windows-shaped tree on Linux, which is how it is tested.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from envforge.confine import link_target_inside
from envforge.errors import ArtifactError, StepError
from envforge.host.platform import CudaLayout, cuda_layout
from envforge.host.unarchive import extract_archive
from envforge.journal import Transaction
from envforge.knowledge import cudnn_library_name
from envforge.lockfile import LockedArtifact
from envforge.spec import Platform
from envforge.steps.actions import StepPlan, file_plan, perform_all
from envforge.steps.base import (
    Change,
    StepContext,
    Want,
    WantFile,
    WantLink,
    supplied_artifact,
)

# Archive folder -> CudaLayout attribute (KNOWLEDGE §5; envforge/knowledge/cudnn.toml).
_ARCHIVE_LAYOUT: dict[Platform, tuple[tuple[str, str], ...]] = {
    "win-64": (("cuda/bin", "bin"), ("cuda/include", "include"), ("cuda/lib/x64", "lib")),
    "linux-64": (("cuda/include", "include"), ("cuda/lib64", "lib")),
}
_LIBRARY_FOLDER: dict[Platform, str] = {"win-64": "cuda/bin", "linux-64": "cuda/lib64"}

_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+CUDNN_(MAJOR|MINOR|PATCHLEVEL)[ \t]+(\d+)",
                     re.MULTILINE)


def cudnn_header_version(text: str) -> tuple[int, int, int] | None:
    """(7, 6, 5) from cudnn.h's ``#define CUDNN_MAJOR 7`` lines (cudnn_version.h since 8)."""
    found = {name: int(value) for name, value in _DEFINE.findall(text)}
    if {"MAJOR", "MINOR", "PATCHLEVEL"} - found.keys():
        return None
    return found["MAJOR"], found["MINOR"], found["PATCHLEVEL"]


def cudnn_wants(platform: Platform, unpacked: Path, layout: CudaLayout,
                archive: Path) -> list[Want]:
    """Where each file of an unpacked cuDNN archive goes; links stay links, after the files."""
    include = unpacked / "cuda" / "include"
    version = None
    for header in ("cudnn_version.h", "cudnn.h"):
        if (include / header).is_file() and version is None:
            version = cudnn_header_version((include / header).read_text(errors="replace"))
    if version is None:
        raise ArtifactError(f"{archive}: not a cuDNN archive for {platform}: no cuda/include/"
                            "cudnn.h with CUDNN_MAJOR, CUDNN_MINOR and CUDNN_PATCHLEVEL")
    known = cudnn_library_name(".".join(map(str, version)), platform)
    if known is None:
        raise ArtifactError(f"{archive}: cuDNN {version[0]}: envforge knows no library name "
                            f"for this major on {platform} (knowledge/cudnn.toml)")
    library = f"{_LIBRARY_FOLDER[platform]}/{known.value}"
    if not (unpacked / library).exists():
        raise ArtifactError(f"{archive}: not a cuDNN {version[0]} archive for {platform}: "
                            f"no {library}")
    files: list[Want] = []
    links: list[Want] = []
    for folder, attr in _ARCHIVE_LAYOUT[platform]:
        source = unpacked / folder
        target: Path = getattr(layout, attr)
        for root, dirs, names in os.walk(source):
            dirs.sort()
            for name in sorted((*dirs, *names)):
                path = Path(root) / name
                dest = target / path.relative_to(source)
                if path.is_symlink():
                    text = str(path.readlink())
                    link_target_inside(layout.root, dest, text, what=str(archive))
                    links.append(WantLink(dest, text))
                elif path.is_file():
                    files.append(WantFile(dest, path))
    return [*files, *links]


class CudnnInstallStep:
    """Install the locked cuDNN archive (``ctx.artifacts["cudnn"]``) into ``ctx.cuda_root``."""

    name = "cudnn"

    def __init__(self, artifact: LockedArtifact) -> None:
        if artifact.role != "cudnn":
            raise ValueError(f"CudnnInstallStep needs the cudnn artifact, not {artifact.role}")
        self.artifact = artifact

    def plan(self, ctx: StepContext) -> StepPlan:
        """Check the archive, unpack it into the staging folder and map it; the CUDA tree is
        not touched here."""
        archive = supplied_artifact(ctx, "cudnn", self.artifact.sha256)
        if archive is None:
            raise ArtifactError(
                f"cuDNN is locked as {self.artifact.filename} (sha256 {self.artifact.sha256}); "
                "NVIDIA requires a login to download it, so download it and pass "
                f"--artifact cudnn=PATH/{self.artifact.filename}")
        if ctx.cuda_root is None:
            raise StepError("cuDNN is copied into the CUDA toolkit, and no toolkit was found")
        layout = cuda_layout(ctx.platform, ctx.cuda_root)
        unpacked = stage(archive, ctx.dirs.cache / "staged" / f"cudnn-{self.artifact.sha256}")
        changes, actions = file_plan(cudnn_wants(ctx.platform, unpacked, layout, archive))
        return StepPlan(step=self.name, changes=changes, actions=actions,
                        artifacts={"cudnn": self.artifact.sha256})

    def describe(self, ctx: StepContext) -> tuple[Change, ...]:
        return self.plan(ctx).changes

    def apply(self, ctx: StepContext, tx: Transaction) -> None:
        perform_all(self.plan(ctx), tx)


def stage(archive: Path, folder: Path) -> Path:
    """``archive`` unpacked afresh as ``folder`` (whole or not at all: unpacked beside it,
    then renamed), replacing an older staging of it."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=folder.name + ".", dir=folder.parent))
    try:
        extract_archive(archive, tmp / "archive")
        if os.path.lexists(folder):
            _remove(folder)
        (tmp / "archive").rename(folder)
    finally:
        _remove(tmp)
    return folder


def _remove(folder: Path) -> None:
    """rmtree that also takes read-only files (cuDNN's headers are 0444; Windows refuses to
    delete a read-only file)."""
    def writable_again(func: Callable[[str], object], path: str, _: object) -> None:
        Path(path).chmod(stat.S_IREAD | stat.S_IWRITE)
        func(path)

    if not os.path.lexists(folder):
        return
    if sys.version_info >= (3, 12):
        shutil.rmtree(folder, onexc=writable_again)
    else:
        shutil.rmtree(folder, onerror=writable_again)
