"""Pure parts of locking: the stack's versions, its artifacts and verify's expectations."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from envforge.errors import InputError
from envforge.lockfile import (
    Expectations,
    LockedArtifact,
    LockedCondaPackage,
    LockedDeb,
    LockedPypiFile,
    PypiBuild,
)
from envforge.spec import PlatformSpec

if TYPE_CHECKING:
    from envforge.knowledge.models import UndeclaredImport

# Package names, per source, of the parts of the stack verify checks (a pack adds its own:
# FrameworkPack.stack_names).
_STACK_NAMES: dict[str, str] = {
    "python": "python", "numpy": "numpy", "scipy": "scipy", "six": "six",
    "pygpu": "pygpu", "libgpuarray": "libgpuarray",
    "python3-numpy": "numpy", "python3-scipy": "scipy", "python3-six": "six",
    "python3-pygpu": "pygpu", "libgpuarray3": "libgpuarray",
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


def stack_versions(pspec: PlatformSpec, *, pypi: Sequence[LockedPypiFile],
                   conda: Sequence[LockedCondaPackage],
                   deb: Sequence[LockedDeb]) -> dict[str, str]:
    """The versions of the stack's parts as locked; later sources win (PyPI over Debian).

    The parts are the core's and each mounted pack's (``FrameworkPack.stack_names``)."""
    from envforge.packs import active_packs

    names = dict(_STACK_NAMES)
    for pack in active_packs(pspec):
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


def _undeclared(versions: dict[str, str]) -> list[UndeclaredImport]:
    """Each pack's rows for the releases ``versions`` (canonical name -> version) name."""
    from envforge.packs import PACKS

    return [row for pack in PACKS.values() for row in pack.undeclared_imports(versions)]


def undeclared_missing(pypi: Sequence[LockedPypiFile],
                       exclude: Iterable[str] = ()) -> tuple[UndeclaredImport, ...]:
    """What the resolved framework imports but does not declare, and the resolution lacks.

    A requirement already met (a spec that pins setuptools itself) or provided elsewhere
    (``pypi.provided_elsewhere``) needs nothing more.
    """
    locked: dict[str, str] = {canonicalize_name(f.name): f.version for f in pypi}
    skip = {canonicalize_name(name) for name in exclude}
    missing = []
    for row in _undeclared(locked):
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


def undeclared_expected(packages: Sequence[str],
                        exclude: Iterable[str] = ()) -> tuple[UndeclaredImport, ...]:
    """What a framework pinned exactly (``Theano-PyMC==1.0.5``) will be found to import
    undeclared, known before resolving: resolved together with the spec's packages, it
    spares the second resolution (``undeclared_missing`` still checks the result). Rows
    for names the spec itself names or leaves to another source are left to that check."""
    named = {canonicalize_name(Requirement(p).name) for p in packages}
    skip = named | {canonicalize_name(name) for name in exclude}
    return tuple(r for r in _undeclared(exact_pins(packages))
                 if canonicalize_name(Requirement(r.requirement).name) not in skip)


def build_record(pspec: PlatformSpec, pypi: Sequence[LockedPypiFile]) -> PypiBuild | None:
    """How the platform's sdists are built, where it has one: the spec's build constraints
    and the sources build requirements come from (the resolution's own)."""
    if not any(f.kind == "sdist" for f in pypi):
        return None
    section = pspec.pypi
    return PypiBuild(constraints=section.build_constraints, index=section.index,
                     find_links=section.find_links, extra_indexes=section.extra_indexes)


def locked_artifacts(pspec: PlatformSpec) -> tuple[LockedArtifact, ...]:
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
    from envforge.packs import active_packs

    for pack in active_packs(pspec):
        for artifact in pack.artifacts(pspec):
            if artifact.role not in pack.artifact_roles:
                raise ValueError(f"pack {pack.name} locks an artifact of role {artifact.role!r}, "
                                 "which it does not declare (artifact_roles)")
            found.append(artifact)
    return tuple(found)


def kernel_device(pspec: PlatformSpec) -> tuple[str, str]:
    """(device, float type) of the verify kernels: the first mounted pack's, else the CPU's."""
    from envforge.packs import active_packs

    packs = active_packs(pspec)
    return packs[0].kernel_device(pspec) if packs else ("cpu", "float64")


def expectations_for(pspec: PlatformSpec, versions: dict[str, str]) -> Expectations:
    """What verify must find: versions, device, each pack's table and the kernels' references."""
    from envforge.expectations import kernel_expectations
    from envforge.packs import active_packs

    packs = active_packs(pspec)
    device, float_x = kernel_device(pspec)
    return Expectations(
        versions=versions,
        device=device,
        float_x=float_x,
        kernels=kernel_expectations(pspec.verify, float_x),
        min_gpu_speedup=pspec.verify.min_gpu_speedup,
        repeats=pspec.verify.repeats,
        cuda=pspec.cuda.version if pspec.cuda else None,
        cudnn=pspec.cudnn.version if pspec.cudnn else None,
        packs={pack.name: pack.expectations(pspec, versions) for pack in packs},
    )
