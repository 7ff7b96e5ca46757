"""A no-op apply (or status) decided from stat data alone, before the modules a real one
needs load.

uv's and pixi's fast paths are the model: the real path, having found nothing to do, writes
a stamp of what it read, and the next run with the same words in the same folder and
environment compares that stamp with the file system. The stamp holds (inode, size, mode,
mtime, ctime) of every path the real path's no-op decision rests on: the spec, the lock,
the prefix's state files, every folder and file in the environment outside its packages'
code and files (site-packages' own entries, the ``*.dist-info`` folders and their RECORDs;
the Debian tree's folders, links and markers: ``environment_files``), the
``.theanorc`` outside it, the base interpreter, and envforge's own modules and knowledge.

``envforge status`` uses the same stamps: its real path records everything it printed and
every path its answer rests on (envforge's state, each record's spec and lock, and in each
environment the ``*.dist-info`` folders and every file their RECORD lists, whose hashes the
drift check reads), and the next ``status`` with the same words prints that again while
every stat holds. An edited file has a new ctime, so drift is never replayed stale.

Why a match means "nothing to do":

- A file's content cannot change without its ctime changing (nothing can set ctime), and an
  entry cannot be added to, removed from or renamed in a folder without the folder's mtime
  and ctime changing: so every file the real path reads, and every listing it takes
  (``*.dist-info`` names), is what it was.
- Time stamps are coarse (a kernel tick): a file changed in the same tick as it was read
  could keep its stamp. As git does for its index ("racily clean"), a stamp whose entries
  changed less than ``RACY_NS`` before the stamp's own start is not trusted.
- The stamp's start is taken before the real path reads anything, so a change made while
  it ran has a later ctime and fails that test as well.
- The words, the working folder, envforge's version, the interpreter and the environment
  variables (less the few a shell changes on every command) are part of the key or the
  stamp; anything else differing falls through to the real path.

Using an environment touches it without changing what the real path decides: Python
writes ``__pycache__`` beside the modules it imports (site-packages' own ``six.py``'s among
them), uv writes its ``.lock`` in the prefix. So a folder inside the environment whose stat
moved still holds when its inode and mode are what they were and its listing is the
recorded one plus only such names (in site-packages: the same ``*.dist-info`` names, the
only ones the real path reads there); every recorded file is still checked whole.

Any mismatch, a missing or unreadable stamp, or a stamp of another format version falls
through to the real path, which writes a fresh stamp when it again finds nothing to do.
"""

# ruff: noqa: PTH113, PTH114, PTH115, PTH118, PTH120, PTH208
# (os.path on str throughout: the fast path stats hundreds of paths before the interpreter
# has warmed up, and a Path object per path costs more than the stat itself)

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

TYPE_CHECKING = False  # typing's, spelt here: the fast path spares typing's import (3 ms)
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

try:  # the built-in BLAKE2: hashlib's import loads OpenSSL's binding (4-6 ms), more than
    from _blake2 import blake2b  # the whole stamp check; hashlib's blake2b is this one
except ImportError:  # pragma: no cover - a Python built without it
    from hashlib import blake2b

# envforge.platforms' host_platform() reads sys.platform the same way; importing it (enum,
# dataclasses, typing) would cost the fast path more than all its stat calls
ON_LINUX = sys.platform.startswith("linux")

FORMAT = 3  # 2: stats grouped by folder, BLAKE2 digests; 3: the environment's folders loose
RACY_NS = 1_000_000_000  # entries changed within a second of the stamp's start: not trusted
VOLATILE = frozenset({"_", "OLDPWD", "SHLVL", "PWD"})  # a shell changes these per command
# the core's steps that observe only files; a pack's step is eligible by saying which
# (steps.base.WatchesFiles)
ELIGIBLE_STEPS = frozenset({"prefix", "debian-packages", "environment", "pypi-packages",
                            "activation"})

# names other tools write into an environment that no step reads: Python's bytecode, uv's lock
WRITTEN_BY_USE = frozenset({"__pycache__", ".lock"})

Stat = tuple[int, int, int, int, int]


def stat_of(path: str) -> Stat | None:
    """(inode, size, mode, mtime, ctime) of the path itself (links not followed); None if
    it does not exist."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mode, st.st_mtime_ns, st.st_ctime_ns)


def environment_digest(environ: Mapping[str, str]) -> str:
    items = sorted((k, v) for k, v in environ.items() if k not in VOLATILE)
    return blake2b(json.dumps(items).encode("utf-8"), digest_size=32).hexdigest()


def cache_root(environ: Mapping[str, str]) -> Path:
    """envforge's cache folder, as envforge.paths finds it (kept light: no platformdirs on
    Linux). Stamps live there, not among the state they describe: writing one must not
    change what it records."""
    home = environ.get("ENVFORGE_HOME")
    if home:
        return Path(home) / "cache"
    if ON_LINUX:  # platformdirs' rule there; importing it costs 5-25 ms
        xdg = environ.get("XDG_CACHE_HOME", "").strip()
        base = Path(xdg) if xdg else Path("~/.cache").expanduser()
        return base / "envforge"
    import platformdirs

    return Path(platformdirs.user_cache_dir("envforge"))


def stamp_path(words: Sequence[str], *, cwd: str, environ: Mapping[str, str],
               version: str) -> Path:
    key = json.dumps([FORMAT, version, sys.executable, cwd, list(words)])
    digest = blake2b(key.encode("utf-8"), digest_size=16).hexdigest()
    return cache_root(environ) / "noop" / f"{digest}.json"


def own_files() -> list[str]:
    """envforge's modules and knowledge, and the folders holding them: a changed envforge
    may decide differently."""
    return package_files(str(Path(__file__).resolve().parent.parent))


def package_files(root: str) -> list[str]:
    """A package's folder, its folders and its modules and TOML files (not ``__pycache__``)."""
    found = [root]
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        found.extend(os.path.join(folder, d) for d in dirs)
        found.extend(os.path.join(folder, f) for f in files if f.endswith((".py", ".toml")))
    return found


def environment_files(prefix: Path, site_packages: Path, skip: Iterable[Path] = (),
                      debian: tuple[Path, Path] | None = None) -> list[str]:
    """What the real path's no-op decision reads inside an environment: every folder and
    entry, except inside site-packages, where it reads only the ``*.dist-info`` names and
    whether each holds a RECORD (the folder's own stat covers its listing), and inside the
    Debian tree (``debian``: its root and its markers' folder), where it reads the markers
    and the folders' listings (the library links it adds), so there the folders, links and
    markers count. The files of a wheel's
    ``*.dist-info`` and of a Debian package are hard links into envforge's cache: another
    environment's apply or rollback of the same package moves their ctime (a link made or
    removed) though nothing here changed. ``skip``: folders no step reads (Theano's compile
    cache). A package's code, and what using the environment writes (``WRITTEN_BY_USE``),
    are not read and do not count."""
    found: list[str] = []
    site, skipped = str(site_packages), {str(p) for p in skip}
    deb, markers = (str(debian[0]), str(debian[1])) if debian is not None else ("", "")
    for folder, dirs, files in os.walk(prefix):
        found.append(folder)
        dirs[:] = [d for d in dirs if os.path.join(folder, d) not in skipped
                   and d not in WRITTEN_BY_USE]
        files = [f for f in files if f not in WRITTEN_BY_USE]
        if folder == site:
            for info in (os.path.join(folder, d) for d in dirs if d.endswith(".dist-info")):
                record = os.path.join(info, "RECORD")  # one added or removed moves the folder
                found += [info, record] if os.path.isfile(record) else [info]
            dirs[:] = []
            continue
        if deb and folder != markers and (folder == deb or folder.startswith(deb + os.sep)):
            files = [f for f in files if os.path.islink(os.path.join(folder, f))]
        found.extend(os.path.join(folder, n) for n in [*dirs, *files])
    return found


def link_chain(path: str) -> list[str]:
    """The path, each link it leads through, and where it ends."""
    chain = [path]
    for _ in range(40):
        try:
            target = os.readlink(path)
        except OSError:
            break
        path = os.path.join(os.path.dirname(path), target)
        chain.append(path)
    return [*chain, os.path.realpath(path)]


def resolved(paths: Iterable[str]) -> dict[str, str]:
    """Where each given path leads: a repointed link on the way changes the answer."""
    return {p: os.path.realpath(p) for p in paths}


def write(path: Path, *, start_ns: int, paths: Iterable[str], links: Mapping[str, str],
          environ: Mapping[str, str], message: str = "", quiet: bool = False,
          output: tuple[str, str] | None = None, loose: Mapping[str, object] | None = None,
          ) -> None:
    """Record the stats of ``paths`` as they are now, with the message the no-op printed
    (apply) or everything it wrote to stdout and stderr (``output``: status, whose table
    depends on the terminal it was drawn for, recorded too); ``links`` are ``resolved`` as
    they were at ``start_ns``. A stamp that cannot be written only costs the next run its
    fast path. ``loose`` (``loose_folders``) names the environment whose folders a use may
    touch."""
    targets = dict(links)
    stats: dict[str, dict[str, Stat | None]] = {}  # folder -> name -> stat: half the bytes
    for p in dict.fromkeys([*paths, *targets.values()]):
        folder, name = os.path.split(p)
        stats.setdefault(folder, {})[name] = stat_of(p)
    document = {"format": FORMAT, "start_ns": start_ns, "environ": environment_digest(environ),
                "message": message, "quiet": quiet, "links": targets, "stats": stats,
                "loose": dict(loose or {})}
    if output is not None:
        document.update(output=list(output), terminal=terminal())
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(document), encoding="utf-8")
        tmp.replace(path)
    except OSError:
        return


def loose_folders(prefix: Path, site_packages: Path,
                  skip: Iterable[Path] = ()) -> dict[str, object]:
    """What ``write`` takes as ``loose``: the environment ``environment_files`` walked."""
    return {"prefix": str(prefix), "site": str(site_packages),
            "skip": sorted(Path(p).name for p in skip)}


def _used_folder(path: str, recorded: object, now: Stat, stats: Mapping[str, object],
                 loose: Mapping[str, object]) -> bool:
    """Whether ``path``, a folder of the environment whose stat moved, only gained what
    using the environment writes (module docstring)."""
    prefix, site, skip = loose.get("prefix"), loose.get("site"), loose.get("skip")
    if not (isinstance(prefix, str) and isinstance(site, str) and isinstance(skip, list)) \
            or not (path == prefix or path.startswith(prefix + os.sep)) \
            or not isinstance(recorded, list) or len(recorded) != 5 \
            or (now[0], now[2]) != (recorded[0], recorded[2]) or now[2] & 0o170000 != 0o040000:
        return False
    entries = stats.get(path, {})
    if not isinstance(entries, dict):
        return False
    had = {name for name, st in entries.items() if st is not None}
    try:
        names = set(os.listdir(path))
    except OSError:
        return False
    if path == site:
        return {n for n in names if n.endswith(".dist-info")} == \
            {n for n in had if n.endswith(".dist-info")}
    return had <= names and names - had <= WRITTEN_BY_USE | {str(s) for s in skip}


def terminal() -> list[list[object]]:
    """Whether stdout and stderr are terminals, and each one's size: what a table drawn
    for them depends on."""
    found: list[list[object]] = []
    for stream in (sys.stdout, sys.stderr):
        try:
            tty = stream.isatty()
            size = list(os.get_terminal_size(stream.fileno())) if tty else None
        except (AttributeError, OSError, ValueError):
            tty, size = False, None
        found.append([tty, size])
    return found


def invalidate(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        return


def still_valid(document: object, environ: Mapping[str, str]) -> bool:
    """Whether every recorded stat still holds and none of them is racy."""
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        return False
    if document.get("environ") != environment_digest(environ):
        return False
    start, stats, links = document.get("start_ns"), document.get("stats"), document.get("links")
    loose = document.get("loose")
    if not isinstance(start, int) or not isinstance(stats, dict) or not stats \
            or not isinstance(links, dict) or resolved(links) != links \
            or not isinstance(loose, dict):
        return False
    trusted = start - RACY_NS
    for folder, entries in stats.items():
        if not isinstance(entries, dict):
            return False
        for name, recorded in entries.items():
            path = os.path.join(folder, name)
            now = stat_of(path)
            if now is None:
                if recorded is not None:
                    return False
                continue
            if recorded is None:
                return False
            if list(now) != recorded:
                if not _used_folder(path, recorded, now, stats, loose):
                    return False
                continue
            if now[3] >= trusted or now[4] >= trusted:
                return False
    return True


def try_noop(words: Sequence[str], *, cwd: str, environ: Mapping[str, str],
             version: str) -> int | None:
    """0 after printing the recorded no-op message (apply) or output (status) when the
    stamp for these words still holds; None when the real path must decide."""
    if not words or words[0] not in ("apply", "status"):
        return None
    if not ON_LINUX:  # Windows' st_ctime is the creation time, and SetFileTime sets it:
        return None  # stat data cannot prove a rewritten file unchanged there
    path = stamp_path(words, cwd=cwd, environ=environ, version=version)
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not still_valid(document, environ):
        return None
    if "output" in document:
        return _replay(document)
    if not document.get("quiet"):
        message = str(document.get("message", ""))
        if sys.stderr.isatty():
            message = f"\x1b[32m{message}\x1b[0m"
        sys.stderr.write(message + "\n")
    return 0


def _replay(document: Mapping[str, object]) -> int | None:
    output = document.get("output")
    if document.get("terminal") != terminal() or not isinstance(output, list) \
            or len(output) != 2 or not all(isinstance(text, str) for text in output):
        return None
    sys.stdout.write(output[0])
    sys.stderr.write(output[1])
    return 0
