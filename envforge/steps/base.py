"""What every apply step is: a name, a side-effect-free ``describe`` and an idempotent ``apply``.

``describe`` is check mode as a contract: it reports what ``apply`` would change and
changes nothing. ``apply`` makes every change through a ``Transaction``, so it is
journaled and undoable, and applying twice changes nothing the second time.

Steps that place files also ``plan`` (``steps/actions.PlansActions``): typed actions with
the state each expects to find (``WantFile``/``WantLink`` rows become copies and links), which
the executor performs exactly, so what the plan showed is what is done; their ``describe``
and ``apply`` are that plan's rows and actions. A step whose work is a tool's (venv, the
installer, rattler) is planned as one ``RunStep``: its own ``apply``, run by the executor.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol, runtime_checkable

from envforge.envlayout import EnvLayout
from envforge.errors import StaleLockError
from envforge.host.archives import sha256_file, verify_artifact
from envforge.lockfile import (
    ApplyInputs,
    Expectations,
    LockedPypiFile,
    Lockfile,
    LockPack,
    PlatformLock,
)
from envforge.packapi import Registry
from envforge.paths import EnvforgeDirs
from envforge.spec import PYPI_SIMPLE, CudaSection, Frozen, Platform, SpecPack
from envforge.ui import UI

if TYPE_CHECKING:
    from envforge.envvars import EnvEdit
    from envforge.host.fetch import FileRef, Progress
    from envforge.host.wheelinstall import WheelToInstall
    from envforge.journal import Transaction


class Change(Frozen):
    """One thing ``apply`` would change; ``before``/``after`` are ``sha256:<hex>``, link targets,
    values or None (absent)."""

    action: Literal["create", "replace", "remove", "link", "set"]
    target: str
    before: str | None
    after: str | None
    detail: str = ""


class Sources(Protocol):
    """Where a run's locked files come from, verified: a bundle, envforge's cache or the
    network. ``bundle/sources.LockedSources`` implements it and the app layer injects it, so
    steps (and host/) never read a bundle's layout. Each call reads the context it is given
    (its bundle, cache and ``offline``)."""

    def obtain(self, ctx: StepContext, ref: FileRef, *, offline: bool = False,
               progress: Progress | None = None) -> Path: ...

    def pypi_wheels(self, ctx: StepContext,
                    files: Sequence[LockedPypiFile]) -> list[WheelToInstall]: ...

    def preflight(self, ctx: StepContext, lock: Lockfile) -> dict[str, Path]:
        """The artifacts by role, each already hashed against the lock."""

    def prefetch(self, ctx: StepContext) -> dict[str, Path]: ...


@dataclass(frozen=True)
class Facts:
    """What a step found that later steps read. The plan and the executor hand each step's
    findings (``FindsFacts``) to the steps after it, so no one calls into another step's code
    for them, and the context stays frozen."""

    cuda_root: Path | None = None  # the selected CUDA toolkit: the CUDA step finds it


@dataclass(frozen=True)
class CompilerNeed:
    """What a framework asks of the host's C++ compiler, and how messages name it (a pack's
    ``compiler_need``; the compiler step reads it)."""

    framework: str  # "Theano"
    setting: str  # where the spec names a compiler: "[theano] cxx"
    cxx: str | None = None  # the compiler that setting names
    # why nvcc's gcc limit does not touch it, if it does not
    nvcc_note: str = ""


class StepPack(SpecPack, LockPack, Protocol):
    """What planning and applying ask of a mounted pack: its steps, its environment edits
    and the compiler it builds with; and its spec section and lock table, to read a
    bundle's copies."""

    def steps(self, ctx: StepContext) -> Sequence[Step]: ...

    def env_edits(self, ctx: StepContext) -> Sequence[EnvEdit]: ...

    def compiler_need(self, expect: Expectations) -> CompilerNeed | None: ...


@dataclass(frozen=True, kw_only=True)
class StepContext:
    """What steps know about the target; keyword-only, so fields can be added in any place.

    It holds no spec: what the spec decides, steps and packs read from the lock (its
    ``apply`` table, its expectations), so an apply needs the lock alone."""

    platform: Platform
    prefix: Path
    environ: Mapping[str, str]
    home: Path
    state_dir: Path
    artifacts: Mapping[str, Path]  # role ("cudnn", ...) -> the file the user supplied
    # roles whose file this run has already hashed against the lock (bundle/offline preflight),
    # so a multi-gigabyte archive is not read again to plan its step
    checked: frozenset[str] = frozenset()
    lock: PlatformLock
    registry: Registry[StepPack]  # the packs; the mounted ones: registry.locked(lock.expect.packs)
    layout: EnvLayout
    dirs: EnvforgeDirs
    sources: Sources
    ui: UI = field(default_factory=UI)
    bundle: Path | None = None
    offline: bool = False
    pypi_index: str = PYPI_SIMPLE
    facts: Facts = field(default_factory=Facts)  # from the steps before this one
    cuda_search: tuple[Path, ...] | None = None  # where to look for toolkits (tests: a tmp tree)
    # the spec's folder, where the lock's relative folders (its ``pythonpath``) resolve;
    # None: the working folder
    spec_dir: Path | None = None

    @property
    def inputs(self) -> ApplyInputs:
        """The lock's ``apply`` table; a lock of format 2 has none and is stale to apply."""
        if self.lock.apply is None:
            raise StaleLockError("the lock's format (2) does not record what apply reads of "
                                 "the spec; run `envforge lock SPEC`")
        return self.lock.apply

    @property
    def cuda(self) -> CudaSection | None:
        """The CUDA release the lock wants (``expect.cuda``), None where it wants none."""
        wanted = self.lock.expect.cuda
        return None if wanted is None else CudaSection(version=wanted)

    @property
    def cuda_root(self) -> Path | None:
        """The selected toolkit; None until the CUDA step found one."""
        return self.facts.cuda_root


class Step(Protocol):
    @property
    def name(self) -> str: ...

    def describe(self, ctx: StepContext) -> tuple[Change, ...]: ...

    def apply(self, ctx: StepContext, tx: Transaction) -> None: ...


@runtime_checkable
class FindsFacts(Protocol):
    """A step whose findings later steps read (the CUDA step's toolkit)."""

    def facts(self, ctx: StepContext) -> Facts: ...


@runtime_checkable
class WatchesFiles(Protocol):
    """A step whose plan reads only these files (besides the lock and the environment): the
    no-op stamp records their stat data, so an apply that finds none of them changed knows,
    before importing what planning needs, that the step has nothing to do."""

    def watched(self, ctx: StepContext) -> Sequence[Path]: ...


def after(step: Step, ctx: StepContext) -> StepContext:
    """The context for the steps after ``step``: with what it found, if it finds anything."""
    return replace(ctx, facts=step.facts(ctx)) if isinstance(step, FindsFacts) else ctx


@dataclass(frozen=True)
class WantFile:
    """``path`` should be a regular file with ``source``'s bytes and mode."""

    path: Path
    source: Path


@dataclass(frozen=True)
class WantLink:
    """``path`` should be a symbolic link whose target reads exactly ``target``."""

    path: Path
    target: str


Want = WantFile | WantLink


def supplied_artifact(ctx: StepContext, role: str, sha256: str) -> Path | None:
    """The file given for ``role`` (``--artifact``, a bundle's, the cache's), checked against
    the lock's sha256 unless this run has hashed it already (``ctx.checked``); None when none
    was given. The one place a step reads an artifact, so a multi-gigabyte archive is hashed
    once per apply whichever step takes it."""
    path = ctx.artifacts.get(role)
    if path is not None and role not in ctx.checked:
        verify_artifact(path, sha256)
    return path


def state_of(path: Path) -> str | None:
    """A path's state as ``Change.before`` shows it: ``sha256:<hex>``, ``link:<target>``,
    ``folder``, or None when absent."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(st.st_mode):
        return f"link:{path.readlink()}"
    if stat.S_ISDIR(st.st_mode):
        return "folder"
    return f"sha256:{sha256_file(path)}"


def want_change(want: Want) -> Change | None:
    """The row for bringing ``want.path`` to its wanted state; None when it is there."""
    before = state_of(want.path)
    if isinstance(want, WantLink):
        if before == f"link:{want.target}":
            return None
        return Change(action="link", target=str(want.path), before=before, after=want.target)
    after = f"sha256:{sha256_file(want.source)}"
    if before is None:
        return Change(action="create", target=str(want.path), before=None, after=after)
    want_mode = stat.S_IMODE(want.source.stat().st_mode)
    if before == after:
        have_mode = stat.S_IMODE(os.lstat(want.path).st_mode)
        if have_mode == want_mode:
            return None
        return Change(action="replace", target=str(want.path), before=before, after=after,
                      detail=f"mode {have_mode:o} -> {want_mode:o}")
    return Change(action="replace", target=str(want.path), before=before, after=after)


def unpacked_cache(ctx: StepContext) -> Path:
    """Where unpacked wheels and debs are kept (``host/unpacked.py``), beside the archives."""
    return ctx.dirs.cache / "unpacked"


def scheme_memo(ctx: StepContext) -> Path:
    """Where a venv's install folders are kept (``host.wheelinstall.target_scheme``)."""
    return ctx.dirs.cache / "schemes"


def text_digest(text: str | None) -> str | None:
    """A short content hash for a plan's before/after column; None for an absent file."""
    return None if text is None else "sha256:" + hashlib.sha256(text.encode()).hexdigest()[:16]
