"""The locked conda records installed into the prefix by rattler, each file hash-checked first."""

from __future__ import annotations

import json
from pathlib import Path

from envforge.journal import Transaction
from envforge.lockfile import LockedCondaPackage
from envforge.steps.base import Change, StepContext


def installed_records(prefix: Path) -> dict[str, str]:
    """name -> sha256 of what conda-meta says is installed."""
    found: dict[str, str] = {}
    meta = prefix / "conda-meta"
    if not meta.is_dir():
        return found
    for record in meta.glob("*.json"):
        try:
            data = json.loads(record.read_text(encoding="utf-8"))
        except ValueError:
            continue
        if isinstance(data, dict) and "name" in data:
            found[str(data["name"])] = str(data.get("sha256", ""))
    return found


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
