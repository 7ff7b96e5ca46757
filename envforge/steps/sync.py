"""``apply --sync``: the environment's PyPI packages brought back to exactly the lock.

Distributions the lock does not name are uninstalled by their RECORD, and locked ones whose
files changed (against their RECORD) are reinstalled from the same verified copies the PyPI
step installs (``bundle/sources.pypi_wheels``, pypa's ``installer``): one install path, so a
sync can never install what apply would refuse. Other versions and missing ones are the PyPI
step's. Everything happens inside the prefix, which is envforge's own (rollback removes it
whole), so nothing here needs a backup.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from packaging.utils import canonicalize_name

from envforge.drift import Drift, find_drift
from envforge.errors import StepError
from envforge.journal import Transaction
from envforge.steps.base import Change, StepContext, scheme_memo, unpacked_cache
from envforge.steps.pypi import say_skipped_pycache


def _drift(ctx: StepContext) -> Drift:
    return find_drift(Path(ctx.layout.site_packages), ctx.lock.pypi,
                      also_expected=[c.name for c in ctx.lock.conda])


class SyncStep:
    name = "pypi-sync"

    def describe(self, ctx: StepContext) -> tuple[Change, ...]:
        drift = _drift(ctx)
        site = str(ctx.layout.site_packages)
        removed = [Change(action="remove", target=f"{site}/{item.split()[0]}", before=item,
                          after=None, detail="not in the lock") for item in drift.extra]
        changed = sorted({item.split(":")[0] for item in drift.modified})
        return (*removed, *(Change(action="replace", target=f"{site}/{name}", before="changed",
                                   after="as locked", detail="files differ from RECORD")
                            for name in changed))

    def apply(self, ctx: StepContext, tx: Transaction) -> None:
        from envforge.host.wheelinstall import install_wheels, target_scheme
        from envforge.host.wheelremove import remove_distributions

        drift = _drift(ctx)
        names = {canonicalize_name(item.split(":")[0]) for item in drift.modified}
        files = [f for f in ctx.lock.pypi if canonicalize_name(f.name) in names]
        wheels = ctx.sources.pypi_wheels(ctx, files)  # all verified before a removal
        python = Path(ctx.layout.python)
        if drift.extra:  # a module two of them install stays for the other
            remove_distributions(target_scheme(python, memo=scheme_memo(ctx)),
                                 [item.split()[0] for item in drift.extra])
        if wheels:
            skipped: Counter[str] = Counter()
            install_wheels(wheels, python, cache=unpacked_cache(ctx), schemes=scheme_memo(ctx),
                           skipped=skipped)
            say_skipped_pycache(ctx, skipped)
        left = _drift(ctx)
        if left.extra or left.modified:
            raise StepError(f"sync left {left.summary()} in {ctx.prefix}")
