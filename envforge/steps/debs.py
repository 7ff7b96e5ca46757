"""Debian packages unpacked into ``<prefix>/deb`` with no root and no dpkg.

Each package's data.tar is decompressed once into envforge's cache, its regular files
unpacked beside it (``host/unpacked.py``); an unpack checks the data.tar's members and
hard-links the files.
Each unpacked package leaves a marker naming its version, so a re-apply sees what is
there without reading any archive. The unversioned ``libX.so`` names that ``-lX`` needs
(runtime packages lack them) are added as links beside the libraries. No maintainer script
runs; what one does that the packages' programs need (libgvc6's plugin configuration, without
which Graphviz's ``dot`` knows no output format) is done after the unpack, by the
knowledge's ``[[configure]]`` rows (debian.toml), its file journaled as created.
"""

from __future__ import annotations

import os
from pathlib import Path

from envforge.confine import inside
from envforge.envlayout import env_edits
from envforge.envvars import EnvEdit, apply_edits
from envforge.errors import StepError
from envforge.host import proc
from envforge.host.debunpack import unpack_deb
from envforge.host.devlinks import missing_dev_links
from envforge.host.fetch import FileRef
from envforge.host.unpacked import unpacked_deb
from envforge.journal import Transaction
from envforge.knowledge import deb_configure
from envforge.knowledge.models import DebConfigureRow
from envforge.lockfile import LockedDeb
from envforge.steps.base import Change, StepContext, unpacked_cache

MARKERS = ".envforge-debs"


def marker_path(root: Path, deb: LockedDeb) -> Path:
    return inside(root / MARKERS, f"{deb.name}_{deb.version.replace(':', '%3a')}",
                  what="Debian package marker", single=True)


def configured(ctx: StepContext) -> tuple[tuple[DebConfigureRow, Path], ...]:
    """The ``[[configure]]`` rows of the lock's packages, each with the file it makes."""
    root = Path(ctx.layout.deb_root)
    rows = deb_configure(ctx.platform, {deb.name for deb in ctx.lock.deb})
    return tuple((row, inside(root, row.creates, what=f"{row.package}'s configuration"))
                 for row in rows)


def configure_edits(ctx: StepContext) -> tuple[EnvEdit, ...]:
    """The variables the configured programs read (Graphviz's GVBINDIR), for activation."""
    root = Path(ctx.layout.deb_root)
    return tuple(EnvEdit(name=name, op="set",
                         value=str(inside(root, value, what=f"{row.package}'s {name}")))
                 for row, _ in configured(ctx) for name, value in row.variables.items())


class DebUnpackStep:
    name = "debian-packages"

    def describe(self, ctx: StepContext) -> tuple[Change, ...]:
        root = Path(ctx.layout.deb_root)
        return (*(Change(action="create", target=f"{root}/{deb.name}", before=None,
                         after=deb.version, detail=f"unpack {deb.filename}")
                  for deb in ctx.lock.deb if not marker_path(root, deb).exists()),
                *(Change(action="create", target=str(made), before=None, after=None,
                         detail=f"run {' '.join(row.run)}, as {row.package}'s maintainer "
                                "script does")
                  for row, made in configured(ctx) if not made.exists()))

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
        for row, made in configured(ctx):
            if not made.exists():
                _configure(ctx, row, made, tx)


def _configure(ctx: StepContext, row: DebConfigureRow, made: Path, tx: Transaction) -> None:
    """Run the row's program from the unpacked tree, its libraries found there, journaling
    the file it makes as created (rollback removes it)."""
    root = Path(ctx.layout.deb_root)
    program = inside(root, row.run[0], what=f"{row.package}'s configure program")
    env = apply_edits((*env_edits(ctx.layout, ctx.lock), *configure_edits(ctx)), os.environ,
                      pathsep=os.pathsep)
    tx.adopt_tree(made)
    proc.run([str(program), *row.run[1:]], env=env)
    if not made.is_file():
        raise StepError(f"{' '.join(row.run)} ({row.package}) made no {made}")
