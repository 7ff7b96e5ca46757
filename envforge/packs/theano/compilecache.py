"""Theano's compiled modules reused across environments of one lock (issue 27): a fresh
prefix's first verify otherwise spends a minute in g++ on modules another prefix already built.

How Theano-PyMC 1.0.5 keys and trusts its compiledir, and why envforge copies rather than
shares it:

- a module's key holds the op graph's code versions, its compile arguments, the libraries it
  links, its header dirs, ``NPY_ABI_VERSION`` and ``c_compiler_str`` (the compiler's version)
  (``theano/gof/cc.py:1416-1487``, ``cmodule_key_``), and its hash is of the C source plus
  those parts (``theano/gof/cmodule.py:401-457``, ``get_module_hash``); the config options in
  the key (``in_c_key``) exclude the compiledirs, ``blas.ldflags``, ``cxx`` and
  ``gcc.cxxflags`` (``theano/configdefaults.py``). The compiledir's folder is named after the
  platform, processor and Python version, not Theano's (``configdefaults.py:2230-2233``).
  So a module built in one prefix matches in another of the same lock, compiler and NumPy,
  except where the key names the prefix: BLAS ops take ``-Wl,-rpath,{prefix}/…`` from
  ``blas.ldflags`` as a compile argument (``theano/tensor/blas.py:537-538``) and are rebuilt.
- a folder copied elsewhere is taken over: ``refresh`` re-points a ``key.pkl`` whose module
  path moved when both sit in ``tmp*`` folders of the same name (``cmodule.py:375-398``,
  ``894-907``); modules unused for ``cmodule.age_thresh_use`` (24 days, by atime) are skipped
  (``cmodule.py:829``), so copies get fresh times.
- a damaged module is not detected: a truncated ``.so`` is imported as is (``_get_module``,
  ``cmodule.py:722-733``; ``dlimport``, ``266-332``); here the probe then died of SIGBUS
  (verify: "the probe gave no report (exit -7)"). Hence a store checked by envforge, as its
  other caches: each file kept once by its sha256 in ``<cache>/theano-modules/blobs/``, one
  manifest per key in ``sets/``; a file whose bytes no longer hash to its name is deleted and
  its folder not copied, so Theano rebuilds it and the next publish stores it again; an
  environment's library that differs from the stored one is replaced by it; and only a
  verify whose rows all held stores what it compiled.

Copies, not links: Theano rewrites ``key.pkl`` in place when it adds a key
(``cmodule.py:1093-1114``), which would change the store under a hard link. Each environment's
compiledir stays inside its prefix, so rollback (which removes the prefix) never reaches the
store, nor another environment's modules.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

from pydantic import StringConstraints, ValidationError

from envforge.envlayout import COMPILEDIR_IN_ENV
from envforge.envvars import apply_edits
from envforge.host import proc
from envforge.model import Frozen
from envforge.packs.theano.expect import theano_expect
from envforge.steps.activation import load_edits
from envforge.steps.base import StepContext

STORE = "theano-modules"
_NAME = r"[A-Za-z0-9_+=-][A-Za-z0-9._+=-]{0,200}"
Folder = Annotated[str, StringConstraints(pattern=rf"^compiledir_{_NAME}/{_NAME}$")]
FileName = Annotated[str, StringConstraints(pattern=rf"^{_NAME}$")]
Sha256 = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]
_LIBRARY = (".so", ".pyd", ".dll")
_PARTIAL = ".envforge-partial-"


class ModuleSet(Frozen):
    """A manifest: each compiledir folder (``compiledir_X/tmpY``) and its files' sha256."""

    format: Literal[1] = 1
    folders: dict[Folder, dict[FileName, Sha256]]


@dataclass(frozen=True)
class Seeded:
    copied: int  # folders copied into the environment
    rejected: int  # folders left out because a stored file no longer matched its hash
    repaired: int = 0  # the environment's own folders whose library differed from the store's


def shared_compiledir(ctx: StepContext) -> Path | None:
    """The environment's compiledir when the lock leaves it inside the prefix (the default);
    None where the spec chose its own, which envforge leaves alone."""
    flags = theano_expect(ctx.lock.expect).flags
    if "compiledir" in flags or flags.get("base_compiledir") != "{prefix}/" + COMPILEDIR_IN_ENV:
        return None
    return Path(ctx.layout.compiledir)


def set_key(*, platform: str, versions: Mapping[str, str], flags: Mapping[str, str],
            python: str, compiler: tuple[str, str]) -> str:
    """What every module of an environment shares in Theano's key, and the compiledir's name:
    the lock's versions (Theano, NumPy and its ABI, Python) and flags ({prefix} unfilled), the
    interpreter, the compiler (its path and version)."""
    facts = {"platform": platform, "versions": dict(sorted(versions.items())),
             "flags": dict(sorted(flags.items())), "python": python, "compiler": list(compiler)}
    return hashlib.sha256(json.dumps(facts, sort_keys=True).encode()).hexdigest()


def environment_key(ctx: StepContext) -> str | None:
    """The store key for this environment; None without one (verify then says so) or without
    a compiler (nothing to reuse)."""
    expect = ctx.lock.expect
    flags = theano_expect(expect).flags
    if not Path(ctx.layout.python).is_file():
        return None
    try:
        env = apply_edits(load_edits(ctx.prefix), ctx.environ, pathsep=os.pathsep)
    except (OSError, ValueError):
        return None  # a damaged activation: the probe's run reports it
    cxx = shutil.which(flags.get("cxx") or "g++", path=env.get("PATH"))
    if cxx is None:
        return None
    done = proc.run([cxx, "-dumpfullversion", "-dumpversion"], env=env, check=False)
    if done.returncode != 0:
        return None
    python = os.path.realpath(ctx.layout.python)
    return set_key(platform=str(ctx.platform), versions=expect.versions, flags=flags,
                   python=python, compiler=(os.path.realpath(cxx), done.stdout.strip()))


def store_dir(cache: Path) -> Path:
    return cache / STORE


def read_set(store: Path, key: str) -> ModuleSet | None:
    """The stored manifest; None when absent or damaged (a damaged one is removed)."""
    path = store / "sets" / f"{key}.json"
    try:
        return ModuleSet.model_validate_json(path.read_bytes())
    except FileNotFoundError:
        return None
    except (OSError, ValidationError):
        path.unlink(missing_ok=True)
        return None


def seed(compiledir: Path, store: Path, key: str, *, repair: bool = True) -> Seeded:
    """Copies each stored folder the environment lacks, every file checked against its hash
    first; a folder is renamed into place whole, so Theano never sees half of one. With
    ``repair``, a folder the environment has whose library differs from the stored one
    (Theano never rewrites a built library; it would load a damaged one and crash) is
    removed and copied afresh; without, the environment's folders are not read."""
    found = read_set(store, key)
    if found is None:
        return Seeded(0, 0)
    copied = rejected = repaired = 0
    for folder, files in sorted(found.folders.items()):
        target = compiledir / folder
        if target.exists():
            if not repair or _libraries_match(target, files):
                continue
            shutil.rmtree(target)
            repaired += 1
        partial = target.with_name(f"{_PARTIAL}{uuid.uuid4().hex}")
        partial.mkdir(parents=True)
        if all(_copy_checked(store / "blobs" / sha, partial / name, sha)
               for name, sha in sorted(files.items())):
            partial.rename(target)
            copied += 1
        else:
            shutil.rmtree(partial)
            rejected += 1
    return Seeded(copied, rejected, repaired)


def _libraries_match(folder: Path, files: Mapping[str, str]) -> bool:
    for name, sha in files.items():
        if name.endswith(_LIBRARY):
            try:
                if hashlib.sha256((folder / name).read_bytes()).hexdigest() != sha:
                    return False
            except FileNotFoundError:
                return False
    return True


def _copy_checked(blob: Path, dest: Path, sha: str) -> bool:
    """Copies a stored file, hashing what it copies; a damaged one is deleted from the store."""
    digest = hashlib.sha256()
    try:
        with blob.open("rb") as src, dest.open("wb") as out:
            while chunk := src.read(1 << 20):
                digest.update(chunk)
                out.write(chunk)
    except FileNotFoundError:
        return False
    if digest.hexdigest() != sha:
        blob.unlink(missing_ok=True)
        return False
    return True


def module_folders(compiledir: Path) -> dict[str, list[Path]]:
    """The folders worth keeping: each holds a compiled library, and a ``tmp*`` module folder
    its ``key.pkl`` too (one without is a failed compilation); never ``lock_dir``, a folder
    Theano marked ``delete.me`` or one envforge is still copying."""
    found: dict[str, list[Path]] = {}
    for top in sorted(compiledir.glob("compiledir_*")):
        for folder in sorted(p for p in top.iterdir() if p.is_dir()):
            rel = f"{top.name}/{folder.name}"
            files = sorted(p for p in folder.iterdir() if p.is_file() and not p.is_symlink())
            names = {p.name for p in files}
            if (folder.name == "lock_dir" or folder.name.startswith(_PARTIAL)
                    or "delete.me" in names or not re.fullmatch(rf"compiledir_{_NAME}/{_NAME}", rel)
                    or not any(n.endswith(_LIBRARY) for n in names)
                    or (folder.name.startswith("tmp") and "key.pkl" not in names)):
                continue
            found[rel] = [p for p in files if re.fullmatch(_NAME, p.name)]
    return found


def publish(compiledir: Path, store: Path, key: str, *, merge: bool = False) -> int:
    """Stores the environment's modules under the key (files by sha256, then the manifest,
    each written whole by rename); the number of folders stored. With ``merge`` the stored
    folders are kept as they are and only the environment's others are read and added."""
    blobs = store / "blobs"
    blobs.mkdir(parents=True, exist_ok=True)
    stored = read_set(store, key) if merge else None
    folders: dict[str, dict[str, str]] = dict(stored.folders) if stored is not None else {}
    for rel, files in module_folders(compiledir).items():
        if rel in folders:
            continue
        entry: dict[str, str] = {}
        for path in files:
            data = path.read_bytes()
            sha = hashlib.sha256(data).hexdigest()
            blob = blobs / sha
            if not blob.is_file() or blob.stat().st_size != len(data):
                _write_whole(blob, data)
            entry[path.name] = sha
        folders[rel] = entry
    manifest = ModuleSet(folders=folders)
    (store / "sets").mkdir(exist_ok=True)
    _write_whole(store / "sets" / f"{key}.json", manifest.model_dump_json(indent=1).encode())
    return len(folders)


def _write_whole(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    tmp.write_bytes(data)
    tmp.replace(path)


def _keyed(ctx: StepContext) -> tuple[Path, str] | None:
    """The environment's compiledir and store key; None where the store does not apply (the
    spec's own compiledir, no compiler)."""
    compiledir = shared_compiledir(ctx)
    key = environment_key(ctx) if compiledir is not None else None
    return None if compiledir is None or key is None else (compiledir, key)


def before_probe(ctx: StepContext) -> None:
    """Seeds a compiledir inside the prefix from the store, for verify's probe. The store
    only saves time: where the host refuses it, verify warns and compiles as before."""
    _seed_environment(ctx, repair=True)


def before_run(ctx: StepContext) -> None:
    """Seeds the environment's compiledir before ``envforge run``'s command: the modules of
    every earlier verify and run of the lock's environments. The environment's own folders
    are left unread (verify repairs them), so a run starts at the cost of a listing."""
    _seed_environment(ctx, repair=False)


def _seed_environment(ctx: StepContext, *, repair: bool) -> None:
    keyed = _keyed(ctx)
    if keyed is None:
        return
    store = store_dir(ctx.dirs.cache)
    try:
        done = seed(keyed[0], store, keyed[1], repair=repair)
    except OSError as exc:
        ctx.ui.warn(f"theano: compiled modules not reused from {store}: {exc}")
        return
    if done.copied or done.rejected:
        ctx.ui.info(f"theano: {done.copied} of Theano's compiled modules reused from {store}"
                    + (f", {done.repaired} of them in place of damaged ones in the environment"
                       if done.repaired else "")
                    + (f", {done.rejected} damaged left to rebuild" if done.rejected else ""))


def after_probe(ctx: StepContext, *, passed: bool) -> None:
    """Keeps what the probe had Theano compile, for the next environment of the same key;
    only after a probe whose rows all held (a module that crashed it is not passed on)."""
    if passed:
        _publish_environment(ctx, merge=False)


def after_run(ctx: StepContext, *, succeeded: bool) -> None:
    """Adds what the command had Theano compile to the store, once it exited 0 (a module that
    crashed it is not passed on): the model's own ops, which verify never compiles, are then
    not compiled again in the lock's next environment. Only the folders the set lacks are
    read."""
    if succeeded:
        _publish_environment(ctx, merge=True)


def _publish_environment(ctx: StepContext, *, merge: bool) -> None:
    keyed = _keyed(ctx)
    if keyed is None or not keyed[0].is_dir():
        return
    store = store_dir(ctx.dirs.cache)
    try:
        publish(keyed[0], store, keyed[1], merge=merge)
    except OSError as exc:
        ctx.ui.warn(f"theano: compiled modules not stored in {store}: {exc}")


def suite_key(key: str) -> str:
    """The set of what ``verify --suite`` had Theano compile, apart from the environment's: a
    few hundred modules that verify and run never use, so never copied into a prefix."""
    return f"{key}-suite"


def suite_seed(ctx: StepContext, folder: Path) -> Path | None:
    """``folder`` made the suite workers' starting compiledir: the environment's modules and
    the stored suite set's, every stored file checked against its hash; None (the workers
    copy the environment's compiledir, as without a store) where there is no key."""
    keyed = _keyed(ctx)
    if keyed is None:
        return None
    compiledir, key = keyed
    store = store_dir(ctx.dirs.cache)
    try:
        shutil.rmtree(folder, ignore_errors=True)
        if compiledir.is_dir():
            shutil.copytree(compiledir, folder, ignore=shutil.ignore_patterns("lock_dir"))
        seed(folder, store, suite_key(key), repair=False)
    except OSError as exc:
        ctx.ui.warn(f"theano: the suite's compiled modules not reused from {store}: {exc}")
        return None
    return folder


def keep_suite_modules(ctx: StepContext, compiledirs: Sequence[Path], *, passed: bool) -> None:
    """Adds what the suite's workers compiled to the suite set, after a run that passed."""
    keyed = _keyed(ctx) if passed else None
    if keyed is None:
        return
    store = store_dir(ctx.dirs.cache)
    try:
        for worker in compiledirs:
            publish(worker, store, suite_key(keyed[1]), merge=True)
    except OSError as exc:
        ctx.ui.warn(f"theano: the suite's compiled modules not stored in {store}: {exc}")
