"""The unversioned library names (``libX.so``) an environment of unpacked Debian packages
lacks: runtime packages ship only ``libX.so.N``, and ``-lX`` needs the plain name."""

from __future__ import annotations

import os
import re
from pathlib import Path

LIB_DIRS = ("lib", "lib64", "usr/lib", "usr/lib64", "usr/local/lib")
_VERSIONED_LIB = re.compile(r"^(lib.+\.so)\.(\d+)$")


def missing_dev_links(root: Path) -> list[tuple[Path, str]]:
    """Links ``libX.so -> libX.so.N`` to create where only the versioned name exists.

    Debian's runtime packages ship ``libopenblas.so.0`` but not ``libopenblas.so``, which
    ``-lopenblas`` needs (GPU.md). Only names whose target resolves are proposed; where
    several majors exist the highest wins. Reads the tree; the caller makes the links.
    """
    links: dict[Path, tuple[int, str]] = {}
    for lib_dir in LIB_DIRS:
        top = root / lib_dir
        if not top.is_dir() or top.is_symlink():
            continue
        for folder, _dirs, files in os.walk(top):
            for name in files:
                match = _VERSIONED_LIB.match(name)
                if match is None:
                    continue
                here = Path(folder)
                link = here / match[1]
                if os.path.lexists(link) or not (here / name).exists():
                    continue
                major = int(match[2])
                if link not in links or links[link][0] < major:
                    links[link] = (major, name)
    return sorted((link, name) for link, (_, name) in links.items())
