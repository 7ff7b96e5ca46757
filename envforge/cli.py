"""Arguments -> one call into envforge.commands; no logic lives here."""

from __future__ import annotations

import gc
import io
import os
import sys
from pathlib import Path

from envforge import __version__

TYPE_CHECKING = False  # typing's, spelt here: importing typing costs start-up 3 ms
if TYPE_CHECKING:  # argparse and the rest load after the no-op fast path has had its turn
    import argparse
    from collections.abc import Callable, Sequence
    from typing import NoReturn

    from envforge.ui import UI

    Handler = Callable[[argparse.Namespace, UI], int]
# envforge.spec.PLATFORMS, spelt here so that start-up does not import pydantic (a test
# keeps the two equal)
PLATFORMS = ("win-64", "linux-64")


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="one JSON document on stdout")
    parser.add_argument("-q", "--quiet", action="store_true", help="print only errors")


def _cmd_lock(args: argparse.Namespace, ui: UI) -> int:
    from envforge.commands.lock_command import run_lock

    return run_lock([Path(p) for p in args.specs], platforms=args.platform or (),
                    check=args.check, upgrade=args.upgrade,
                    upgrade_packages=args.upgrade_package, locks_dir=args.locks_dir, ui=ui)


def _cmd_export(args: argparse.Namespace, ui: UI) -> int:
    from envforge.app.packs import installed_packs
    from envforge.export import export_lock
    from envforge.host.outputs import check_output
    from envforge.inputfile import check_regular_input
    from envforge.lockfile import load_lock

    check_regular_input(args.lock, "lock")
    if args.output:
        check_output(Path(args.output), inputs=[args.lock])
    text = export_lock(load_lock(args.lock, installed_packs()), args.format, args.platform)
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
        ui.success(f"wrote {args.output}")
    else:
        sys.stdout.write(text)
    return 0


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser; with ``command``, only that command's module is imported; with none or
    an unknown one, none is (``"*"``: all of them)."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="envforge", description="Declarative, locked, verifiable legacy GPU stacks.")
    parser.add_argument("--version", action="version", version=f"envforge {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    lock = sub.add_parser("lock", help="resolve specs into lockfiles (locks/NAME.lock)")
    lock.add_argument("specs", nargs="*", help="spec files (default: specs/*.toml)")
    lock.add_argument("--platform", action="append", choices=PLATFORMS,
                      help="lock only this platform (repeatable)")
    mode = lock.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true",
                      help="exit 0 if each lock satisfies its spec, 3 if stale (no network)")
    mode.add_argument("-U", "--upgrade", action="store_true",
                      help="resolve afresh: without it, the lock on disk's versions are kept "
                           "where the spec allows them")
    mode.add_argument("-P", "--upgrade-package", action="append", default=[], metavar="NAME",
                      help="resolve again keeping the lock's versions of all but NAME "
                           "(repeatable)")
    lock.add_argument("--locks-dir", type=Path, default=None, help="where locks go")
    _common(lock)
    lock.set_defaults(handler=_cmd_lock)

    export = sub.add_parser("export", help="write a lock in another tool's format")
    export.add_argument("lock", type=Path)
    export.add_argument("--format", required=True,
                        choices=("conda-lock", "pylock", "requirements", "explicit"))
    export.add_argument("--platform", choices=PLATFORMS)
    export.add_argument("-o", "--output", help="file to write (default: stdout)")
    _common(export)
    export.set_defaults(handler=_cmd_export)

    from envforge.commands import BUILT_IN, COMMAND_MODULES, registry, summaries

    if command not in (*BUILT_IN, *COMMAND_MODULES, "*"):
        summaries(sub)
    for register in registry(command):
        register(sub, _common)
    return parser


def _tolerant_streams() -> None:
    """A Windows pipe's code page (cp1252) cannot encode all that envforge prints (→, …):
    such characters are replaced rather than failing the command."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper) and stream.errors == "strict":
            stream.reconfigure(errors="replace")


def entry() -> NoReturn:
    """The ``envforge`` command's (and ``python -m envforge``'s): ``main``, then the process
    ends without the interpreter's last full collection. Every object lives until the exit
    anyway; frozen, they are left out of it, as of the command's own collections (walking
    them all took 50-60 ms of a 0.4 s warm apply). Objects still die by reference count, and
    atexit handlers run."""
    code = main()
    gc.freeze()
    raise SystemExit(code)


def main(argv: Sequence[str] | None = None) -> int:
    _tolerant_streams()
    words = list(sys.argv[1:] if argv is None else argv)
    if words == ["--version"]:
        sys.stdout.write(f"envforge {__version__}\n")
        return 0
    if words[:1] in (["apply"], ["status"]):  # decided from stat data, before heavy imports
        from envforge.host.noopstamp import try_noop

        done = try_noop(words, cwd=str(Path.cwd()), environ=os.environ, version=__version__)
        if done is None and words[0] == "apply":  # no stamp holds: decided again, cheaply
            from envforge.host.noopcheck import try_check

            done = try_check(words, cwd=str(Path.cwd()), environ=os.environ,
                             version=__version__)
        if done is not None:
            return done
        if words[0] == "apply":  # an sdist's download, then its build: the longest chain
            from envforge.host.headstart import start

            start(words, cwd=str(Path.cwd()), environ=os.environ)
    command = next((w for w in words if not w.startswith("-")), None)
    try:
        return _run(_parse(words, command), words)
    finally:
        gc.unfreeze()  # for a caller that goes on (the tests call main in their process)


def _parse(words: list[str], command: str | None) -> argparse.Namespace:
    """The arguments, parsed by a parser that imports the command's modules with the cyclic
    garbage collector paused: that import ran some 70 collections (5 ms of apply's start-up)
    that found next to nothing to free, as modules and classes live until the process ends;
    frozen after, they are left out of the command's own collections too."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        args = build_parser(command).parse_args(words)
    finally:
        gc.freeze()
        if enabled:
            gc.enable()
    args.words = words
    return args


def _run(args: argparse.Namespace, words: list[str]) -> int:
    from envforge.errors import EnvforgeError, ExitCode, host_refusal
    from envforge.ui import UI

    handler: Handler
    ui = UI(json=getattr(args, "json", False), quiet=getattr(args, "quiet", False))
    handler = args.handler
    if args.command == "status":
        from envforge.app.status import stamped

        handler = stamped(handler)
    try:
        return handler(args, ui)
    except EnvforgeError as exc:
        ui.error(str(exc))
        return int(exc.exit_code)
    except KeyboardInterrupt:
        resume = "; `envforge apply` again resumes, `envforge rollback` undoes" \
            if args.command == "apply" else ""
        ui.error(f"interrupted{resume}")
        return int(ExitCode.INTERRUPTED)
    except Exception as exc:
        message = host_refusal(exc) if isinstance(exc, OSError) else None
        if message is not None:
            ui.error(message)
            return int(ExitCode.FAILED)
        log = _log_unexpected(words)
        where = f"; the traceback is in {log}" if log else ""
        ui.error(f"unexpected error, please report it: {type(exc).__name__}: {exc}{where}")
        return int(ExitCode.FAILED)


def _log_unexpected(words: Sequence[str]) -> Path | None:
    """The current exception's traceback, with the command and versions, written to
    envforge's cache (pre-commit's error_handler does the same); None where that cannot be
    written, and the traceback goes to stderr instead."""
    import platform
    import traceback

    from envforge.paths import envforge_dirs

    text = (f"envforge {__version__}, Python {platform.python_version()} on "
            f"{platform.platform()}\n$ envforge {' '.join(words)}\n{traceback.format_exc()}")
    log = envforge_dirs().cache / "envforge.log"
    try:
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text(text, encoding="utf-8")
    except OSError:
        sys.stderr.write(text)
        return None
    return log
