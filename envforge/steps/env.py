"""The environment itself: a venv from a discovered (or Debian-unpacked) interpreter, written
directly where that Python's venv layout is known (``host/pyvenv``), or an
empty conda prefix for rattler to fill. The whole prefix is adopted by the journal, so
rollback removes it and nothing inside it needs backing up file by file."""

from __future__ import annotations

import os
from pathlib import Path

from envforge.errors import InputError, ResolveError, StepError
from envforge.host import proc
from envforge.host.interpreters import (
    Interpreter,
    find_interpreter,
    install_with_uv,
    query_version,
)
from envforge.host.pyvenv import make_venv
from envforge.journal import Journal, Transaction
from envforge.steps.actions import MakeTree, StepPlan, perform_all
from envforge.steps.base import Change, StepContext


class PrefixStep:
    """The environment's folder, adopted by the journal before anything is put in it."""

    name = "prefix"

    def plan(self, ctx: StepContext) -> StepPlan:
        prefix = Path(ctx.layout.prefix)
        if os.path.lexists(prefix):
            _ensure_ours(prefix, ctx)
            return StepPlan(step=self.name, changes=())
        return StepPlan(step=self.name, changes=(
            Change(action="create", target=str(prefix), before=None, after="folder",
                   detail="removed whole by rollback"),), actions=(MakeTree(path=str(prefix)),))

    def describe(self, ctx: StepContext) -> tuple[Change, ...]:
        return self.plan(ctx).changes

    def apply(self, ctx: StepContext, tx: Transaction) -> None:
        perform_all(self.plan(ctx), tx)


def _ensure_ours(prefix: Path, ctx: StepContext) -> None:
    """Nothing inside the prefix is backed up file by file (rollback removes the whole tree),
    so envforge only ever fills a folder its own journal created."""
    first = Journal(ctx.state_dir).original(prefix)
    if first is None or first.kind != "absent":
        raise InputError(f"{prefix} already exists and envforge did not create it: choose "
                         "another --prefix, or move that folder away")


class EnvironmentStep:
    name = "environment"

    def describe(self, ctx: StepContext) -> tuple[Change, ...]:
        prefix = Path(ctx.layout.prefix)
        if ctx.layout.kind == "conda":
            if (prefix / "conda-meta").is_dir():
                return ()
            return (Change(action="create", target=str(prefix), before=None, after="conda prefix",
                           detail=f"conda environment for Python {ctx.lock.python}"),)
        if _venv_matches(prefix, Path(ctx.layout.python), ctx.layout.python_minor):
            return ()
        source = ("Debian's python" + ctx.layout.python_minor if ctx.layout.kind == "debian"
                  else f"a discovered Python {ctx.layout.python_minor}")
        return (Change(action="create", target=str(prefix), before=None, after=f"venv (Python "
                       f"{ctx.layout.python_minor})", detail=f"from {source}"),)

    def apply(self, ctx: StepContext, tx: Transaction) -> None:
        prefix = Path(ctx.layout.prefix)
        if ctx.layout.kind == "conda":
            (prefix / "conda-meta").mkdir(exist_ok=True)
            return
        if _venv_matches(prefix, Path(ctx.layout.python), ctx.layout.python_minor):
            return
        if ctx.layout.kind == "debian":
            base = Path(ctx.layout.debian_python)
            if not base.is_file():
                raise StepError(f"Debian's Python is not unpacked at {base}; "
                                "the Debian packages step must run first")
            # Debian's own packages (pygpu, scipy) live in its dist-packages: keep them visible.
            proc.run([base, "-m", "venv", "--without-pip", "--system-site-packages", prefix])
        else:
            interpreter = _interpreter(ctx)
            ctx.ui.info(f"Python {interpreter.version} from {interpreter.found_by}: "
                        f"{interpreter.executable}")
            if make_venv(interpreter.executable, interpreter.version, prefix):
                return  # links to the interpreter just asked: the installer runs it next
            proc.run([interpreter.executable, "-m", "venv", "--without-pip", prefix])
        found = query_version(Path(ctx.layout.python))
        if found is None or found.minor != ctx.layout.python_minor:
            raise StepError(f"the new environment's Python at {ctx.layout.python} does not run "
                            f"as Python {ctx.layout.python_minor}")


def _interpreter(ctx: StepContext) -> Interpreter:
    """A discovered interpreter; failing that, and only online, one uv installs."""
    minor = ctx.layout.python_minor
    try:
        return find_interpreter(minor, environ=dict(ctx.environ), home=ctx.home,
                                cache=ctx.dirs.cache)
    except StepError as missing:
        if ctx.offline or ctx.bundle is not None:
            raise
        try:
            return install_with_uv(minor, ctx.environ)
        except (StepError, ResolveError) as failed:
            raise StepError(f"{missing}; {failed}") from None


def _venv_matches(prefix: Path, python: Path, minor: str) -> bool:
    """A venv of Python ``minor`` with its interpreter: venv writes pyvenv.cfg before it
    links the interpreter, so a signal in between leaves a folder to be made again."""
    cfg = prefix / "pyvenv.cfg"
    if not cfg.is_file() or not python.is_file():
        return False
    for line in cfg.read_text(encoding="utf-8").splitlines():
        key, _, value = line.partition("=")
        if key.strip() in ("version", "version_info") and value.strip().startswith(minor + "."):
            return True
    return False
