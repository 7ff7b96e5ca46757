"""The no-op apply's real check made cheap: whether an environment still is what its lock
asks, decided again from the files, before the modules planning needs are imported.

The stamp (``noopstamp``) replays an earlier decision while the same words, folder and
every environment variable are what they were, and every path it recorded keeps its stat.
This check is keyed by what the plan depends on instead: the spec's and the lock's paths,
``--prefix``, ``--locks-dir``, ``--offline`` and the few variables the plan reads
(``RELEVANT``), so another shell, folder or variable still gets it. It answers "in sync"
only where every input of the real path's decision is what it was when that path last found
nothing to do (the record ``envforge/noop.py`` writes then), each compared the way the real
path reads it:

- by content: the spec, the lock, ``applied.json`` and the journal (owner, whether it
  completed, what the prefix step reads), ``pyvenv.cfg``, every file the activation and the
  packs' steps write or read (``.theanorc``, ``keras.json``, ``bin/activate``): the real
  path compares their bytes;
- as listings: the installed distributions (the ``*.dist-info`` folders holding a RECORD:
  exactly those of the record, so one removed, added or at another version falls through),
  the Debian packages' markers, the prefix;
- by stat (a change moves ctime; ``noopstamp`` says why that is sound): the base
  interpreter the venv's link leads to, envforge's own modules and knowledge, the PATH
  folders up to g++ and each link to it (the compiler step runs it for its version), and
  with ``--offline`` every cache file the real path hashed;
- the apply lock: another apply holding it makes the real path refuse, so it falls through.

The record is written only when none of its paths changed within ``RACY_NS`` of the real
path's start (a change while it ran would otherwise be taken for what it read). Only the
core's file-observing steps, g++ found on PATH and the packs' ``WatchesFiles`` steps are
recorded, as for the stamp (a CUDA, MinGW or registry step asks the host: never recorded),
so the variables those steps and the folders envforge finds read are all the plan depends
on. Anything missing, unreadable or different: "not sure", and the real path decides (and
records again when it finds nothing). "In sync" also stamps the words it was run with, so
the next run with them takes the stamp.
"""

# ruff: noqa: PTH103, PTH105, PTH113, PTH118, PTH120, PTH208
# (os.path on str throughout, as in noopstamp: this runs before the interpreter has warmed up)

from __future__ import annotations

import json
import os
import sys
from stat import S_ISREG

from envforge.host.noopstamp import (
    ON_LINUX,
    RACY_NS,
    cache_root,
    resolved,
    stamp_path,
    stat_of,
    write,
)

try:  # the built-in BLAKE2, as noopstamp takes it: hashlib's import loads OpenSSL's binding
    from _blake2 import blake2b
except ImportError:  # pragma: no cover - a Python built without it
    from hashlib import blake2b

TYPE_CHECKING = False  # typing's, spelt here: this path spares typing's import
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

FORMAT = 1
# what the recorded steps' plans read of the environment's variables: envforge's folders
# (``paths.envforge_dirs``: ENVFORGE_HOME, else platformdirs' XDG folders under HOME), the
# user's home (``~/.theanorc``, ``~/.keras``: ``StepContext.home``) and the PATH g++ is
# found on (``steps.compiler.find_host_gxx``)
RELEVANT = ("ENVFORGE_HOME", "HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME",
            "PATH")
LOCK_FILE = "apply.lock"  # journal.store's: the environment's apply lock


def parse(words: Sequence[str]) -> dict[str, object] | None:
    """``apply SPEC --yes`` with only ``--offline``, ``-q``, ``--prefix P`` and
    ``--locks-dir D`` beside it (in any order, as argparse takes them); None for anything
    else, which the real path parses."""
    if len(words) < 2 or words[0] != "apply":
        return None
    found: dict[str, object] = {"spec": None, "prefix": None, "locks_dir": None,
                                "offline": False, "quiet": False, "yes": False}
    rest = list(words[1:])
    while rest:
        word = rest.pop(0)
        flag, eq, value = word.partition("=")
        if flag in ("--prefix", "--locks-dir"):
            if not eq:
                if not rest:
                    return None
                value = rest.pop(0)
            key = flag[2:].replace("-", "_")
            if not value or found[key] is not None:
                return None
            found[key] = value
        elif word in ("--yes", "-y"):
            found["yes"] = True
        elif word == "--offline":
            found["offline"] = True
        elif word in ("-q", "--quiet"):
            found["quiet"] = True
        elif word.startswith("-") or found["spec"] is not None or not word:
            return None
        else:
            found["spec"] = word
    return found if found["yes"] and found["spec"] is not None else None


def _absolute(cwd: str, path: object) -> str | None:
    return None if path is None else os.path.normpath(os.path.join(cwd, str(path)))


def record_path(invocation: Mapping[str, object], *, cwd: str, environ: Mapping[str, str],
                version: str) -> str:
    """Where the record for this apply's inputs is kept: in envforge's cache (so writing it
    changes nothing it records), apart from the stamps (``noop/``)."""
    key = json.dumps([FORMAT, version, sys.executable, _absolute(cwd, invocation["spec"]),
                      _absolute(cwd, invocation["prefix"]),
                      _absolute(cwd, invocation["locks_dir"]), bool(invocation["offline"]),
                      relevant(environ)])
    digest = blake2b(key.encode("utf-8"), digest_size=16).hexdigest()
    return os.path.join(str(cache_root(environ)), "noop-env", f"{digest}.json")


def relevant(environ: Mapping[str, str]) -> list[str | None]:
    return [environ.get(name) for name in RELEVANT]


def digest_of(path: str) -> str | None:
    """The regular file's content digest; None when absent. OSError for anything else (a
    FIFO put in a spec's place is not waited on: opened without blocking, then refused)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except (FileNotFoundError, NotADirectoryError):
        return None
    with open(fd, "rb") as f:
        if not S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path}: not a regular file")
        return blake2b(f.read(), digest_size=32).hexdigest()


def distributions(site_packages: str) -> list[str]:
    """The ``*.dist-info`` folders holding a RECORD (``steps.pypi.installed_distributions``
    reads the same), sorted."""
    try:
        names = os.listdir(site_packages)
    except FileNotFoundError:
        return []
    return sorted(n for n in names if n.endswith(".dist-info")
                  and os.path.isfile(os.path.join(site_packages, n, "RECORD")))


def held(state_dir: str) -> bool:
    """Whether another process holds the environment's apply lock (filelock's flock)."""
    path = os.path.join(state_dir, LOCK_FILE)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        return False
    try:
        import fcntl

        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return True
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def in_sync(record: object, *, environ: Mapping[str, str], version: str) -> bool:
    """Whether every input the record names is what it was (module docstring)."""
    if not isinstance(record, dict) or record.get("format") != FORMAT \
            or record.get("version") != version or record.get("environ") != relevant(environ):
        return False
    links, digests, stats = record.get("links"), record.get("digests"), record.get("stats")
    exists, site, dists = record.get("exists"), record.get("site"), record.get("dists")
    state = record.get("state")
    if not (isinstance(links, dict) and isinstance(digests, dict) and isinstance(stats, dict)
            and isinstance(exists, list) and isinstance(site, str)
            and isinstance(dists, list) and isinstance(state, str)) or not digests:
        return False
    if resolved(links) != links or not all(os.path.lexists(str(p)) for p in exists):
        return False
    for path, recorded in stats.items():
        now = stat_of(path)
        if (list(now) if now is not None else None) != recorded:
            return False
    try:
        if any(digest_of(path) != recorded for path, recorded in digests.items()):
            return False
    except OSError:
        return False
    return distributions(site) == dists and not held(state)


def check(words: Sequence[str], *, cwd: str, environ: Mapping[str, str],
          version: str) -> tuple[str, dict[str, object]] | None:
    """The no-op message and the record it rests on when the environment is in sync with
    these words' lock; None when not sure (the real path decides)."""
    invocation = parse(words)
    if invocation is None or not ON_LINUX:  # Windows: ctime is not a change time there
        return None
    try:
        with open(record_path(invocation, cwd=cwd, environ=environ, version=version),
                  encoding="utf-8") as f:
            record = json.load(f)
    except (OSError, ValueError):
        return None
    if not in_sync(record, environ=environ, version=version):
        return None
    return f"{invocation['spec']}: nothing to do ({record['prefix']})", record


def try_check(words: Sequence[str], *, cwd: str, environ: Mapping[str, str],
              version: str) -> int | None:
    """0 after printing the no-op message and stamping these words (the next run with them
    takes the stamp); None when the real path must decide."""
    import time

    start_ns = time.time_ns()
    found = check(words, cwd=cwd, environ=environ, version=version)
    if found is None:
        return None
    message, record = found
    quiet = "-q" in words or "--quiet" in words
    paths, links, loose = record.get("stamp_paths"), record.get("links"), record.get("loose")
    if isinstance(paths, list) and isinstance(links, dict) and isinstance(loose, dict):
        write(stamp_path(words, cwd=cwd, environ=environ, version=version), start_ns=start_ns,
              paths=paths, links=links, environ=environ, message=message, quiet=quiet,
              loose=loose)
    if not quiet:
        sys.stderr.write((f"\x1b[32m{message}\x1b[0m" if sys.stderr.isatty() else message)
                         + "\n")
    return 0


def save(path: str, *, start_ns: int, environ: Mapping[str, str], version: str,
         prefix: str, state: str, site: str, links: Iterable[str], digested: Iterable[str],
         statted: Iterable[str], exists: Iterable[str], stamp_paths: Sequence[str],
         loose: Mapping[str, object]) -> bool:
    """Write the record, unless a path it rests on changed within ``RACY_NS`` of the real
    path's start (``start_ns``) or cannot be read; whether it was written. A record that
    cannot be written only costs the next run its cheap check. Not on Windows (``check``)."""
    if not ON_LINUX:
        return False
    try:  # read first, then checked for changes since the start: a later change is not in it
        digests = {p: digest_of(p) for p in dict.fromkeys(digested)}
    except OSError:
        return False
    stats = {p: stat_of(p) for p in dict.fromkeys(statted)}
    present = sorted(set(exists))
    document = {"format": FORMAT, "version": version, "environ": relevant(environ),
                "prefix": prefix, "state": state, "site": site, "links": resolved(links),
                "digests": digests, "stats": stats, "exists": present,
                "dists": distributions(site), "stamp_paths": list(stamp_paths),
                "loose": dict(loose)}
    trusted = start_ns - RACY_NS
    for p in dict.fromkeys([*stamp_paths, *digests, *stats, *present]):
        st = stat_of(p)
        if st is None and p in present:
            return False
        if st is not None and (st[3] >= trusted or st[4] >= trusted):
            return False
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(document, f)
        os.replace(tmp, path)
    except OSError:
        return False
    return True

