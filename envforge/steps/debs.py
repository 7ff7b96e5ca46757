"""Debian packages unpacked into ``<prefix>/deb`` with no root and no dpkg.

Each package's data.tar is decompressed once into envforge's cache, its regular files
unpacked beside it (``host/unpacked.py``); an unpack checks the data.tar's members and
hard-links the files.
Each unpacked package leaves a marker naming its version, so a re-apply sees what is
there without reading any archive. The unversioned ``libX.so`` names that ``-lX`` needs
(runtime packages lack them) are added as links beside the libraries.
"""

from __future__ import annotations

from pathlib import Path

from envforge.confine import inside
from envforge.host.debunpack import unpack_deb
from envforge.host.devlinks import missing_dev_links
from envforge.host.fetch import FileRef
from envforge.host.unpacked import unpacked_deb
from envforge.journal import Transaction
from envforge.lockfile import LockedDeb
from envforge.steps.base import Change, StepContext, unpacked_cache

MARKERS = ".envforge-debs"


def marker_path(root: Path, deb: LockedDeb) -> Path:
    return inside(root / MARKERS, f"{deb.name}_{deb.version.replace(':', '%3a')}",
                  what="Debian package marker", single=True)


class DebUnpackStep:
    name = "debian-packages"

    def describe(self, ctx: StepContext) -> tuple[Change, ...]:
        root = Path(ctx.layout.deb_root)
        return tuple(
            Change(action="create", target=f"{root}/{deb.name}", before=None, after=deb.version,
                   detail=f"unpack {deb.filename}")
            for deb in ctx.lock.deb if not marker_path(root, deb).exists())

    def apply(self, ctx: StepContext, tx: Transaction) -> None:
        root = Path(ctx.layout.deb_root)
        wanted = [deb for deb in ctx.lock.deb if not marker_path(root, deb).exists()]
        files = [ctx.sources.obtain(ctx, FileRef(d.url, d.sha256, d.filename, d.size))
                 for d in wanted]
        for deb, path in zip(wanted, files, strict=True):
            cached = unpacked_deb(unpacked_cache(ctx), path, deb.sha256)
            unpack_deb(path, root, replace=True,  # inside the prefix: a re-run after a crash
                       cached=cached)
            marker = marker_path(root, deb)
            marker.parent.mkdir(parents=True, exist_ok=True)
            marker.write_text(f"{deb.sha256}\n", encoding="utf-8")
        for link, target in missing_dev_links(root):
            if not link.is_symlink():
                link.symlink_to(target)
