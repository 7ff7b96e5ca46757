"""Legacy names mapped to what installs today: the original ``theano`` by theano.toml's
[[distributions]] row (to ``Theano-PyMC==1.0.5``, the only Theano envforge locks), others by
the rows of knowledge/legacy_names.toml (``tensorflow-gpu`` admitting 1.15 -> ``tensorflow``,
``pytorch`` -> ``torch``); Python 2 backports and one platform's packages get the marker their
projects spell; conda names become PyPI names, and conda-only packages are reported. The
framework sections a spec mounts follow from the names too (``framework_sections``).
"""

from __future__ import annotations

import functools
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from datetime import date
from importlib import resources
from typing import Any, Protocol, TypeVar
from urllib.parse import urlsplit

from packaging.markers import Marker
from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version
from pydantic import Field

from envforge.importers import exact_version
from envforge.knowledge.models import BuildDebianRow, ImportDebianRow, LibraryDebianRow, Range
from envforge.packapi import Pack, Registry
from envforge.resolve.releases import version_of
from envforge.spec import Frozen


class RenameRow(Frozen):
    name: str
    admits: str | None = None  # None: every version is mapped
    below: str | None = None  # only an exact pin of a release below this one is mapped
    above: str | None = None  # only an exact pin of a release above this one is mapped
    to: str
    reason: str
    source: str


class CondaRenameRow(Frozen):
    name: str
    pypi: str
    source: str


class CondaOnlyRow(Frozen):
    names: tuple[str, ...] = ()
    prefixes: tuple[str, ...] = ()
    reason: str
    source: str


class MarkerRow(Frozen):
    names: tuple[str, ...]
    marker: str
    reason: str
    source: str


class CondaPythonRow(Frozen):
    names: tuple[str, ...]
    source: str


class FrameworkRow(Frozen):
    section: str
    names: tuple[str, ...]
    with_any: tuple[str, ...] = ()
    without: tuple[str, ...] = ()
    keys: dict[str, str] = Field(default_factory=dict)
    # the pack's release line: mounted only where a requirement of ``names`` admits
    # ``admits``; such a requirement gets ``cap`` added and the Python at most ``python_max``
    admits: str | None = None
    below: str | None = None  # and only where every such requirement excludes this release
    # the day ``below`` was uploaded: before it, a requirement that admits the line resolves
    # below it too (an unpinned Keras on a 2017 day is 2.1), so it counts as below
    below_day: date | None = None
    cap: str | None = None
    python_max: str | None = Field(default=None, pattern=r"^3\.\d+$")
    # the requirement init adds where no requirement names the section's back-end
    # (``keys.backend``): Keras named alone needs TensorFlow, which its users installed by
    # hand; the back-end's own row then caps it to its release line (tensorflow<2)
    adds: str | None = None
    reason: str
    source: str
    where: str = "knowledge/legacy_names.toml"  # the file the row came from, for init's comment


class SameModuleRow(Frozen):
    """Distributions that install the same import package: alternatives, one of them kept."""

    names: tuple[str, ...]
    reason: str
    source: str


class PythonReleaseRow(Frozen):
    python: str = Field(pattern=r"^3\.\d+$")
    day: date
    end: date | None = None  # its end of life, where init may propose it after others
    source: str


class TestRunnerRow(Frozen):
    """A test runner the repository's own code shows its tests need: one of ``modules``
    imported, or a file of ``files`` present (``importers/pycode.py`` reads them)."""

    requirement: str
    modules: tuple[str, ...]
    files: tuple[str, ...] = ()
    reason: str
    source: str


class NotebookRunnerRow(Frozen):
    """What runs a repository's Jupyter notebooks where no requirement of ``provided_by``
    gives a notebook front end (``importers/pycode.py`` finds the notebooks)."""

    requirement: str
    provided_by: tuple[str, ...]
    reason: str
    source: str


class PytestPluginRow(Frozen):
    """A pytest plugin the repository's pytest configuration needs: one of ``options`` in
    its addopts (``importers/pytestconfig.py`` reads them)."""

    requirement: str
    options: tuple[str, ...]
    source: str


class RemovedApiRow(Frozen):
    """Names a release of ``requirement`` removed (``below``), and what they needed besides:
    code that uses one caps the requirement below it (``importers/pycode.py`` finds uses)."""

    requirement: str
    names: tuple[str, ...]
    below: str
    needs: tuple[str, ...] = ()
    source: str


class DependencyRemovedApiRow(Frozen):
    """Releases of ``project`` (``versions``) whose own code uses ``uses`` where it cannot do
    without it, which ``requirement`` ``below`` removed: a draft that resolves to both gets
    ``requirement`` capped below it (librosa 0.6-0.7 import ``numba.decorators`` at import;
    numba 0.50 removed it), as the project's users pinned it by hand."""

    project: str
    versions: Range  # PEP 440 range
    uses: str
    requirement: str
    below: str
    source: str


class BuiltAgainstRow(Frozen):
    """A ``release`` of ``project`` whose wheels carry a compiled extension built against
    ``requirement`` ``needs`` while its metadata names ``requirement`` unpinned (torchtext
    0.7-0.8 and torch): a draft that resolves it beside another ``requirement`` excludes the
    releases built against another, as the project's compatibility table says."""

    project: str
    release: str
    requirement: str
    needs: Range
    source: str


class ApiNeedsRow(Frozen):
    """Names whose release imports what they need only where it is installed, while no
    metadata of it requires that (Keras's ``load_img`` and PIL): code that uses one gets
    ``needs`` added."""

    names: tuple[str, ...]
    needs: tuple[str, ...]
    source: str


class GoneApiRow(Frozen):
    """Names no release of ``requirement`` that envforge provides has (Theano's
    ``downsample``, gone before Theano-PyMC): no cap brings them back, so code that uses one
    is reported with what replaced it (``instead``): it needs porting before it runs."""

    requirement: str
    names: tuple[str, ...]
    instead: str
    source: str


class ImportNameRow(Frozen):
    """A distribution known by the module it installs (``cv2``: opencv-python), for code
    that imports it while no requirement names it; ``also`` install the same module."""

    module: str
    requirement: str
    also: tuple[str, ...] = ()
    # added only to a draft made from the code's imports alone (no dependency file): NumPy
    # comes with what a file names, PyPI's only Lasagne is not the one a file would name
    imports_only: bool = False
    # a framework (its pack mounted for it): added beside a dependency file too, before the
    # packs mount, where no requirement names it (its files leave it to the user)
    framework: bool = False
    source: str


class StdlibRow(Frozen):
    """Standard-library modules this interpreter's ``sys.stdlib_module_names`` may lack:
    Python 2's, or those a later Python removed (``last`` had them)."""

    names: tuple[str, ...]
    last: str = Field(pattern=r"^[23]\.\d+$")
    source: str


class YankedReleaseRow(Frozen):
    """Releases an index marks yanked for a ``reason`` that does not hold for the Pythons
    envforge locks: an exact pin installs a yanked release (PEP 592), so init keeps a
    repository's exact pin of one (and may move a pin to one) rather than count it gone."""

    project: str
    versions: str  # a PEP 440 specifier of the releases kept
    reason: str  # the yank reason the index gives, word for word
    source: str


class NotDistributionRow(Frozen):
    """Names a tool wrote into requirements files that no index holds as a distribution:
    skipped with the reason, as a conda file's ``python`` is."""

    names: tuple[str, ...]
    reason: str
    source: str


class DockerImageRow(Frozen):
    """A base image whose tag names the framework release it holds (``tag`` a regular
    expression with a ``version`` group; ``requirement`` a template of it)."""

    image: str
    tag: str
    requirement: str
    source: str


class MetadataRefusedRow(Frozen):
    """A project's releases (``versions``) whose metadata today's resolvers refuse; ``day``
    the day after its first later release came, whose metadata parses."""

    project: str
    versions: str
    day: date
    reason: str
    source: str


class PypiMirrorRow(Frozen):
    """A public mirror of PyPI (``urls`` without scheme or trailing slash): a ``-i`` naming
    it resolves from PyPI itself, whose releases it copies."""

    name: str
    urls: tuple[str, ...]
    source: str


class LegacyNames(Frozen):
    rename: tuple[RenameRow, ...]
    conda_rename: tuple[CondaRenameRow, ...]
    conda_only: tuple[CondaOnlyRow, ...]
    conda_python: tuple[CondaPythonRow, ...] = ()
    marker: tuple[MarkerRow, ...] = ()
    framework: tuple[FrameworkRow, ...] = ()
    same_module: tuple[SameModuleRow, ...] = ()
    python_release: tuple[PythonReleaseRow, ...]
    test_runner: tuple[TestRunnerRow, ...] = ()
    pytest_plugin: tuple[PytestPluginRow, ...] = ()
    notebook_runner: tuple[NotebookRunnerRow, ...] = ()
    removed_api: tuple[RemovedApiRow, ...] = ()
    dependency_removed_api: tuple[DependencyRemovedApiRow, ...] = ()
    built_against: tuple[BuiltAgainstRow, ...] = ()
    gone_api: tuple[GoneApiRow, ...] = ()
    api_needs: tuple[ApiNeedsRow, ...] = ()
    import_name: tuple[ImportNameRow, ...] = ()
    import_debian: tuple[ImportDebianRow, ...] = ()
    library_debian: tuple[LibraryDebianRow, ...] = ()
    build_debian: tuple[BuildDebianRow, ...] = ()
    stdlib: tuple[StdlibRow, ...] = ()
    yanked_release: tuple[YankedReleaseRow, ...] = ()
    not_distribution: tuple[NotDistributionRow, ...] = ()
    docker_image: tuple[DockerImageRow, ...] = ()
    metadata_refused: tuple[MetadataRefusedRow, ...] = ()
    pypi_mirror: tuple[PypiMirrorRow, ...] = ()


def module_names(distribution: str) -> tuple[str, ...]:
    """The modules a distribution is imported by: its [[import_name]] rows' (``cv2`` for
    opencv-python), then its own name's (``atari_py`` for atari-py, ``gym``)."""
    key = canonicalize_name(distribution)
    known = [row.module for row in legacy_names().import_name
             if canonicalize_name(row.requirement) == key]
    return tuple(dict.fromkeys([*known, key.replace("-", "_")]))


def without_refused_metadata(name: str, files: Sequence[Mapping[str, Any]]
                             ) -> list[Mapping[str, Any]]:
    """An index's file list of ``name`` less the releases whose metadata today's resolvers
    refuse (``[[metadata_refused]]``): what a range can resolve to."""
    rows = _rows_of(name, legacy_names().metadata_refused)
    return [entry for entry in files if not _release_rows(entry, rows)]


class _ReleasesRow(Protocol):
    @property
    def project(self) -> str: ...

    @property
    def versions(self) -> str: ...  # a PEP 440 specifier of the releases the row is about


_Row = TypeVar("_Row", bound=_ReleasesRow)


def _rows_of(name: str, rows: Iterable[_Row]) -> list[_Row]:
    key = canonicalize_name(name)
    return [row for row in rows if canonicalize_name(row.project) == key]


def _release_rows(entry: Mapping[str, Any], rows: Sequence[_Row]) -> list[_Row]:
    """The rows whose releases hold an index file (by the version its file name gives)."""
    version = version_of(str(entry.get("filename", ""))) if rows else None
    return [] if version is None else [
        row for row in rows if SpecifierSet(row.versions).contains(version, prereleases=True)]


def not_distribution(name: str) -> str | None:
    """Why a requirement's name is no distribution (``pkg-resources``), None for the rest."""
    key = canonicalize_name(name)
    return next((f"{row.reason} (knowledge/legacy_names.toml)" for row in
                 legacy_names().not_distribution
                 if key in {canonicalize_name(n) for n in row.names}), None)


def pypi_mirror(url: str) -> PypiMirrorRow | None:
    """The PyPI mirror an index URL names (``https://pypi.tuna.tsinghua.edu.cn/simple/``),
    None for any other index."""
    key = _index_key(url)
    return next((row for row in legacy_names().pypi_mirror
                 if key in {_index_key(u) for u in row.urls}), None)


def _index_key(url: str) -> str:
    """An index URL without scheme, port 443/80, the host's case or a trailing slash."""
    split = urlsplit(url if "://" in url else f"https://{url}")
    host = (split.hostname or "").lower()
    return f"{host}{split.path.rstrip('/')}"


@functools.cache
def legacy_names() -> LegacyNames:
    text = resources.files("envforge.knowledge").joinpath("legacy_names.toml").read_text(
        encoding="utf-8")
    return LegacyNames.model_validate(tomllib.loads(text))


def kept_yanked(name: str, files: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """An index's file list of ``name`` for an exact pin: the files of a
    ``[[yanked_release]]`` row's releases, yanked for its reason word for word, no longer
    yanked (an exact pin installs them, PEP 592); any other yanked file stays yanked. Only
    for exact pins: a range does not take a yanked release, so a day's narrowing must not
    count them."""
    rows = _rows_of(name, legacy_names().yanked_release)
    return [{**entry, "yanked": False} if any(
        entry.get("yanked") == row.reason for row in _release_rows(entry, rows))
        else entry for entry in files]


class LegacyPack(Pack, Protocol):
    """What drafting asks of a pack: its own rewrite of a legacy requirement, if any."""

    def legacy_requirement(self, text: str) -> tuple[str, str] | None: ...


class InitPack(Pack, Protocol):
    """What init asks of a pack: rows mounting its section, after the core file's."""

    @property
    def init_frameworks(self) -> Sequence[Mapping[str, Any]]: ...


def _pinned_in(requirement: Requirement, versions: str) -> bool:
    """Whether the requirement pins one release (``==``), of a version in ``versions``
    (``<1.14``: below, ``>0.5.6``: above)."""
    exact = exact_version(requirement)
    try:
        return exact is not None and SpecifierSet(versions).contains(exact, prereleases=True)
    except (InvalidSpecifier, InvalidVersion):
        return False


def map_requirement(text: str, registry: Registry[LegacyPack]) -> tuple[str, str]:
    """The requirement to write and, when it changed, why (with the rule's source): the
    first pack's rewrite, else the legacy-names rows."""
    try:
        requirement = Requirement(text)
    except InvalidRequirement:
        return text, ""
    name = canonicalize_name(requirement.name)
    for pack in registry:
        rewritten = pack.legacy_requirement(text)
        if rewritten is not None:
            return rewritten
    kept = ""
    for row in legacy_names().rename:
        if row.name != name or requirement.url:
            continue
        if row.admits is not None and not requirement.specifier.contains(row.admits,
                                                                         prereleases=True):
            kept = kept or (f"kept as written: it does not admit {row.admits} "
                            f"({row.to.replace('{specifier}', '')} would)")
            continue
        if row.below is not None and not _pinned_in(requirement, f"<{row.below}"):
            continue
        if row.above is not None and not _pinned_in(requirement, f">{row.above}"):
            continue
        mapped = row.to.replace("{specifier}", str(requirement.specifier))
        if requirement.marker is not None:
            mapped += f"; {requirement.marker}"
        return mapped, f"was {text}: {row.reason} (knowledge/legacy_names.toml)"
    if kept:
        return text, kept
    for marker_row in legacy_names().marker:
        if name not in {canonicalize_name(n) for n in marker_row.names}:
            continue
        ours = str(Marker(marker_row.marker))
        if requirement.marker is not None and ours in str(requirement.marker):
            return text, ""
        marked = Requirement(text)
        marked.marker = None
        joined = ours if requirement.marker is None else f"({requirement.marker}) and {ours}"
        return f"{marked}; {joined}", f"{ours} added: {marker_row.reason} " \
            "(knowledge/legacy_names.toml)"
    return text, ""


def module_group(name: str) -> str:
    """The name a distribution merges under: the first of its [[same_module]] row (two
    files naming ``tensorflow`` and ``tensorflow-gpu`` are one requirement), else its own."""
    name = canonicalize_name(name)
    for row in legacy_names().same_module:
        group = [canonicalize_name(n) for n in row.names]
        if name in group:
            return group[0]
    return name


def framework_sections(requirements: Iterable[str], packs: Iterable[InitPack], *,
                       day: date | None = None) -> list[FrameworkRow]:
    """The sections a spec with these requirements mounts, one row per section (the first
    that applies), in the rows' order; a row with ``admits`` only where one of its
    requirements admits that release (``tensorflow>=2`` mounts no TensorFlow 1.x pack); a
    row with ``below`` where each of them excludes it, or, resolved as of a ``day`` before
    its ``below_day``, admits the line."""
    parsed = [Requirement(text) for text in requirements]
    held = {canonicalize_name(r.name) for r in parsed}
    chosen: dict[str, FrameworkRow] = {}
    for row in (*legacy_names().framework, *_pack_rows(packs)):
        if row.section in chosen or held.isdisjoint(map(canonicalize_name, row.names)):
            continue
        if row.with_any and held.isdisjoint(map(canonicalize_name, row.with_any)):
            continue
        if not held.isdisjoint(map(canonicalize_name, row.without)):
            continue
        if row.admits is not None and not any(_admits(r, row) for r in parsed):
            continue
        if row.below is not None and not all(
                _below(r, row.below) or (day is not None and row.below_day is not None
                                         and day < row.below_day and _admits(r, row))
                for r in parsed if _named(r, row)):
            continue
        chosen[row.section] = row
    return list(chosen.values())


def section_names(section: str, packs: Iterable[InitPack]) -> set[str]:
    """Every distribution name a row of ``section`` mounts it for, canonical (TensorFlow's:
    tensorflow, tensorflow-gpu, tensorflow-cpu)."""
    return {canonicalize_name(name) for row in (*legacy_names().framework, *_pack_rows(packs))
            if row.section == section for name in row.names}


def _pack_rows(packs: Iterable[InitPack]) -> tuple[FrameworkRow, ...]:
    """Each pack's own rows (``FrameworkPack.init_frameworks``), after the core file's."""
    return tuple(FrameworkRow.model_validate({**row, "where": f"the {pack.name} pack"})
                 for pack in packs for row in pack.init_frameworks)


def _named(requirement: Requirement, row: FrameworkRow) -> bool:
    return canonicalize_name(requirement.name) in {canonicalize_name(n) for n in row.names}


def _admits(requirement: Requirement, row: FrameworkRow) -> bool:
    """The requirement is on the row's release line: it admits the line's ``admits`` release,
    or one of its exact pins lies under the ``cap`` (``tensorflow==1.3`` is TensorFlow 1.x)."""
    if not _named(requirement, row) or row.admits is None or requirement.url is not None:
        return False
    if requirement.specifier.contains(row.admits, prereleases=True):
        return True
    line = SpecifierSet(row.cap) if row.cap else None
    return line is not None and any(
        s.operator in ("==", "~=", "===") and line.contains(s.version.rstrip(".*"),
                                                             prereleases=True)
        for s in requirement.specifier)


def _below(requirement: Requirement, version: str) -> bool:
    """Every release the requirement admits is older than ``version``: its exact pins are, or
    (a range) it admits neither ``version`` nor anything after it."""
    if requirement.url is not None or not requirement.specifier:
        return False
    exact = [s.version for s in requirement.specifier if s.operator in ("==", "===")]
    if exact:
        return all(Version(v.rstrip(".*")) < Version(version) for v in exact)
    later = (version, f"{version}.99", f"{Version(version).major}.99", "99")
    return not any(requirement.specifier.contains(v, prereleases=True) for v in later)


def capped(text: str, row: FrameworkRow) -> str | None:
    """``text`` with the row's cap added where the row's release line needs it (``tensorflow``
    -> ``tensorflow<2``), None where it needs none."""
    requirement = Requirement(text)
    if row.cap is None or not _admits(requirement, row):
        return None
    capped_set = requirement.specifier & SpecifierSet(row.cap)
    if str(capped_set) == str(requirement.specifier) or all(
            capped_set.contains(v) == requirement.specifier.contains(v)
            for v in ("2.0.0", "3.0.0", "99")):
        return None
    requirement.specifier = capped_set
    return str(requirement)


def conda_to_pypi(name: str) -> tuple[str | None, str]:
    """The PyPI name of a conda package, or None and the reason it is not imported."""
    key = canonicalize_name(name)
    for row in legacy_names().conda_rename:
        if row.name == key:
            return row.pypi, f"conda's {name} is {row.pypi} on PyPI"
    if any(key in map(canonicalize_name, row.names) for row in legacy_names().conda_python):
        return name, ""
    for only in legacy_names().conda_only:
        if key in map(canonicalize_name, only.names) or name.lower().startswith(only.prefixes):
            return None, only.reason
    return name, ""


def python_end_day(minor: str) -> date | None:
    """The day Python ``minor`` reached its end of life, where the knowledge base has it."""
    return next((r.end for r in legacy_names().python_release if r.python == minor), None)


def python_release_day(minor: str) -> date | None:
    """The day Python ``minor`` was released: no earlier ``as_of`` can resolve for it."""
    return next((r.day for r in legacy_names().python_release if r.python == minor), None)
