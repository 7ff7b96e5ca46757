"""A spec's lock as what doctor expects of this host. Pure: the models in, Expected out."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Protocol

from envforge.doctor.facts import Expected
from envforge.lockfile import Expectations, Lockfile
from envforge.packapi import Pack, Registry
from envforge.spec import Platform, Spec


class SettingsPack(Pack, Protocol):
    """What doctor expects of a pack the lock holds: its settings as the lock gives them."""

    def lock_settings(self, expect: Expectations) -> Mapping[str, str]: ...


def expected_from_lock(spec: Spec, lock: Lockfile, platform: Platform, prefix: Path,
                       packs: Registry[SettingsPack]) -> Expected | None:
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
                  for pack in packs.locked(expect.packs)},
        compiler_threads=pspec.compiler.threads if pspec.compiler else None)
