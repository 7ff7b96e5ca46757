"""Wheels a bundle carries that no index serves: ones built from locked sdists, and envforge's own.

A closed host cannot build an sdist (no build backend to download), so the bundle builds it
with the target's Python and carries the wheel. Every build of a locked sdist takes its build
requirements as the lock says (``PypiBuild``: the spec's build constraints, its index and
find-links; and, once recorded, the exact build environment of the first build), and
reports what its build environment held. Built wheels are kept in envforge's cache under the
sdist's sha256 with a record of their own sha256 and of the constraints they were built
under, which is what ``--offline`` and a rebuilt bundle reuse. When no Python of the
target's minor version is found, another one may build the wheel only if the result is pure
(``py3-none-any``): then nothing in it depends on the Python that built it.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
import tarfile
import tempfile
import tomllib
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from packaging.utils import canonicalize_name, parse_wheel_filename

import envforge
from envforge.errors import ArtifactError, EnvforgeError, InputError, StepError
from envforge.host import proc
from envforge.host.archives import sha256_file
from envforge.host.interpreters import Interpreter, find_interpreter, query_version
from envforge.host.wheelinstall import check_fits
from envforge.lockfile import LockedPypiFile, PypiBuild
from envforge.spec import PYPI_SIMPLE, Platform

BUILT = "built"  # <cache>/built/<sdist sha256>/{<wheel>, built.json}
RECORD = "built.json"
REPRODUCIBLE_EPOCH = "315532800"  # 1980-01-01, the earliest time a zip file can hold
# uv's debug line for each install into a build environment: "Installing `a==1`, `b==2` in `…`"
_UV_BUILD_INSTALL = re.compile(r"Installing ((?:`[^`]+`(?:, )?)+) in `")


@dataclass(frozen=True)
class BuiltWheel:
    path: Path
    sha256: str
    python: str  # the version that built it
    pure: bool
    build_requires: tuple[str, ...] = ()  # what its build environment held (name==version)


def is_pure(filename: str) -> bool:
    return all(t.abi == "none" and t.platform == "any"
               for t in parse_wheel_filename(filename)[3])


def _minor(version: str) -> str:
    return ".".join(version.split(".")[:2])


def _version_tuple(minor: str) -> tuple[int, int]:
    major, _, rest = minor.partition(".")
    return int(major), int(rest.split(".")[0])


def build_pins(sdist: LockedPypiFile, build: PypiBuild | None) -> tuple[str, ...]:
    """The constraints a build of ``sdist`` runs under: the spec's (recorded in the lock),
    then the build environment the lock records for that sdist, so a rebuild is the same."""
    recorded = sdist.built.build_requires if sdist.built is not None else ()
    return (*(build.constraints if build else ()), *recorded)


def cached_built_wheel(cache: Path, sdist_sha256: str, target_python: str,
                       build: PypiBuild | None = None) -> BuiltWheel | None:
    """The cache's wheel for that sdist when it still hashes as recorded, fits the target and
    was built under the spec's build constraints (other ones make another wheel; where the
    lock records a built wheel's sha256, the caller checks that too)."""
    folder = cache / BUILT / sdist_sha256
    try:
        record = json.loads((folder / RECORD).read_text(encoding="utf-8"))
        built = BuiltWheel(folder / record["filename"], str(record["sha256"]),
                           str(record["python"]), bool(record["pure"]),
                           tuple(str(r) for r in record.get("build_requires", ())))
        if tuple(record.get("constraints", ())) != (build.constraints if build else ()):
            return None
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not built.path.is_file() or sha256_file(built.path) != built.sha256:
        return None
    if not built.pure and _minor(built.python) != _minor(target_python):
        return None
    return built


def check_built_wheel(wheel: Path, sdist: Path) -> None:
    """Refuse a wheel that is not what its (verified) sdist builds to.

    A wheel built from an sdist is trusted through the sdist, whose sha256 the lock holds:
    every file outside its ``.dist-info`` must be byte for byte a file of the sdist, and its
    console scripts (``entry_points.txt``) the sdist's own. A replaced wheel (a ``.pth``, an
    edited module) fails here, whatever a manifest or a cache record says of its hash.
    """
    try:
        with tarfile.open(sdist, "r:*") as tar:
            source: dict[str, bytes] = {}
            for member in tar.getmembers():
                if member.isfile() and "/" in member.name:
                    handle = tar.extractfile(member)
                    if handle is not None:
                        source[member.name.split("/", 1)[1]] = handle.read()
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise ArtifactError(f"{sdist}: cannot read the sdist to check its wheel ({exc})") \
            from None
    entry_points = {v.strip() for k, v in source.items()
                    if k.endswith(".egg-info/entry_points.txt")}
    try:
        with zipfile.ZipFile(wheel) as zf:
            for info in zf.infolist():
                if info.is_dir():
                    continue
                top, _, rest = info.filename.partition("/")
                data = zf.read(info)
                if top.endswith(".dist-info") and rest:
                    if rest == "entry_points.txt" and data.strip() not in entry_points:
                        raise ArtifactError(f"{wheel}: {info.filename} is not the entry points "
                                            f"of {sdist.name}; refusing the wheel")
                    continue
                if source.get(info.filename, source.get(f"src/{info.filename}")) != data:
                    raise ArtifactError(f"{wheel}: {info.filename} is not a file of "
                                        f"{sdist.name} (sha256 checked by the lock); the wheel "
                                        "was altered or not built from it: refusing it")
    except (zipfile.BadZipFile, OSError) as exc:
        raise ArtifactError(f"{wheel}: not a readable wheel ({exc})") from None


def build_interpreter(target_python: str, environ: Mapping[str, str]) -> tuple[Interpreter, bool]:
    """The target's minor version when found (exact=True), else this interpreter."""
    try:
        return find_interpreter(_minor(target_python), environ=environ), True
    except StepError:
        here = query_version(Path(sys.executable))
        if here is None:  # pragma: no cover - this very interpreter runs
            raise
        return Interpreter(Path(sys.executable), here.version, "this interpreter"), False


def build_sdist_wheel(sdist: LockedPypiFile, archive: Path, *, target_python: str,
                      cache: Path, environ: Mapping[str, str],
                      build: PypiBuild | None = None) -> BuiltWheel:
    """A wheel for the target built from the (verified) sdist as the lock's ``build`` says,
    kept in the cache with what its build environment held."""
    cached = cached_built_wheel(cache, sdist.sha256, target_python, build)
    if cached is not None:
        return cached
    interpreter, exact = build_interpreter(target_python, environ)
    pins = build_pins(sdist, build)
    with tempfile.TemporaryDirectory(prefix="envforge-build-") as tmp:
        wheel, used = _build(archive, interpreter.executable, Path(tmp), environ=environ,
                             cache=cache, build=build, pins=pins)
        pure = is_pure(wheel.name)
        if not exact and not pure:
            raise StepError(f"{sdist.filename} builds a wheel for one Python only "
                            f"({wheel.name}), and no Python {_minor(target_python)} was found "
                            f"to build it: install one (`uv python install "
                            f"{_minor(target_python)}`)")
        check_fits(wheel, _version_tuple(target_python))
        folder = cache / BUILT / sdist.sha256
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        target = folder / wheel.name
        shutil.move(wheel, target)
    built = BuiltWheel(target, sha256_file(target), interpreter.version, pure, used)
    (folder / RECORD).write_text(json.dumps(
        {"filename": target.name, "sha256": built.sha256, "python": built.python,
         "pure": built.pure, "sdist": sdist.filename,
         "constraints": list(build.constraints if build else ()), "pins": list(pins),
         "build_requires": list(used)}, indent=2) + "\n", encoding="utf-8")
    return built


def build_wheel(source: Path, python: Path, out: Path, *, environ: Mapping[str, str],
                cache: Path) -> Path:
    """Build one wheel from an sdist or a source folder (envforge's own: PyPI, no pins)."""
    return _build(source, python, out, environ=environ, cache=cache, build=None, pins=())[0]


def _build(source: Path, python: Path, out: Path, *, environ: Mapping[str, str], cache: Path,
           build: PypiBuild | None, pins: tuple[str, ...]) -> tuple[Path, tuple[str, ...]]:
    """One wheel, in an isolated build environment whose requirements come from the lock's
    index and find-links under ``pins``: uv when installed (which also says what it put in the
    build environment), else pip (``PIP_CONSTRAINT`` reaches its build environment; what it
    installed there is not reported)."""
    from envforge.resolve.pypi import uv_binary, uv_environ

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
    if uv is not None:
        env["UV_CACHE_DIR"] = str(cache / "uv")
        args = [uv, "build", "--wheel", "--no-config", "--verbose", "--python", str(python),
                "--out-dir", str(wheels_out), "--index-url", sources.index]
        for link in sources.find_links:
            args += ["--find-links", link]
        for extra in sources.extra_indexes:
            args += ["--extra-index-url", extra]
        if pins:
            args += ["--build-constraints", str(constraints)]
        done = proc.run([*args, str(source)], env=env)
        used = build_environment(done.stderr)
    else:
        args = [str(python), "-m", "pip", "wheel", "--no-deps", "--wheel-dir", str(wheels_out),
                "--index-url", sources.index]
        for link in sources.find_links:
            args += ["--find-links", link]
        for extra in sources.extra_indexes:
            args += ["--extra-index-url", extra]
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
