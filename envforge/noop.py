"""Which no-op applies and statuses get a stamp (``envforge/host/noopstamp.py``), and of
which paths.

Only a plain ``apply --yes`` whose steps all observe files is stamped: a bundle, --offline,
--artifact, --sync (which reads every RECORD hash), --json, or a step that asks the host
(CUDA toolkits, compilers, the Windows registry) always takes the real path. (``status``,
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
from envforge.host import noopstamp
from envforge.platforms import PLATFORMS, Os
from envforge.steps.base import Step, StepContext, WatchesFiles


def eligible(args: argparse.Namespace) -> bool:
    return (getattr(args, "command", None) == "apply" and bool(getattr(args, "yes", False))
            and isinstance(getattr(args, "words", None), list)
            and not any(getattr(args, name, None) for name in
                        ("dry_run", "sync", "bundle", "offline", "artifact", "json")))


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
        names = {s.name for s in steps}
        from envforge.steps.compiler import gxx_search_paths

        prefix = Path(ctx.layout.prefix)
        site = Path(ctx.layout.site_packages)
        state = ctx.state_dir
        paths = [str(self.spec_path), str(self.lock_path), str(ctx.dirs.state), str(state),
                 *(str(state / n) for n in ("applied.json", "journal.jsonl")),
                 *watched, os.path.realpath(ctx.layout.python),
                 *noopstamp.environment_files(prefix, site, skip=[prefix / COMPILEDIR_IN_ENV]),
                 *noopstamp.own_files(), *(gxx_search_paths(ctx) if "compiler" in names else ())]
        quiet = bool(getattr(self.args, "quiet", False))
        noopstamp.write(self.stamp, start_ns=self.start_ns, paths=paths, links=self.links,
                        environ=os.environ, message=message, quiet=quiet)
