"""The container engine at the edge: podman, else buildah; builds run with no network."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from envforge.errors import InputError, ToolError
from envforge.host import proc


@dataclass(frozen=True)
class Engine:
    name: str
    path: str


def engine() -> Engine:
    """podman where present, else buildah; neither is an input error with the remedy."""
    for name in ("podman", "buildah"):
        path = shutil.which(name)
        if path:
            return Engine(name, path)
    raise InputError("envforge image needs podman or buildah on PATH (Debian: apt-get install "
                     "podman), or --no-build to write the build context only")


def build(engine_: Engine, context: Path, containerfile: str, tag: str) -> None:
    """``build --network none``: the image gets nothing that is not in the bundle."""
    verb = ["build"] if engine_.name == "podman" else ["bud"]
    try:
        proc.run([engine_.path, *verb, "--network", "none", "-f", str(context / containerfile),
                  "-t", tag, str(context)], env=os.environ)
    except ToolError as exc:
        raise ToolError(f"image build failed (apply or verify inside the image): {exc}") from exc


def save_oci_archive(engine_: Engine, tag: str, target: Path) -> None:
    target.unlink(missing_ok=True)
    verb = ["save", "--format", "oci-archive", "-o", str(target), tag] \
        if engine_.name == "podman" else ["push", tag, f"oci-archive:{target}"]
    proc.run([engine_.path, *verb])
