"""``apply --sync``: the environment's PyPI packages brought back to exactly the lock.

Distributions the lock does not name are uninstalled and locked ones whose files changed
(against their RECORD) are reinstalled from the same hashed files; other versions and missing
ones are the PyPI step's. Everything happens inside the prefix, which is envforge's own
(rollback removes it whole), so nothing here needs a backup.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from packaging.utils import canonicalize_name

from envforge.drift import Drift, find_drift
from envforge.errors import StepError
from envforge.host import proc
from envforge.host.fetch import FileRef, cache_path, obtain
from envforge.journal import Transaction
from envforge.lockfile import LockedPypiFile
from envforge.steps.base import Change, StepContext


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
        from envforge.host.uv import uv_binary, uv_environ

        drift = _drift(ctx)
        uv = uv_binary()
        python = str(ctx.layout.python)
        env = uv_environ(ctx.environ)
        extra = [item.split()[0] for item in drift.extra]
        if extra:
            proc.run([uv, "pip", "uninstall", "--python", python, *extra], env=env)
        names = {canonicalize_name(item.split(":")[0]) for item in drift.modified}
        files = [f for f in ctx.lock.pypi if canonicalize_name(f.name) in names]
        if not files:
            return
        with tempfile.TemporaryDirectory(prefix="envforge-sync-") as tmp:
            req = Path(tmp) / "requirements.txt"
            req.write_text("".join(f"{requirement_line(ctx, f)} --hash=sha256:{f.sha256}\n"
                                   for f in files), encoding="utf-8")
            args = [uv, "pip", "install", "--python", python, "--no-deps", "--require-hashes",
                    "--no-config", "-r", str(req), "--index-url", ctx.pypi_index]
            for f in files:
                args += ["--reinstall-package", f.name]
            proc.run(args, env=env)
        left = _drift(ctx)
        if left.extra or left.modified:
            raise StepError(f"sync left {left.summary()} in {ctx.prefix}")


def requirement_line(ctx: StepContext, f: LockedPypiFile) -> str:
    """A locked file for uv by its verified copy in envforge's cache (a git, local or
    find-links file always: the index has no such file), else the index's by name and
    version; uv checks the hash either way (--require-hashes)."""
    ref = FileRef(f.url, f.sha256, f.filename, f.size)
    if f.origin is not None:
        return f"{f.name} @ {obtain(ref, cache=ctx.dirs.cache).as_uri()}"
    cached = cache_path(ctx.dirs.cache, ref)
    return f"{f.name} @ {cached.as_uri()}" if cached.is_file() else f"{f.name}=={f.version}"
