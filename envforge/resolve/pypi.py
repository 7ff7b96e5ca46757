"""PyPI resolution with uv, for a target platform and Python that need not be this host's.

uv's ``pip compile --format pylock.toml`` resolves for the target and lists, per package,
the files that target can install with their hashes; this module picks the one file the
target would install (the best-ranked wheel, else the sdist) and nothing else.
"""

from __future__ import annotations

import re
import shutil
import tempfile
import time
import tomllib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import unquote, urlsplit

from packaging.requirements import InvalidRequirement, Requirement
from packaging.tags import Tag, compatible_tags, cpython_tags
from packaging.utils import canonicalize_name, parse_wheel_filename

from envforge.errors import ResolveError
from envforge.host import proc
from envforge.host.uv import uv_binary, uv_environ
from envforge.lockfile import LockedPypiFile
from envforge.paths import envforge_dirs
from envforge.platforms import PLATFORMS
from envforge.resolve import sdistmeta
from envforge.spec import Platform

if TYPE_CHECKING:
    from envforge.knowledge.models import BuildErrorRow


def target_tags(platform: Platform, python: str) -> list[Tag]:
    """The wheel tags an interpreter of ``python`` on ``platform`` accepts, most preferred first."""
    major, minor = (int(part) for part in python.split(".")[:2])
    abi = f"cp{major}{minor}{'m' if (major, minor) < (3, 8) else ''}"
    platforms = list(PLATFORMS[platform].wheel_tags)
    tags = list(cpython_tags((major, minor), abis=[abi, "abi3", "none"], platforms=platforms))
    tags += list(compatible_tags((major, minor), f"cp{major}{minor}", platforms=platforms))
    return tags


@dataclass(frozen=True)
class BuildControls:
    """The spec's constraints, overrides and wheel/sdist choices, as uv takes them."""

    constraints: tuple[str, ...] = ()
    overrides: tuple[str, ...] = ()
    build_constraints: tuple[str, ...] = ()
    only_binary: tuple[str, ...] = ()
    no_binary: tuple[str, ...] = ()
    # (project, requirements) pairs: what each sdist's build needs beyond what it declares,
    # given to uv in its config file (``sdistmeta.uv_config``), not as an option
    extra_build: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def uv_args(self, folder: Path) -> list[str]:
        """uv's options, the requirement lists written as files into ``folder``."""
        args: list[str] = []
        for option, lines in (("--constraint", self.constraints),
                              ("--override", self.overrides),
                              ("--build-constraints", self.build_constraints)):
            if lines:
                path = folder / f"{option.strip('-')}.txt"
                path.write_text("\n".join(lines) + "\n", encoding="utf-8")
                args += [option, str(path)]
        for option, names in (("--only-binary", self.only_binary),
                              ("--no-binary", self.no_binary)):
            for name in names:
                args += [option, name]
        return args

    def wants(self, name: str, names: tuple[str, ...]) -> bool:
        return ":all:" in names or canonicalize_name(name) in {
            canonicalize_name(n) for n in names if n != ":all:"}


GitFile = Callable[[str, str, Mapping[str, Any]], LockedPypiFile]

# Build back-ends uv puts into the isolated build of a legacy sdist (``setuptools>=40.8.0``
# for a bare setup.py): exempt from ``as_of``, or any cut-off before 2018-04 fails every build.
BUILD_BACKENDS = ("setuptools", "wheel")


class UnsatisfiableError(ResolveError):
    """uv found no solution: the requirements themselves, not the host or the network."""

    def __init__(self, *, requirements: tuple[str, ...], platform: Platform, python: str,
                 index: str, as_of: date | None, uv_output: str) -> None:
        self.requirements = requirements
        self.platform = platform
        self.python = python
        self.index = index
        self.as_of = as_of
        self.uv_output = uv_output
        super().__init__(f"PyPI resolution for {platform} (Python {python}) found no solution")


class UndeclaredBuildError(ResolveError):
    """An sdist's build imports a package it does not declare (pycocotools 2.0.0's setup.py:
    ``No module named 'Cython'``), as uv's hint names it: fixed by the spec's
    ``extra_build_dependencies``, not by another pin."""

    def __init__(self, *, project: str, version: str, needs: str, platform: Platform,
                 python: str) -> None:
        self.project = project
        self.version = version
        self.needs = needs
        super().__init__(f"{project} {version}'s build imports {needs}, which it does not "
                         f"declare (PyPI resolution for {platform}, Python {python})")


class EraBuildError(ResolveError):
    """An sdist whose build fails in words a build back-end of its era cures (MarkupSafe
    1.0's ``from setuptools import Feature``: ``[[build_error]]`` rows, builds.toml): fixed by
    the spec's ``build_constraints``, not by another pin."""

    def __init__(self, failure: str, *, project: str, version: str,
                 row: BuildErrorRow) -> None:
        self.project = project
        self.version = version
        self.row = row
        super().__init__(failure)  # uv's words, which init's settling reads too


# uv's hint under a failed build: "`pycocotools@2.0.0` depends on `Cython`, but doesn't
# declare it as a build dependency" (uv 0.13.9, its crates/uv-build-frontend)
_UNDECLARED = re.compile(r"`([A-Za-z0-9._-]+)@([^`\s]+)` depends on `([A-Za-z0-9._-]+)`, "
                         r"but doesn't declare it as a build dependency")
_FAILED_BUILD = re.compile(r"Failed to (?:download and )?build `([A-Za-z0-9._-]+)==([^`\s]+)`")
# Python 3's and 2's words for a missing module, and a setup.py's own refusal naming what to
# install (lap 0.4.0's setup.py:219: ImportError('lap requires numpy, please "pip install
# numpy".')), where uv gives no hint
_NO_MODULE = re.compile(r"(?:ModuleNotFoundError|ImportError): No module named "
                        r"'?([A-Za-z_][A-Za-z0-9_.]*[A-Za-z0-9_])")
_PIP_INSTALL = re.compile(r"ImportError: .*\bpip install (?:-U |--upgrade )?['\"]?"
                          r"([A-Za-z][A-Za-z0-9_-]*)")


def undeclared_import(log: str, project: str) -> str | None:
    """What a failed build's ``log`` says the build could not import (the module, dotted as
    named, or the name its own message says to install); None where it says no such thing,
    or names the project itself (a setup.py importing its own package for its version)."""
    for pattern in (_NO_MODULE, _PIP_INSTALL):
        for found in pattern.finditer(log):
            top = found[1].split(".")[0]
            if canonicalize_name(top) != canonicalize_name(project):
                return found[1]
    return None


def undeclared_build(stderr: str) -> tuple[str, str, str] | None:
    """(project, version, what its build imports undeclared) from uv's hint, else from the
    failed build's own words; None where a build failed otherwise, or none did."""
    found = _UNDECLARED.search(stderr)
    if found:
        return found[1], found[2], found[3]
    failed = _FAILED_BUILD.search(stderr)
    needs = undeclared_import(stderr, failed[1]) if failed else None
    return (failed[1], failed[2], needs) if failed and needs else None


def resolve_pypi(requirements: Iterable[str], *, platform: Platform, python: str,
                 index: str, exclude: Iterable[str] = (),
                 constraints: Iterable[str] = (),
                 as_of: date | None = None,
                 package_days: Mapping[str, date] | None = None,
                 find_links: Iterable[str] = (),
                 controls: BuildControls | None = None,
                 extra_indexes: Iterable[str] = (),
                 interpreter: str | None = None,
                 uv_cache: Path | None = None,
                 preferences: Iterable[LockedPypiFile] = ()) -> tuple[LockedPypiFile, ...]:
    """Resolve requirements for the target; one locked file per package, sorted by name.

    ``python`` is the full version the environment will have (``3.7.16``): uv reads ``3.7``
    as 3.7.0 and refuses anything that requires ``>=3.7.1`` (pandas 1.2-1.3.5).
    ``constraints`` pin versions without requiring the packages; ``exclude`` leaves
    packages out of the result. ``package_days`` gives some packages (normalized names) a
    later day than ``as_of``; an exact pin or a build back-end stays exempt.
    ``interpreter``, this host's Python of the target's minor version, is the one uv
    builds sdists' metadata with; without it uv looks for one itself
    (every candidate on PATH run, pyenv's shims among them: a second or more) and builds
    with whatever Python it finds. ``uv_cache`` replaces the uv cache envforge shares with
    apply and bundle. ``preferences`` (the previous lock's files) are kept where the
    requirements still allow them, as uv keeps an existing output file's: an edited spec
    moves only what the edit needs, and uv skips the search that found them."""
    reqs = list(requirements)
    if not reqs:
        return ()
    with tempfile.TemporaryDirectory(prefix="envforge-pypi-") as tmp:
        req_in = Path(tmp) / "requirements.in"
        req_in.write_text("\n".join(reqs) + "\n", encoding="utf-8")
        out = Path(tmp) / "pylock.toml"
        seed = preference_pylock(preferences)
        args = [
            uv_binary(), "pip", "compile", str(req_in), "--quiet", "--no-header",
            "--format", "pylock.toml", "--output-file", str(out),
            "--python-version", python, "--python-platform", PLATFORMS[platform].uv_triple,
            "--index-url", index, "--no-config",
        ]
        if interpreter is not None:
            args += ["--python", interpreter]
        if uv_cache is not None:
            args += ["--cache-dir", str(uv_cache)]
        pins = list(constraints)
        if pins:
            constraints_in = Path(tmp) / "constraints.txt"
            constraints_in.write_text("\n".join(pins) + "\n", encoding="utf-8")
            args += ["--constraint", str(constraints_in)]
        for name in exclude:
            args += ["--no-emit-package", name]
        links = tuple(find_links)
        for link in links:
            args += ["--find-links", link]
        controls = controls or BuildControls()
        args += controls.uv_args(Path(tmp))
        for extra_index in extra_indexes:
            args += ["--extra-index-url", extra_index]
        exempt = (*BUILD_BACKENDS, *exact_names(reqs))
        if as_of is not None:
            args += ["--exclude-newer", as_of.isoformat()]
            for name in exempt:
                args += ["--exclude-newer-package", f"{name}=false"]
        for name, day in sorted((package_days or {}).items()):  # without as_of: theirs only
            if name not in exempt:
                args += ["--exclude-newer-package", f"{name}={day.isoformat()}"]
        cache = envforge_dirs().cache
        # kept per Python minor: only where the builder is known to be of the target's
        keeping = interpreter is not None and not links and not extra_indexes
        kept = sdistmeta.known(cache, index, python) if keeping else {}
        started = time.time()
        extra_build = dict(controls.extra_build)
        done, pylock = _compile(args, out, seed, kept, extra_build)
        if pylock is not None and sdistmeta.stale(pylock, kept):  # the index's file changed
            kept = {}
            done, pylock = _compile(args, out, seed, kept, extra_build)
        if pylock is None:
            where = f"PyPI resolution for {platform} (Python {python})"
            if "No solution found" in done.stderr:
                raise UnsatisfiableError(requirements=tuple(reqs), platform=platform,
                                         python=python, index=index, as_of=as_of,
                                         uv_output=done.stderr)
            undeclared = undeclared_build(done.stderr)
            if undeclared is not None:
                project, version, needs = undeclared
                raise UndeclaredBuildError(project=project, version=version, needs=needs,
                                           platform=platform, python=python)
            from envforge.knowledge import era_build_error  # a failure's words, only

            failure = f"{where} failed: {proc.describe_failure(done)}"
            failed, era = _FAILED_BUILD.search(done.stderr), era_build_error(done.stderr)
            if failed and era is not None:
                raise EraBuildError(failure, project=failed[1], version=failed[2], row=era)
            raise ResolveError(failure)
        if keeping:
            sdistmeta.keep_built(pylock, uv_cache or cache / "uv", cache, index, python, kept,
                                 since=started)
    return pick_files(pylock, platform=platform, python=python, find_links=links,
                      git_file=archive_git_dependency, controls=controls)


def _compile(args: list[str], out: Path, seed: str,
             kept: Mapping[str, sdistmeta.BuiltMetadata],
             extra_build: Mapping[str, tuple[str, ...]],
             ) -> tuple[proc.Completed, dict[str, Any] | None]:
    """One ``uv pip compile`` into ``out`` (seeded with the preferences first), given the
    kept sdists' metadata and what sdists' builds need undeclared; the run, and its PEP 751
    result when it succeeded."""
    if seed:
        out.write_text(seed, encoding="utf-8")
    else:
        out.unlink(missing_ok=True)
    config = sdistmeta.uv_config(kept.values(), out.parent, extra_build)
    done = proc.run([*args, *(["--config-file", str(config)] if config else [])],
                    env=uv_environ(), check=False)
    if done.returncode != 0:
        return done, None
    return done, tomllib.loads(out.read_text(encoding="utf-8"))


def preference_pylock(files: Iterable[LockedPypiFile]) -> str:
    """A pylock.toml (PEP 751) of the versions to prefer, for uv to read as the existing
    output: each index file with its URL and hash; git dependencies are left out (uv would
    prefer the commit's source, which the lock holds as an archive); empty without any."""
    import tomli_w

    packages: list[dict[str, Any]] = []
    for file in files:
        if file.origin == "git":
            continue
        source = {"url": file.url, "hashes": {"sha256": file.sha256}}
        packages.append({"name": file.name, "version": file.version,
                         **({"sdist": source} if file.kind == "sdist" else {"wheels": [source]})})
    if not packages:
        return ""
    return tomli_w.dumps({"lock-version": "1.0", "created-by": "envforge", "packages": packages})


def archive_git_dependency(name: str, version: str, vcs: Mapping[str, Any]) -> LockedPypiFile:
    """A git dependency as the locked file: its commit's archive, made once into envforge's
    content-addressed cache (where apply and bundle find it by sha256)."""
    from envforge.host.archives import sha256_file
    from envforge.host.fetch import FileRef, cache_path
    from envforge.host.gitsource import archive_commit, git_url

    repo, commit = str(vcs["url"]), str(vcs["commit-id"])
    filename = f"{name.replace('-', '_')}-{version}.tar.gz"
    with tempfile.TemporaryDirectory(prefix="envforge-git-") as tmp:
        made = Path(tmp) / filename
        archive_commit(repo, commit, filename.removesuffix(".tar.gz"), made)
        sha = sha256_file(made)
        ref = FileRef(git_url(repo, commit), sha, filename, made.stat().st_size)
        target = cache_path(envforge_dirs().cache, ref)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(made, target)
    return LockedPypiFile(name=name, version=version, kind="sdist", filename=filename,
                          url=ref.url, sha256=sha, size=ref.size, origin="git", commit=commit)


def exact_names(requirements: Iterable[str]) -> list[str]:
    """The names pinned with ``==``: taken as written, whatever ``as_of`` says (their own
    dependencies still follow it), so a pin newer than the era does not need a later day."""
    names: list[str] = []
    for text in requirements:
        try:
            requirement = Requirement(text)
        except InvalidRequirement:
            continue
        if any(s.operator in ("==", "===") and "*" not in s.version
               for s in requirement.specifier):
            names.append(canonicalize_name(requirement.name))
    return names


def pick_files(pylock: Mapping[str, Any], *, platform: Platform, python: str,
               find_links: tuple[str, ...] = (),
               git_file: GitFile | None = None,
               controls: BuildControls | None = None) -> tuple[LockedPypiFile, ...]:
    """From a PEP 751 document, the one file per package that the target installs; a git
    dependency becomes the file ``git_file`` makes of its commit."""
    ranks = {tag: rank for rank, tag in enumerate(target_tags(platform, python))}
    locked = []
    controls = controls or BuildControls()
    for package in pylock.get("packages", []):
        name, version = package["name"], package["version"]
        direct = _direct_file(package, git_file)
        if direct is not None:
            locked.append(direct)
            continue
        best: tuple[int, Mapping[str, Any]] | None = None
        wheels = [] if controls.wants(name, controls.no_binary) else package.get("wheels", [])
        for wheel in wheels:
            filename = _filename(wheel)
            tags = parse_wheel_filename(filename)[3]
            rank = min((ranks[t] for t in tags if t in ranks), default=None)
            if rank is not None and (best is None or rank < best[0]):
                best = (rank, wheel)
        if best is not None:
            locked.append(_locked(name, version, "wheel", best[1], find_links))
        elif controls.wants(name, controls.only_binary):
            raise ResolveError(f"{name} {version} has no wheel for {platform} (Python {python}) "
                               "and [pypi] only_binary names it")
        elif "sdist" in package:
            locked.append(_locked(name, version, "sdist", package["sdist"], find_links))
        else:
            raise ResolveError(f"{name} {version} has no file for {platform} "
                               f"(Python {python}) and no sdist")
    return tuple(sorted(locked, key=lambda f: f.name))


def _direct_file(package: Mapping[str, Any], git_file: GitFile | None) -> LockedPypiFile | None:
    """A package given by URL rather than found on an index: git, or a local archive."""
    name, version = package["name"], package["version"]
    if "vcs" in package:
        if package["vcs"].get("type") != "git" or git_file is None:
            raise ResolveError(f"{name}: only git dependencies can be locked "
                               f"({package['vcs'].get('type')} given)")
        return git_file(name, version, package["vcs"])
    if "directory" in package:
        raise ResolveError(f"{name}: a local folder ({package['directory'].get('path')}) has no "
                           "hash to lock: commit it and give `name @ git+file:///…@REV`, or "
                           "build an sdist and give `name @ file:///…/name-1.0.tar.gz`")
    if "archive" not in package:
        return None
    archive = package["archive"]
    where = archive.get("url") or Path(str(archive["path"])).absolute().as_uri()
    entry = {**archive, "url": where}
    kind: Literal["wheel", "sdist"] = "wheel" if _filename(entry).endswith(".whl") else "sdist"
    return _locked(name, version, kind, entry, (), origin="path")


def _filename(entry: Mapping[str, Any]) -> str:
    if "name" in entry:
        return str(entry["name"])
    return unquote(urlsplit(str(entry["url"])).path.rsplit("/", 1)[-1])


def _locked(name: str, version: str, kind: Literal["wheel", "sdist"],
            entry: Mapping[str, Any], find_links: tuple[str, ...],
            origin: Literal["path"] | None = None) -> LockedPypiFile:
    sha = entry.get("hashes", {}).get("sha256")
    if not sha:
        raise ResolveError(f"{name} {version}: the index gave no sha256 for {_filename(entry)}")
    url = str(entry["url"])
    linked = url.startswith("file:") or any(url.startswith(link) for link in find_links)
    return LockedPypiFile(name=name, version=version, kind=kind,
                          filename=_filename(entry), url=url, sha256=sha,
                          size=entry.get("size"),
                          origin=origin or ("find-links" if linked else None))


