"""A spec's lock as what doctor expects of this host. Pure: the models in, Expected out."""

from __future__ import annotations

from pathlib import Path

from envforge.doctor.facts import Expected
from envforge.lockfile import Lockfile
from envforge.packs import locked_packs
from envforge.spec import Platform, Spec


def expected_from_lock(spec: Spec, lock: Lockfile, platform: Platform,
                       prefix: Path) -> Expected | None:
    """None when the lock has nothing for this platform."""
    plock = lock.platforms.get(platform)
    if plock is None:
        return None
    pspec = spec.for_platform(platform)
    expect = plock.expect
    return Expected(
        spec=spec.source, platform=platform, prefix=str(prefix), env_kind=plock.environment,
        cuda=expect.cuda, cudnn=expect.cudnn, versions=dict(expect.versions),
        device=expect.device,
        settings={pack.name: {k: v.replace("{prefix}", str(prefix))
                              for k, v in pack.lock_settings(expect).items()}
                  for pack in locked_packs(expect)},
        compiler_threads=pspec.compiler.threads if pspec.compiler else None)
