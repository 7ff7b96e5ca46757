"""A project, the host and a run's options -> the ``StepContext`` every step reads.

plan, apply, run and verify all start here, so they resolve the prefix, the state folder
and the lock the same way. The host is read once, at this edge (``Host.current``); tests
pass their own.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from envforge.app.project import Project
from envforge.envlayout import layout_for
from envforge.errors import InputError
from envforge.lockfile import Lockfile
from envforge.packapi import Registry
from envforge.paths import EnvforgeDirs, envforge_dirs
from envforge.platforms import host_platform
from envforge.spec import PYPI_SIMPLE, Platform, Spec
from envforge.steps.base import StepContext, StepPack
from envforge.ui import UI


@dataclass(frozen=True, kw_only=True)
class Host:
    """The machine a run targets: its platform, environment variables and home folder."""

    platform: Platform
    environ: Mapping[str, str]
    home: Path

    @classmethod
    def current(cls, environ: Mapping[str, str] | None = None,
                home: Path | None = None) -> Host:
        return cls(platform=host_platform().name, environ=dict(os.environ if environ is None
                                                          else environ),
                   home=home or Path.home())


@dataclass(frozen=True, kw_only=True)
class Options:
    """One run's choices. With ``check_sources`` and a bundle or ``offline``, every locked
    file is checked to be at hand and unaltered before the context is returned."""

    prefix: Path | None = None
    artifacts: Mapping[str, Path] = field(default_factory=dict)  # role -> --artifact file
    bundle: Path | None = None
    offline: bool = False
    ui: UI = field(default_factory=UI)
    check_sources: bool = False
    references: bool = False  # recompute the lock's kernel references (NumPy): verify's
    lock_memo: bool = False  # the lock's check answered from envforge's cache (apply's)


LOCK_CHECKS = "lock-checked"  # the cache's folder of passed lock checks (host/lockmemo.py)


def default_prefix(spec: Spec, dirs: EnvforgeDirs, platform: Platform) -> Path:
    """conda: the conda installation's envs folder when there is one; else envforge's data."""
    pspec = spec.for_platform(platform)
    if pspec.environment.kind == "conda":
        from envforge.host.conda_install import conda_envs_dir

        envs = conda_envs_dir()
        if envs is not None:
            return envs / (pspec.environment.name or spec.name)
    return dirs.data / "envs" / spec.name


def env_id(prefix: Path) -> str:
    """The state folder's name: an environment is its prefix, whichever spec applied it."""
    label = re.sub(r"[^A-Za-z0-9._-]", "_", prefix.name)[:40] or "env"
    return f"{label}-{hashlib.sha256(str(prefix).encode()).hexdigest()[:10]}"


def state_dir_for(dirs: EnvforgeDirs, spec_name: str, prefix: Path) -> Path:
    """The prefix's state folder; one named after the spec by an older envforge still counts."""
    state = dirs.env_state(env_id(prefix))
    older = dirs.env_state(f"{spec_name}-{hashlib.sha256(str(prefix).encode()).hexdigest()[:10]}")
    return older if not state.exists() and older.is_dir() else state


def context_for(project: Project, host: Host, options: Options) -> StepContext:
    """Spec + fresh lock + host facts -> the context every step reads; refuses (exit 2 or 3)
    a spec that does not target the host, a stale or tampered lock, an unused --artifact.
    The spec picks the default prefix and is checked against the lock; the context is then
    the lock's alone (``locked_context``)."""
    spec, platform = project.spec, host.platform
    if platform not in spec.project.platforms:
        raise InputError(f"{project.spec_path}: this host is {platform}, which the spec does "
                         "not target")
    dirs = envforge_dirs(dict(host.environ))
    lock = project.fresh_lock(references=options.references,
                              memo=dirs.cache / LOCK_CHECKS if options.lock_memo else None)
    prefix = (options.prefix or default_prefix(spec, dirs, platform)).absolute()
    return locked_context(lock, project.lock_path, host, replace(options, prefix=prefix),
                          project.registry, spec_dir=project.spec_path.absolute().parent)


def locked_context(lock: Lockfile, lock_path: Path, host: Host, options: Options,
                   registry: Registry[StepPack], *, spec_dir: Path | None = None,
                   ) -> StepContext:
    """The context from a lock alone, already checked against its spec (by its hash, the
    spec's name and targets): nothing of the spec's content is read past that check, so
    what a plan does is the lock's. ``options.prefix`` is required here; ``spec_dir`` is
    where the lock's relative folders resolve (default: the spec's folder as the lock names
    it, relative to its project)."""
    from envforge.bundle.sources import LockedSources

    platform = host.platform
    if platform not in lock.platforms:
        raise InputError(f"{lock_path} has no {platform} section; run `envforge lock`")
    if options.prefix is None:
        raise ValueError("locked_context needs a prefix (context_for picks the default one)")
    dirs = envforge_dirs(dict(host.environ))
    prefix = options.prefix.absolute()
    plock = lock.platforms[platform]
    unused = sorted(set(options.artifacts) - {a.role for a in plock.artifacts})
    if unused:
        raise InputError(f"--artifact {unused[0]}: {lock_path} locks no {unused[0]} "
                         f"archive for {platform}, so the file would not be used; leave it out")
    ctx = StepContext(
        platform=platform, prefix=prefix, environ=dict(host.environ), home=host.home,
        state_dir=state_dir_for(dirs, lock.meta.spec_name, prefix),
        artifacts=dict(options.artifacts), lock=plock, registry=registry,
        layout=layout_for(platform, plock.environment, prefix, plock.python),
        dirs=dirs, ui=options.ui, bundle=options.bundle.resolve() if options.bundle else None,
        offline=options.offline, pypi_index=lock.meta.pypi_index or PYPI_SIMPLE,
        sources=LockedSources(),
        spec_dir=spec_dir or (lock_path.resolve().parent.parent / lock.meta.spec).parent,
    )
    if options.check_sources and (ctx.bundle is not None or options.offline):
        found = ctx.sources.preflight(ctx, lock)
        ctx = replace(ctx, artifacts=found, checked=frozenset(found))
    return ctx


def prepare(spec_path: Path, *, prefix: Path | None, artifacts: Mapping[str, Path],
            bundle: Path | None, offline: bool, ui: UI,
            environ: Mapping[str, str] | None = None, home: Path | None = None,
            locks_dir: Path | None = None, check_sources: bool = False,
            references: bool = False, lock_memo: bool = False) -> StepContext:
    """``context_for`` from a spec path and this host, the way the commands call it."""
    return context_for(Project.load(spec_path, locks_dir), Host.current(environ, home),
                       Options(prefix=prefix, artifacts=artifacts, bundle=bundle,
                               offline=offline, ui=ui, check_sources=check_sources,
                               references=references, lock_memo=lock_memo))
