"""Which no-op applies and statuses get a stamp (``envforge/host/noopstamp.py``), and of
which paths.

Only a plain ``apply --yes`` (or ``--offline``, whose stamp also holds every cache file the
offline check read) whose steps all observe files is stamped: a bundle, --artifact, --sync
(which reads every RECORD hash), --json, or a step that asks the host (CUDA toolkits,
compilers, the Windows registry) always takes the real path. (``status``,
which only reads files, is stamped whenever it succeeds: ``app.status.stamped``.)
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from envforge import __version__
from envforge.envlayout import COMPILEDIR_IN_ENV
from envforge.host import noopcheck, noopstamp
from envforge.platforms import PLATFORMS, Os
from envforge.steps.base import Step, StepContext, WatchesFiles
from envforge.steps.debs import MARKERS, configured, marker_path


def eligible(args: argparse.Namespace) -> bool:
    return (getattr(args, "command", None) == "apply" and bool(getattr(args, "yes", False))
            and isinstance(getattr(args, "words", None), list)
            and not any(getattr(args, name, None) for name in
                        ("dry_run", "sync", "bundle", "artifact", "json")))


@dataclass
class NoopProbe:
    """Begun before the real path reads anything; saved only if it found nothing to do."""

    args: argparse.Namespace
    spec_path: Path
    lock_path: Path
    start_ns: int = field(default_factory=time.time_ns)
    links: dict[str, str] = field(default_factory=dict)
    stamp: Path | None = None

    def __post_init__(self) -> None:
        self.links = noopstamp.resolved([str(self.spec_path), str(self.lock_path)])
        if eligible(self.args):
            self.stamp = noopstamp.stamp_path(self.args.words, cwd=str(Path.cwd()),
                                              environ=os.environ, version=__version__)
            noopstamp.invalidate(self.stamp)

    def save(self, ctx: StepContext, steps: Sequence[Step], message: str) -> None:
        compiler = ctx.inputs.compiler
        gcc = compiler is not None and compiler.kind == "gcc" \
            and ctx.lock.expect.cuda is None and PLATFORMS[ctx.platform].os is Os.LINUX
        core = noopstamp.ELIGIBLE_STEPS | ({"compiler"} if gcc else set())
        files = [s for s in steps if s.name not in core]
        if self.stamp is None or not all(isinstance(s, WatchesFiles) for s in files):
            return
        watched = [str(path) for s in files if isinstance(s, WatchesFiles)
                   for path in s.watched(ctx)]
        from envforge.steps.compiler import gxx_search_paths

        gxx = gxx_search_paths(ctx) if "compiler" in {s.name for s in steps} else []
        prefix = Path(ctx.layout.prefix)
        site = Path(ctx.layout.site_packages)
        skip = [prefix / COMPILEDIR_IN_ENV]
        deb_root = Path(ctx.layout.deb_root)
        state = ctx.state_dir
        # both the stamp and the record stat these (each a walk of a folder tree): read once
        statted = [*noopstamp.own_files(), *gxx, *(_offline_reads(ctx) if ctx.offline else ())]
        made = [str(path) for _, path in configured(ctx)]  # a Debian package's config
        paths = [str(self.spec_path), str(self.lock_path), str(ctx.dirs.state), str(state),
                 *(str(state / n) for n in ("applied.json", "journal.jsonl")),
                 *watched, os.path.realpath(ctx.layout.python), *made,
                 *noopstamp.environment_files(prefix, site, skip=skip,
                                              debian=(deb_root, deb_root / MARKERS)),
                 *statted]
        quiet = bool(getattr(self.args, "quiet", False))
        loose = noopstamp.loose_folders(prefix, site, skip)
        noopstamp.write(self.stamp, start_ns=self.start_ns, paths=paths, links=self.links,
                        environ=os.environ, message=message, quiet=quiet, loose=loose)
        self._record(ctx, [str(Path(p).absolute()) for p in paths], loose, watched=watched,
                     statted=statted, made=made)

    def _record(self, ctx: StepContext, stamp_paths: list[str], loose: dict[str, object], *,
                watched: list[str], statted: list[str], made: list[str]) -> None:
        """The record ``host/noopcheck.py`` decides from the next time, for the steps the
        stamp takes (the core's that observe files, g++ found on PATH, the packs'
        ``WatchesFiles``): what their plans read, as that module's docstring lists it."""
        from envforge.steps.activation import activation_files

        written, blocks = activation_files(ctx)
        state, prefix = ctx.state_dir, str(ctx.prefix)
        spec, lock = str(self.spec_path.absolute()), str(self.lock_path.absolute())
        python = str(ctx.layout.python)
        noopcheck.save(
            noopcheck.record_path({"spec": self.args.spec, "prefix": self.args.prefix,
                                   "locks_dir": self.args.locks_dir,
                                   "offline": self.args.offline},
                                  cwd=str(Path.cwd()), environ=os.environ, version=__version__),
            start_ns=self.start_ns, environ=os.environ, version=__version__, prefix=prefix,
            state=str(state), site=str(ctx.layout.site_packages), links=[spec, lock, python],
            digested=[spec, lock, str(state / "applied.json"), str(state / "journal.jsonl"),
                      str(ctx.prefix / "pyvenv.cfg"), *map(str, written), *map(str, blocks),
                      *watched],
            statted=[os.path.realpath(python), *statted],
            exists=[prefix, python,
                    *(str(marker_path(Path(ctx.layout.deb_root), d)) for d in ctx.lock.deb),
                    *made],
            stamp_paths=stamp_paths, loose=loose)


def _offline_reads(ctx: StepContext) -> list[str]:
    """What ``--offline``'s check of the cache read: each locked file and each wheel built
    from a locked sdist, with the folders holding them (a file added beside one counts)."""
    from envforge.bundle.buildcache import build_key, entry_dir
    from envforge.host.fetch import FileRef, cache_path

    cache = ctx.dirs.cache
    refs = [FileRef(f.url, f.sha256, f.filename, f.size) for f in ctx.lock.pypi]
    refs += [FileRef(c.url, c.sha256, c.filename, c.size) for c in ctx.lock.conda]
    refs += [FileRef(d.url, d.sha256, d.filename, d.size) for d in ctx.lock.deb]
    refs += [FileRef(a.url or "", a.sha256, a.filename, a.size) for a in ctx.lock.artifacts]
    files = [cache_path(cache, ref) for ref in refs]
    for f in ctx.lock.pypi:
        if f.kind == "sdist":
            folder = entry_dir(cache, f.sha256,
                               build_key(ctx.lock.build, ctx.lock.python, ctx.platform,
                                         ctx.lock.deb))
            files += [p for p in folder.iterdir() if p.is_file()] if folder.is_dir() else []
    return [str(p) for f in files for p in (f.parent, f)]
