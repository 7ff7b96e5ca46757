"""Pure parts of locking: the stack's versions, its artifacts and verify's expectations."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from envforge.errors import InputError
from envforge.lockfile import (
    ApplyInputs,
    Expectations,
    LockedArtifact,
    LockedCondaPackage,
    LockedDeb,
    LockedPypiFile,
    PlatformLock,
    PypiBuild,
)
from envforge.model import Frozen
from envforge.packapi import Pack, Registry
from envforge.spec import PlatformSpec

if TYPE_CHECKING:
    from envforge.expectations import Kernel
    from envforge.knowledge.models import UndeclaredImport

# Package names, per source, of the parts of the stack verify checks (a pack adds its own:
# FrameworkPack.stack_names).
_STACK_NAMES: dict[str, str] = {
    "python": "python", "numpy": "numpy", "scipy": "scipy", "six": "six",
    "python3-numpy": "numpy", "python3-scipy": "scipy", "python3-six": "six",
}
_DEB_PYTHON = re.compile(r"^python(3\.\d+)-minimal$")


def upstream_version(debian_version: str) -> str:
    """``1:0.7.6-10+b1`` -> ``0.7.6``: drop epoch, Debian revision and repack suffixes."""
    version = debian_version.split(":", 1)[-1]
    if "-" in version:
        version = version.rsplit("-", 1)[0]
    return re.split(r"[+~]", version, maxsplit=1)[0]


def debian_python(packages: Sequence[str]) -> bool:
    """Whether a ``[debian]`` list provides the environment's Python (then PyPI must wait
    for Debian's resolution to know which Python it resolves for)."""
    return any(_DEB_PYTHON.match(name) for name in packages)


class LockPlanPack(Pack, Protocol):
    """What deriving a lock's non-resolved parts asks of a pack."""

    @property
    def stack_names(self) -> Mapping[str, str]: ...

    def undeclared_imports(self, versions: Mapping[str, str]) -> Sequence[UndeclaredImport]: ...

    def kernel_device(self, pspec: PlatformSpec) -> tuple[str, str]: ...

    def expectations(self, pspec: PlatformSpec, versions: Mapping[str, str]) -> Frozen: ...

    @property
    def kernels(self) -> Mapping[str, Kernel]: ...

    @property
    def artifact_roles(self) -> tuple[str, ...]: ...

    def artifacts(self, pspec: PlatformSpec) -> Sequence[LockedArtifact]: ...


def locked_python(pspec: PlatformSpec, *, conda: Sequence[LockedCondaPackage],
                  deb: Sequence[LockedDeb]) -> str:
    """The environment's Python as locked: Debian's or conda's where they provide it, else
    the spec's."""
    return stack_versions(pspec, Registry(()), pypi=(), conda=conda, deb=deb)["python"]


def stack_versions(pspec: PlatformSpec, registry: Registry[LockPlanPack], *,
                   pypi: Sequence[LockedPypiFile], conda: Sequence[LockedCondaPackage],
                   deb: Sequence[LockedDeb]) -> dict[str, str]:
    """The versions of the stack's parts as locked; later sources win (PyPI over Debian).

    The parts are the core's and each mounted pack's (``FrameworkPack.stack_names``)."""
    names = dict(_STACK_NAMES)
    for pack in registry.active(pspec.packs):
        names.update(pack.stack_names)
    versions: dict[str, str] = {"python": pspec.python.version}
    for record in deb:
        python = _DEB_PYTHON.match(record.name)
        if python:
            versions["python"] = upstream_version(record.version)
        elif record.name in names:
            versions[names[record.name]] = upstream_version(record.version)
    for package in conda:
        if package.name in names:
            versions[names[package.name]] = package.version
    for file in pypi:
        if file.name in names:
            versions[names[file.name]] = file.version
    return dict(sorted(versions.items()))


def _undeclared(versions: dict[str, str],
                registry: Registry[LockPlanPack]) -> list[UndeclaredImport]:
    """Each pack's rows for the releases ``versions`` (canonical name -> version) name."""
    return [row for pack in registry for row in pack.undeclared_imports(versions)]


def undeclared_missing(pypi: Sequence[LockedPypiFile], registry: Registry[LockPlanPack],
                       exclude: Iterable[str] = ()) -> tuple[UndeclaredImport, ...]:
    """What the resolved framework imports but does not declare, and the resolution lacks.

    A requirement already met (a spec that pins setuptools itself) or provided elsewhere
    (``pypi.provided_elsewhere``) needs nothing more.
    """
    locked: dict[str, str] = {canonicalize_name(f.name): f.version for f in pypi}
    skip = {canonicalize_name(name) for name in exclude}
    missing = []
    for row in _undeclared(locked, registry):
        requirement = Requirement(row.requirement)
        name = canonicalize_name(requirement.name)
        have = locked.get(name)
        if name in skip or (have is not None and requirement.specifier.contains(
                have, prereleases=True)):
            continue
        missing.append(row)
    return tuple(missing)


def exact_pins(packages: Sequence[str]) -> dict[str, str]:
    """Canonical name -> version of the packages pinned with one exact ``==`` (no URL, no
    wildcard)."""
    pins: dict[str, str] = {}
    for text in packages:
        requirement = Requirement(text)
        exact = [str(s.version) for s in requirement.specifier if s.operator == "=="]
        if not requirement.url and len(exact) == 1 and "*" not in exact[0]:
            pins[canonicalize_name(requirement.name)] = exact[0]
    return pins


def undeclared_expected(packages: Sequence[str], registry: Registry[LockPlanPack],
                        exclude: Iterable[str] = ()) -> tuple[UndeclaredImport, ...]:
    """What a framework pinned exactly (``Theano-PyMC==1.0.5``) will be found to import
    undeclared, known before resolving: resolved together with the spec's packages, it
    spares the second resolution (``undeclared_missing`` still checks the result). Rows
    for names the spec itself names or leaves to another source are left to that check."""
    named = {canonicalize_name(Requirement(p).name) for p in packages}
    skip = named | {canonicalize_name(name) for name in exclude}
    return tuple(r for r in _undeclared(exact_pins(packages), registry)
                 if canonicalize_name(Requirement(r.requirement).name) not in skip)


def build_record(pspec: PlatformSpec, pypi: Sequence[LockedPypiFile],
                 extra: Mapping[str, tuple[str, ...]] | None = None) -> PypiBuild | None:
    """How the platform's sdists are built, where it has one: the spec's build constraints,
    the sources build requirements come from (the resolution's own), and ``extra``: the
    pinned undeclared requirements of the sdists that have some (``extra_build_pins``)."""
    if not any(f.kind == "sdist" for f in pypi):
        return None
    section = pspec.pypi
    return PypiBuild(constraints=section.build_constraints, index=section.index,
                     find_links=section.find_links, extra_indexes=section.extra_indexes,
                     extra_dependencies=dict(sorted(extra.items())) if extra else None,
                     runtime=runtime_pins(section.build_constraints, pypi) or None)


def runtime_pins(constraints: Sequence[str], pypi: Sequence[LockedPypiFile]) -> tuple[str, ...]:
    """``name<=version`` of the environment's packages whose ABI extensions compile against
    (builds.toml's ``[[abi_package]]``: NumPy), no newer than what the extension will import
    (an older one, as oldest-supported-numpy asks for, is fine), those the spec's own build
    constraints do not name (the user's choice stands)."""
    from envforge.knowledge import abi_packages

    named = {canonicalize_name(Requirement(c).name) for c in constraints}
    abi = abi_packages()
    return tuple(f"{f.name}<={f.version}" for f in sorted(pypi, key=lambda f: f.name)
                 if canonicalize_name(f.name) in abi
                 and canonicalize_name(f.name) not in named)


def extra_build_wanted(pspec: PlatformSpec, pypi: Sequence[LockedPypiFile],
                       ) -> dict[str, tuple[str, ...]]:
    """The spec's extra build requirements of the projects this lock builds from an sdist
    (a project locked as a wheel builds nothing), by normalized name."""
    built = {canonicalize_name(f.name) for f in pypi if f.kind == "sdist"}
    return {name: reqs for name, reqs in sorted(pspec.pypi.extra_build_dependencies.items())
            if name in built}


def extra_build_pins(wanted: Mapping[str, tuple[str, ...]], pypi: Sequence[LockedPypiFile],
                     resolved: Sequence[LockedPypiFile] = ()) -> dict[str, tuple[str, ...]]:
    """Each requirement pinned ``name==version``: at the environment's version where the
    environment has the project and that version satisfies it (an extension is compiled
    against the NumPy it will import), else at ``resolved``'s (``extra_build_unpinned``
    resolved for the same target). ValueError for one neither has."""
    have = {canonicalize_name(f.name): f.version for f in resolved}
    env = {canonicalize_name(f.name): f.version for f in pypi}
    pins: dict[str, tuple[str, ...]] = {}
    for project, requirements in wanted.items():
        pinned = []
        for line in requirements:
            requirement = Requirement(line)
            name = canonicalize_name(requirement.name)
            version = env.get(name) if name in env and requirement.specifier.contains(
                env[name], prereleases=True) else have.get(name)
            if version is None:
                raise ValueError(f"{line}: not resolved")
            pinned.append(f"{requirement.name}=={version}")
        pins[project] = tuple(pinned)
    return pins


def extra_build_unpinned(wanted: Mapping[str, tuple[str, ...]],
                         pypi: Sequence[LockedPypiFile]) -> tuple[str, ...]:
    """The extra build requirements the environment does not satisfy: resolved on their own
    for the same target, so that every build pin is decided at lock time."""
    env = {canonicalize_name(f.name): f.version for f in pypi}
    left: dict[str, str] = {}
    for requirements in wanted.values():
        for line in requirements:
            requirement = Requirement(line)
            name = canonicalize_name(requirement.name)
            if not (name in env and requirement.specifier.contains(env[name], prereleases=True)):
                left.setdefault(name, line)
    return tuple(left[name] for name in sorted(left))


def locked_artifacts(pspec: PlatformSpec,
                     registry: Registry[LockPlanPack]) -> tuple[LockedArtifact, ...]:
    """cuDNN, the CUDA installer and the compiler archive the platform needs, with hashes,
    then each mounted pack's own (``FrameworkPack.artifacts``)."""
    from envforge.knowledge import find_artifact

    found: list[LockedArtifact] = []
    if pspec.cudnn is not None:
        cudnn = pspec.cudnn
        known = find_artifact("cudnn", pspec.platform, cudnn.version,
                              cuda=pspec.cuda.number if pspec.cuda else None,
                              filename=cudnn.archive)
        if cudnn.sha256 is not None:
            found.append(LockedArtifact(
                role="cudnn", filename=cudnn.archive or (cudnn.url or "").rsplit("/", 1)[-1],
                url=cudnn.url, sha256=cudnn.sha256, source="spec", user_supplied=True))
        elif known is not None:
            found.append(LockedArtifact(role="cudnn", filename=known.filename, url=known.url,
                                        sha256=known.sha256, source=known.source,
                                        user_supplied=True))
        else:
            raise InputError(f"cuDNN {cudnn.version} for {pspec.platform}: no known archive; "
                             "give cudnn.archive and cudnn.sha256 in the spec")
    if pspec.cuda is not None and pspec.cuda.exact:
        known = find_artifact("cuda-installer", pspec.platform, pspec.cuda.number)
        if known is not None:
            found.append(LockedArtifact(role="cuda-installer", filename=known.filename,
                                        url=known.url, sha256=known.sha256, source=known.source))
    compiler = pspec.compiler
    if compiler is not None and compiler.kind == "mingw-w64":
        known = find_artifact("compiler", pspec.platform, compiler.version or "8.1.0")
        if known is None:
            raise InputError(f"MinGW-w64 {compiler.version}: no known archive for "
                             f"{pspec.platform}")
        found.append(LockedArtifact(role="compiler", filename=known.filename, url=known.url,
                                    sha256=known.sha256, source=known.source))
    for pack in registry.active(pspec.packs):
        for artifact in pack.artifacts(pspec):
            if artifact.role not in pack.artifact_roles:
                raise ValueError(f"pack {pack.name} locks an artifact of role {artifact.role!r}, "
                                 "which it does not declare (artifact_roles)")
            found.append(artifact)
    return tuple(found)


def apply_inputs(pspec: PlatformSpec) -> ApplyInputs:
    """What apply reads of the spec, recorded in the lock so that apply reads only the lock."""
    return ApplyInputs(compiler=pspec.compiler, path_scope=pspec.path.scope,
                       pythonpath=pspec.environment.pythonpath or None)


def completed(plock: PlatformLock, pspec: PlatformSpec,
              registry: Registry[LockPlanPack]) -> PlatformLock:
    """A reused platform of a lock of format 2 (``lockfile.migrate``) with what that format
    did not record: the ``apply`` table and the packs' tables (their settings, e.g. where
    Theano's rc file goes), from the spec it was locked from; its resolution is kept."""
    if plock.apply is not None:
        return plock
    versions = plock.expect.versions
    packs = {pack.name: pack.expectations(pspec, versions)
             for pack in registry.active(pspec.packs)}
    return plock.model_copy(update={"apply": apply_inputs(pspec), "expect": plock.expect.
                                    model_copy(update={"packs": packs})})


def kernel_device(pspec: PlatformSpec, registry: Registry[LockPlanPack]) -> tuple[str, str]:
    """(device, float type) of the verify kernels: the first mounted pack's, else the CPU's."""
    packs = registry.active(pspec.packs)
    return packs[0].kernel_device(pspec) if packs else ("cpu", "float64")


def expectations_for(pspec: PlatformSpec, registry: Registry[LockPlanPack],
                     versions: dict[str, str]) -> Expectations:
    """What verify must find: versions, device, each pack's table and the kernels' references."""
    from envforge.expectations import kernel_expectations

    packs = registry.active(pspec.packs)
    device, float_x = kernel_device(pspec, registry)
    return Expectations(
        versions=versions,
        device=device,
        float_x=float_x,
        kernels=kernel_expectations(pspec.verify, float_x, packs),
        min_gpu_speedup=pspec.verify.min_gpu_speedup,
        repeats=pspec.verify.repeats,
        cuda=pspec.cuda.version if pspec.cuda else None,
        cudnn=pspec.cudnn.version if pspec.cudnn else None,
        packs={pack.name: pack.expectations(pspec, versions) for pack in packs},
    )
