"""The locked conda records installed into the prefix by rattler, each file hash-checked first."""

from __future__ import annotations

from pathlib import Path

from envforge.host.installed import conda_records
from envforge.journal import Transaction
from envforge.lockfile import LockedCondaPackage
from envforge.steps.base import Change, StepContext


def installed_records(prefix: Path) -> dict[str, str]:
    """name -> sha256 of what conda-meta says is installed."""
    return {record.name: record.sha256 for record in conda_records(prefix)}


def missing(ctx: StepContext) -> list[LockedCondaPackage]:
    have = installed_records(Path(ctx.layout.prefix))
    return [p for p in ctx.lock.conda if have.get(p.name) != p.sha256]


class CondaInstallStep:
    name = "conda-packages"

    def describe(self, ctx: StepContext) -> tuple[Change, ...]:
        return tuple(Change(action="create", target=f"{ctx.layout.prefix}/{p.name}", before=None,
                            after=f"{p.version}-{p.build}", detail=p.filename)
                     for p in missing(ctx))

    def apply(self, ctx: StepContext, tx: Transaction) -> None:
        if not missing(ctx):
            return
        from envforge.host.conda_install import install_conda

        install_conda(ctx.lock.conda, Path(ctx.layout.prefix), cache_dir=ctx.dirs.cache,
                      fetch=lambda ref: ctx.sources.obtain(ctx, ref))
