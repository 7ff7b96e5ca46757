"""Wheels a bundle carries that no index serves: ones built from locked sdists, and envforge's own.

A closed host cannot build an sdist (no build backend to download), so the bundle builds it
with the target's Python and carries the wheel. Every build of a locked sdist runs in the
build environment the lock pins (``PypiBuild``: the spec's build constraints, its index and
find-links) and reports what that environment held. The wheel is checked against its sdist
(``wheelcheck``) and kept in the host's build cache (``buildcache``), never in the lock: a
compiled build is not reproducible. When no Python of the target's minor version is found,
another one may build the wheel only if the result is pure (``py3-none-any``): then nothing
in it depends on the Python that built it.
"""

from __future__ import annotations

import re
import shutil
import sys
import tempfile
import tomllib
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from functools import partial
from pathlib import Path

from packaging.utils import canonicalize_name, parse_wheel_filename

import envforge
from envforge.bundle.buildcache import BuiltWheel, build_key, read_entry, write_entry
from envforge.bundle.wheelcheck import check_built_wheel
from envforge.errors import EnvforgeError, InputError, StepError, ToolError
from envforge.host import proc
from envforge.host.interpreters import (
    Interpreter,
    find_interpreter,
    install_hint,
    minor,
    query_version,
)
from envforge.lockfile import LockedDeb, LockedPypiFile, PypiBuild
from envforge.platforms import host_platform
from envforge.spec import PYPI_SIMPLE, Platform

REPRODUCIBLE_EPOCH = "315532800"  # 1980-01-01, the earliest time a zip file can hold
# uv's debug line for each install into a build environment: "Installing `a==1`, `b==2` in `…`"
_UV_BUILD_INSTALL = re.compile(r"Installing ((?:`[^`]+`(?:, )?)+) in `")


class BuildFailedError(StepError):
    """An sdist's build ended in failure; ``log`` keeps the build's whole output (the message
    its tail), where init looks for the line that says why (a compiler's error)."""

    def __init__(self, message: str, *, log: str = "") -> None:
        super().__init__(message)
        self.log = log


def is_pure(filename: str) -> bool:
    return all(t.abi == "none" and t.platform == "any"
               for t in parse_wheel_filename(filename)[3])


def sdist_label(sdist: LockedPypiFile) -> str:
    """``PyYAML 5.3``: the project's name as its sdist's file spells it, for progress lines."""
    for suffix in (".tar.gz", ".zip", ".tar.bz2", ".tgz"):
        stem = sdist.filename.removesuffix(suffix)
        if stem != sdist.filename and stem.endswith(f"-{sdist.version}"):
            return f"{stem.removesuffix(f'-{sdist.version}')} {sdist.version}"
    return f"{sdist.name} {sdist.version}"


def cached_built_wheel(cache: Path, sdist_sha256: str, target_python: str,
                       build: PypiBuild | None, platform: Platform,
                       debs: Sequence[LockedDeb] = ()) -> BuiltWheel | None:
    """The cache's wheel for that sdist, built in the build environment the lock pins for
    this target (with its Debian packages, ``sysroot``), when it still hashes as its record
    says."""
    return read_entry(cache, sdist_sha256, build_key(build, target_python, platform, debs))


def build_interpreter(target_python: str, environ: Mapping[str, str], *,
                      cache: Path | None = None) -> tuple[Interpreter, bool]:
    """The target's minor version when found (exact=True), else this interpreter;
    ``cache``: envforge's, which keeps each interpreter's answer."""
    try:
        return find_interpreter(minor(target_python), environ=environ, cache=cache), True
    except StepError:
        here = query_version(Path(sys.executable))
        if here is None:  # pragma: no cover - this very interpreter runs
            raise
        return Interpreter(Path(sys.executable), here.version, "this interpreter"), False


def _fix(sdist: LockedPypiFile, log: str, build: PypiBuild | None) -> str:
    """The spec's fix where the log says the build could not import a package the sdist
    does not declare (the lock's pins for it, if any, did not include it), or fails in words
    a build back-end of the sdist's era cures (``[[build_error]]``: MarkupSafe 1.0's
    ``Feature``, where a lock read the sdist's metadata kept from an earlier build)."""
    from envforge.knowledge import era_build_error
    from envforge.resolve.pypi import undeclared_import
    from envforge.resolve.pypi_explain import constraints_fix

    era = era_build_error(log)
    if era is not None:
        fix = constraints_fix(build.constraints if build else (), era.build_constraint)
        return (f": its build fails under today's build back-end, which floats to the newest "
                f"for the Python; fix: set [pypi] {fix} in the spec and lock again")

    needs = undeclared_import(log, sdist.name)
    if needs is None or "." in needs:
        return ""
    given = [pin.split("==")[0] for pin in (build.extra_for(sdist.name) if build else ())]
    listed = ", ".join(f'"{n}"' for n in dict.fromkeys([*given, needs]))
    return (f": its build imports {needs}, which the sdist does not declare; fix: set [pypi] "
            f"extra_build_dependencies = {{ \"{canonicalize_name(sdist.name)}\" = [{listed}] }}"
            " in the spec and lock again")


def build_sdist_wheel(sdist: LockedPypiFile, archive: Path, *, target_python: str,
                      platform: Platform, cache: Path, environ: Mapping[str, str],
                      build: PypiBuild | None = None,
                      builder: Future[tuple[Interpreter, bool]] | None = None,
                      debs: Sequence[LockedDeb] = (),
                      fetch_deb: Callable[[LockedDeb], Path] | None = None) -> BuiltWheel:
    """A wheel for the target built from the (verified) sdist in the build environment the
    lock's ``build`` pins, checked (``check_built_wheel``) before it enters the cache.
    ``builder``: ``build_interpreter``'s answer, asked for already (apply starts the search
    with the downloads, so the build starts as soon as the sdist has landed). ``debs``: the
    lock's Debian packages, handed to the build where one is a ``-dev`` package
    (``sysroot``), each had by ``fetch_deb`` (by default downloaded into the cache)."""
    from envforge.bundle.sysroot import build_environ, sysroot

    key = build_key(build, target_python, platform, debs)
    cached = read_entry(cache, sdist.sha256, key)
    if cached is not None:
        return cached
    interpreter, exact = builder.result() if builder is not None \
        else build_interpreter(target_python, environ, cache=cache)
    with tempfile.TemporaryDirectory(prefix="envforge-build-") as tmp:
        root = sysroot(Path(tmp) / "sysroot", debs, fetch_deb or partial(_cached_deb, cache))
        if root is not None:
            environ = build_environ(environ, root)
        try:
            wheel, used = _build(archive, interpreter.executable, Path(tmp), environ=environ,
                                 cache=cache, build=build,
                                 pins=build.pins if build else (),
                                 extra=build.extra_for(sdist.name) if build else ())
        except ToolError as exc:
            log = exc.stderr.strip() or exc.stdout.strip()
            ran = " ".join([Path(exc.command[0]).name, *exc.command[1:2]]) \
                if exc.command else "the build"
            raise BuildFailedError(f"building {sdist_label(sdist)} from source failed ({ran} "
                                   f"exited {exc.returncode}){_fix(sdist, log, build)}\n    "
                                   + "\n    ".join(log.splitlines()[-12:]), log=log) from None
        pure = is_pure(wheel.name)
        if not exact and not pure:
            raise StepError(f"{sdist.filename} builds a wheel for one Python only "
                            f"({wheel.name}), and no Python {minor(target_python)} was found "
                            f"to build it: install one, "
                            f"{install_hint(minor(target_python))}")
        if not pure and platform != host_platform().name:
            raise StepError(f"{wheel.name} is not pure Python, and it was built on this host, "
                            f"not {platform}: build it on a {platform} host")
        check_built_wheel(wheel, sdist, archive, target_python=target_python,
                          platform=platform)
        return write_entry(cache, sdist.sha256, key, wheel, python=interpreter.version,
                           pure=pure, build_requires=used, sdist=sdist.filename)


def _cached_deb(cache: Path, deb: LockedDeb) -> Path:
    from envforge.host.fetch import FileRef, obtain

    return obtain(FileRef(deb.url, deb.sha256, deb.filename, deb.size), cache=cache)


def build_wheel(source: Path, python: Path, out: Path, *, environ: Mapping[str, str],
                cache: Path) -> Path:
    """Build one wheel from an sdist or a source folder (envforge's own: PyPI, no pins)."""
    return _build(source, python, out, environ=environ, cache=cache, build=None, pins=())[0]


def _build(source: Path, python: Path, out: Path, *, environ: Mapping[str, str], cache: Path,
           build: PypiBuild | None, pins: tuple[str, ...],
           extra: tuple[str, ...] = ()) -> tuple[Path, tuple[str, ...]]:
    """One wheel, in an isolated build environment whose requirements come from the lock's
    index and find-links under ``pins``: uv when installed (which also says what it put in the
    build environment), else pip (``PIP_CONSTRAINT`` reaches its build environment; what it
    installed there is not reported). With ``extra`` (pinned requirements the sdist's build
    imports undeclared), uv builds without isolation in an environment made for it
    (``buildenv``)."""
    from envforge.host.uv import uv_binary, uv_environ

    try:
        uv = uv_binary()
    except EnvforgeError:
        uv = None
    env = uv_environ(environ) if uv is not None else dict(environ)
    # Fixed timestamps inside the wheel: the same sources give the same bytes and sha256.
    env.setdefault("SOURCE_DATE_EPOCH", REPRODUCIBLE_EPOCH)
    out.mkdir(parents=True, exist_ok=True)
    constraints = out / "build-constraints.txt"
    constraints.write_text("".join(f"{line}\n" for line in pins), encoding="utf-8")
    wheels_out = out / "wheel"
    sources = build or PypiBuild(index=PYPI_SIMPLE)
    used: tuple[str, ...] = ()
    if uv is not None and extra:
        from envforge.bundle import buildenv

        env["UV_CACHE_DIR"] = str(cache / "uv")
        interpreter = buildenv.prepare(
            uv, python, out / "build-env", [*buildenv.declared_build_requires(source), *extra],
            sources=sources, constraints=constraints if pins else None, env=env)
        proc.run([uv, "build", "--wheel", "--no-config", "--no-build-isolation", "--python",
                  str(interpreter), "--out-dir", str(wheels_out), str(source)], env=env)
        used = buildenv.installed(uv, interpreter, env)
    elif uv is not None:
        env["UV_CACHE_DIR"] = str(cache / "uv")
        args = [uv, "build", "--wheel", "--no-config", "--verbose", "--python", str(python),
                "--out-dir", str(wheels_out), "--index-url", sources.index]
        for link in sources.find_links:
            args += ["--find-links", link]
        for index_url in sources.extra_indexes:
            args += ["--extra-index-url", index_url]
        if pins:
            args += ["--build-constraints", str(constraints)]
        done = proc.run([*args, str(source)], env=env)
        used = build_environment(done.stderr)
    elif extra:
        raise StepError(f"{source.name}'s build needs {', '.join(extra)} besides what it "
                        "declares, which envforge installs with uv: install uv (pip install uv)")
    else:
        args = [str(python), "-m", "pip", "wheel", "--no-deps", "--wheel-dir", str(wheels_out),
                "--index-url", sources.index]
        for link in sources.find_links:
            args += ["--find-links", link]
        for index_url in sources.extra_indexes:
            args += ["--extra-index-url", index_url]
        if pins:
            env["PIP_CONSTRAINT"] = str(constraints)
        proc.run([*args, str(source)], env=env)
    wheels = sorted(wheels_out.glob("*.whl"))
    if len(wheels) != 1:
        raise StepError(f"building {source.name} gave {len(wheels)} wheels, not one")
    return wheels[0], used


def build_environment(uv_log: str) -> tuple[str, ...]:
    """What uv installed into a build environment (``name==version``, sorted by name), from
    its verbose log: each round (the backend's own requirements, then what its hooks ask
    for) names the whole set it installs."""
    found: dict[str, str] = {}
    for match in _UV_BUILD_INSTALL.finditer(uv_log):
        for pin in re.findall(r"`([^`]+)`", match[1]):
            name = pin.split("==")[0]
            found[canonicalize_name(name)] = pin
    return tuple(found[name] for name in sorted(found))


# -- envforge itself ---------------------------------------------------------------------------

def envforge_source_root() -> Path:
    """The source tree this envforge runs from (an editable or in-place install)."""
    root = Path(envforge.__file__).resolve().parent.parent
    pyproject = root / "pyproject.toml"
    try:
        name = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["name"]
    except (OSError, ValueError, KeyError):
        name = None
    if name != "envforge":
        raise InputError(f"--with-envforge builds envforge from its source tree, and {root} is "
                         "not one: run envforge from a checkout (pip install -e .)")
    return root


def envforge_requirements(root: Path) -> list[str]:
    """envforge's runtime dependencies: the core ones only, not the ``resolve`` extra."""
    data = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    return [str(r) for r in data["project"].get("dependencies", [])]


def build_envforge_wheel(out: Path, *, environ: Mapping[str, str], cache: Path) -> Path:
    """envforge's wheel, built from a copy of its sources so the checkout gets no build/."""
    root = envforge_source_root()
    with tempfile.TemporaryDirectory(prefix="envforge-self-") as tmp:
        copy = Path(tmp) / "src"
        copy.mkdir()
        for name in ("pyproject.toml", "README.md", "LICENSE"):
            if (root / name).is_file():
                shutil.copy2(root / name, copy / name)
        shutil.copytree(root / "envforge", copy / "envforge",
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        wheel = build_wheel(copy, Path(sys.executable), Path(tmp) / "out", environ=environ,
                            cache=cache)
        out.mkdir(parents=True, exist_ok=True)
        target = out / wheel.name
        shutil.move(wheel, target)
    return target


def resolve_envforge_deps(root: Path, *, python: str, platform: Platform,
                          index: str) -> tuple[LockedPypiFile, ...]:
    """Wheels of envforge's dependencies for the Python and platform envforge will run on."""
    from envforge.resolve.pypi import resolve_pypi

    files = resolve_pypi(envforge_requirements(root), platform=platform, python=python,
                         index=index)
    sdists = [f.filename for f in files if f.kind != "wheel"]
    if sdists:
        raise StepError(f"envforge's dependencies for Python {python} on {platform} need "
                        f"building from source ({', '.join(sdists)}): pick another "
                        "--envforge-python")
    return files
