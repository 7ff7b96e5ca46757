"""Drafting a spec from a legacy repository: its dependency files read (never run), the
Python and the day to resolve as of proposed, exact pins with no wheel for that Python moved
to the nearest release with one (the day following them).

The index's JSON API (queried side by side, within the deadline) and the repository's git
history feed the proposals; ``app/settling.py`` then settles the draft on a variant that
locks.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import wait as wait_all
from dataclasses import replace
from datetime import date
from pathlib import Path
from typing import Any

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

from envforge.app.packs import installed_packs
from envforge.confine import EscapeError, resolved_inside
from envforge.errors import InputError, SpecError
from envforge.importers import Found, Imported, Skipped, exact_version, release_line
from envforge.importers.codeimports import from_imports
from envforge.importers.legacy_names import (
    capped,
    framework_sections,
    kept_yanked,
    legacy_names,
    map_requirement,
    module_names,
    section_names,
)
from envforge.importers.localbuilds import local_label, public_pins, public_version, sources
from envforge.importers.propose import (
    CANDIDATES,
    DEFAULT_PYTHON,
    OLDER,
    Proposal,
    era_for_python,
    line_files,
    older_for_code,
    older_of_the_day,
    propose_as_of,
    propose_python,
    release_files,
    repair_pin,
)
from envforge.importers.pycode import CodeScan, notebook_installs, scan_code
from envforge.importers.pyfiles import TEST_EXTRAS, extra_of
from envforge.importers.pytestconfig import option_line, passes, pytest_addopts
from envforge.importers.readme import clone_for, of_imported, read_readme, readme_name
from envforge.importers.render import Draft
from envforge.importers.repository import Repository, merge, read_repository
from envforge.inputfile import DEPENDENCY_LIMIT, read_input_text
from envforge.resolve.releases import releases_from_files
from envforge.spec import PYPI_SIMPLE, Platform

Lookup = Callable[[str, str], "Sequence[Mapping[str, Any]] | None"]
Say = Callable[[str], None]

_LOOKUP_THREADS = 8


def spec_name(root: Path) -> str:
    """The repository folder's name as a spec name (``DeepSurv`` -> ``deepsurv``)."""
    name = re.sub(r"[^a-z0-9._-]+", "-", root.resolve().name.lower()).strip("-._")
    return name or "imported"


def exact_pins(repo: Repository, *, mapped: bool = False) -> dict[str, tuple[str, str]]:
    """``name==version`` -> (name, version) for every exact pin the project made (with
    ``mapped``, also the ones init mapped a legacy name to)."""
    pins = {}
    for found in repo.imported.requirements:
        if found.mapped and not mapped:
            continue
        requirement = Requirement(found.requirement)
        version = exact_version(requirement)
        if version is not None:
            pins[f"{requirement.name}=={version}"] = (requirement.name, version)
    return pins


def line_pins(repo: Repository) -> dict[str, tuple[str, str]]:
    """``name==X.Y.*`` -> (name, ``X.Y.*``) for every pin of a release line (a README's
    "PyTorch: 1.0", named as the index names it: torch): the Python proposed must have
    files for some release of it."""
    pins = {}
    for found in repo.imported.requirements:
        requirement = Requirement(map_requirement(found.requirement, installed_packs())[0])
        line = release_line(requirement)
        if line is not None and requirement.url is None:
            pins[f"{requirement.name}=={line}"] = (requirement.name, line)
    return pins


def draft_spec(root: Path, *, source: str, name: str, platform: Platform,
               lookup: Lookup | None, commit_day: date | None, say: Say = lambda _: None,
               deadline: float | None = None) -> Draft:
    """Read the repository and make the proposals; ``lookup`` None means no index queries.
    ``deadline`` (time.monotonic()) bounds the index queries: a project not listed by then
    counts as unknown."""
    repo = _with_notebook_installs(read_repository(root, installed_packs()), root)
    rows = legacy_names()
    watched = frozenset({*(name for row in rows.removed_api for name in row.names),
                         *(name for row in rows.gone_api for name in row.names),
                         *(name for row in rows.api_needs for name in row.names),
                         *(name for row in rows.import_debian for name in row.names)})
    scanned: dict[str, CodeScan] = {}  # by the Python parsed for: one scan where it stays
    readme = _readme_file(root)
    stated = read_readme(*readme) if readme is not None else Imported()
    if stated.requirements or stated.python:  # of what the files leave out, before pins
        scanned[DEFAULT_PYTHON] = scan_code(root, _minor_tuple(DEFAULT_PYTHON), watched)
        repo = _with_readme(repo, stated, scanned[DEFAULT_PYTHON], DEFAULT_PYTHON)
    index = repo.imported.index[0][0] if repo.imported.index else None
    if not sources(repo.imported) and index in (None, PYPI_SIMPLE):
        repo = _with_requirements(repo, public_pins(
            repo.imported.requirements, "and the requirements name no find-links page or "
            "index that serves it"))
    pins, lines = exact_pins(repo, mapped=True), line_pins(repo)
    listings: dict[str, Sequence[Mapping[str, Any]]] = {}
    if lookup is not None and (pins or lines):
        asked = {**pins, **lines}
        say(f"querying {_host(index or PYPI_SIMPLE)} for {len(asked)} "
            f"pin{'s' if len(asked) != 1 else ''}…")
        listings = _query(lookup, index or PYPI_SIMPLE, asked, deadline)
        if not listings and index not in (None, PYPI_SIMPLE):  # unreachable, or HTML alone
            say(f"{_host(index or PYPI_SIMPLE)} listed none of them; querying "
                f"{_host(PYPI_SIMPLE)} for the proposals…")
            listings = _query(lookup, PYPI_SIMPLE, asked, deadline)
    # the project's own pins date it, a local build by the release it was built from
    files = {pin: release_files(listings[pin], public_version(version))
             for pin, (_, version) in exact_pins(repo).items() if listings.get(pin)}
    as_of = propose_as_of(files, commit_day)
    older = _host_older()
    # a line's pin (torch==1.0.*, whose wheels stop at cp37) bounds the Python as one does
    python = propose_python({**files, **{pin: line_files(listings[pin], line)
                                         for pin, (_, line) in lines.items()
                                         if listings.get(pin)}},
                            as_of.value, repo.imported.python, older=older)
    early = scanned[python.minor] = scanned.get(python.minor) or scan_code(
        root, _minor_tuple(python.minor), watched)
    stops = early.generator_stops if _generator_stops(early, python.minor) else ()
    kept = older_for_code(python, files, repo.imported.python, older, (
        f"{stops[0]} raises StopIteration into a generator, which Python 3.7 and later turn "
        "into RuntimeError (PEP 479)"), as_of.value) if stops else None
    if kept is not None:
        python = kept
        early = scanned[python.minor] = scan_code(root, _minor_tuple(python.minor), watched)
    # before the packs mount for the requirements: a framework the code imports is one
    repo = _from_imports(source, repo, early, python.minor) if not repo.files else \
        _with_imported(repo, early, frameworks=True)
    repo, python = _release_lines(repo, python)
    minor = python.minor
    as_of = era_for_python(as_of, minor)
    repaired = _repaired(repo, pins, listings, minor, platform)
    as_of = _era_of_moved(as_of, repo, repaired, listings)
    code = scanned[minor] if minor in scanned else scan_code(root, _minor_tuple(minor), watched)
    repo = _with_api_needs(_capped_for_removed_apis(repaired, code), code)
    repo = _with_test_runners(_with_imported(_with_extras(repo, code), code), code, root)
    repo = _with_absent(_with_commented(repo, code), code,
                        readme[1] if readme is not None else None,
                        (root / ".gitmodules").is_file())
    return Draft(name=name, source=source, repository=repo, platform=platform,
                 python=_full_python(python), as_of=as_of,
                 index=index if index and index != PYPI_SIMPLE else None, code=code,
                 python_fallback=_older(python, as_of, older),
                 to_port=(*_gone_apis(repo, code), *_generator_stops(code, minor)))


def _with_notebook_installs(repo: Repository, root: Path) -> Repository:
    """The repository's requirements with what its notebooks ``!pip install``, merged as a
    dependency file's are (its files' exact pins first), the notebooks among its files."""
    installed, notebooks = notebook_installs(root)
    if not installed.requirements:
        return repo
    imported = repo.imported
    return Repository((*repo.files, *notebooks), replace(
        imported, requirements=merge([*imported.requirements, *installed.requirements],
                                     installed_packs()),
        skipped=[*imported.skipped, *installed.skipped],
        find_links=[*imported.find_links, *installed.find_links],
        extra_indexes=[*imported.extra_indexes, *installed.extra_indexes]))


def _from_imports(source: str, repo: Repository, code: CodeScan, minor: str) -> Repository:
    """No dependency file: the requirements the code's imports call for, mapped as a file's
    are (``theano`` -> Theano-PyMC), each unknown module reported beside what the files
    left out. Refused where the code imports nothing outside itself and the standard
    library: there is nothing to draft from."""
    drafted = from_imports(code, minor)
    if not drafted.requirements and not drafted.skipped:
        raise InputError(f"{source}: no requirements*.txt, setup.py, setup.cfg, Pipfile, "
                         "Pipfile.lock, environment.yml or conda list file found, and no .py "
                         "file of it imports a distribution")
    named = {canonicalize_name(Requirement(f.requirement).name)
             for f in repo.imported.requirements}  # the README's, a module's own name
    return Repository(repo.files, replace(
        repo.imported, requirements=merge([*repo.imported.requirements, *drafted.requirements],
                                          installed_packs()),
        skipped=[*repo.imported.skipped, *(s for s in drafted.skipped
                                           if canonicalize_name(s.what) not in named)]))


def _with_commented(repo: Repository, code: CodeScan) -> Repository:
    """Each requirement a pip file comments out (``# mxnet``) whose module the code imports
    and no requirement names, reported with both places: the code that needs it will not
    run, and the file's author chose to leave it out (hunkim/DeepLearningZeroToAll's
    ``mxnet/`` and ``chainer/`` labs), so it is said, not added."""
    given = {module for f in repo.imported.requirements
             for module in module_names(Requirement(f.requirement).name)}
    skipped = []
    for found in repo.imported.commented:
        module = next((m for m in module_names(Requirement(found.requirement).name)
                       if m in code.imports), None)
        if module is None or module in given:  # another line gives it (sklearn's)
            continue
        given.add(module)
        skipped.append(Skipped(f"# {found.requirement}", found.origin,
                               f"commented out, and {code.imports[module]} imports {module}: "
                               "not added (the code that imports it needs it: uncomment it "
                               "to run that code)"))
    if not skipped:
        return repo
    return Repository(repo.files, replace(repo.imported,
                                          skipped=[*repo.imported.skipped, *skipped]))


def _with_absent(repo: Repository, code: CodeScan, readme: str | None,
                 submodules: bool) -> Repository:
    """Each module of the repository's own packages that its code imports and it lacks,
    reported with where it comes from when the repository says so: its README's ``git
    clone`` (NVlabs/SPADE's sync_batchnorm) or, with ``submodules`` (a ``.gitmodules``), a
    submodule not checked out. envforge provisions packages, not the project's source: the
    user fetches it."""
    skipped = []
    for module, where in code.absent.items():
        clone = clone_for(readme, module) if readme is not None else None
        if clone is not None:
            how = f"its README's line {clone[0]} clones {clone[1]} for it: do that step by hand"
        elif submodules:
            how = ("a git submodule (.gitmodules) not checked out? `git submodule update "
                   "--init`")
        else:
            how = "fetch it by hand"
        skipped.append(Skipped(module, where, f"a module of the repository's own that the "
                               f"repository does not hold ({how}); envforge provisions "
                               "packages, not the project's source"))
    if not skipped:
        return repo
    return Repository(repo.files, replace(repo.imported,
                                          skipped=[*repo.imported.skipped, *skipped]))


def _readme_file(root: Path) -> tuple[str, str] | None:
    """The README's name and text; None where it has none or it cannot be read (too large, a
    link out of the repository, not text): it is evidence, never required."""
    name = readme_name([p.name for p in root.iterdir() if p.is_file()])
    if name is None:
        return None
    try:
        return name, read_input_text(resolved_inside(root, name), DEPENDENCY_LIMIT,
                                     lenient=True)
    except (EscapeError, SpecError, OSError):
        return None


def _with_readme(repo: Repository, stated: Imported, code: CodeScan, minor: str) -> Repository:
    """The README's versions of what the code imports and the files do not name: with no
    dependency file, every distribution the imports call for, first among the requirements,
    and its Python; beside files, only where they leave a framework to the user
    (keithito/tacotron's requirements.txt: "It is assumed you have already installed
    tensorflow", its README: "This code works with TensorFlow 1.3 and later"): that
    framework's statement, and the README's Python where the files state none. Either way
    its pins date the project as a file's would."""
    found = repo.imported.requirements
    if repo.files:
        framed = _with_imported(repo, code, frameworks=True).imported.requirements
        drafted = Imported(requirements=[f for f in framed if f not in found])
    else:
        drafted = from_imports(code, minor)
    if not drafted.requirements and not drafted.skipped:
        return repo
    kept = of_imported(stated, drafted, installed_packs())
    python = repo.imported.python
    return Repository(repo.files, replace(
        repo.imported,
        requirements=[*found, *kept.requirements] if repo.files else [*kept.requirements,
                                                                       *found],
        python=(python or kept.python) if repo.files else [*kept.python, *python]))


def _release_lines(repo: Repository, python: Proposal) -> tuple[Repository, Proposal]:
    """A framework pack bound to a release line (TensorFlow 1.x) caps the requirements it
    mounts for (``tensorflow`` -> ``tensorflow<2``) and the Python (at most 3.7), each
    change in the pin's note and the Python's reason (knowledge/legacy_names.toml)."""
    repo = _with_backends(repo)
    rows = framework_sections([f.requirement for f in repo.imported.requirements],
                              installed_packs())
    changed: list[Found] = []
    for found in repo.imported.requirements:
        for row in rows:
            text = capped(found.requirement, row)
            if text is not None:
                found = Found(text, found.origin, _joined(
                    found.note, f"was {found.requirement}: [{row.section}] {row.reason}"), True)
        changed.append(found)
    for row in rows:
        if row.python_max is not None and python.value is not None and _minor_tuple(
                python.value) > _minor_tuple(row.python_max):
            python = Proposal(row.python_max, f"{python.why}, at most {row.python_max} for "
                              f"[{row.section}] ({row.source})")
    return Repository(repo.files, replace(repo.imported, requirements=changed)), python


def _with_backends(repo: Repository) -> Repository:
    """The requirements with each mounted section's back-end added where no requirement
    names it (``Keras==2.0.9`` alone: ``tensorflow``, which [tensorflow]'s row then caps to
    ``tensorflow<2``, and the era's TensorFlow is resolved), noted on the line that named
    the framework."""
    found = repo.imported.requirements
    rows = framework_sections([f.requirement for f in found], installed_packs())
    held: set[str] = {canonicalize_name(Requirement(f.requirement).name) for f in found}
    added: list[Found] = []
    for row in rows:
        backend = row.keys.get("backend")
        if row.adds is None or backend is None:
            continue
        backends = section_names(backend, installed_packs())
        if not held.isdisjoint(backends):
            continue
        named = next(f for f in found if canonicalize_name(Requirement(f.requirement).name)
                     in {canonicalize_name(n) for n in row.names})
        added.append(Found(row.adds, named.origin, f"added: [{row.section}] backend = "
                           f"\"{backend}\", which no requirement names", True))
        held |= backends
    return _with_requirements(repo, [*found, *added])


def _generator_stops(code: CodeScan, minor: str) -> tuple[str, ...]:
    """Each ``raise StopIteration`` in a generator, where the proposed Python (3.7 or later)
    makes it a RuntimeError (PEP 479: https://peps.python.org/pep-0479/, "Python 3.7:
    Enable new semantics everywhere"); 3.6 and earlier only warn."""
    if _minor_tuple(minor) < (3, 7):
        return ()
    return tuple(f"{where} raises StopIteration into a generator, which Python {minor} "
                 "turns into RuntimeError (PEP 479): port it to `return`, or set [python] "
                 "version to 3.6" for where in code.generator_stops)


def _gone_apis(repo: Repository, code: CodeScan) -> tuple[str, ...]:
    """Each use of an API that no release of a requirement the draft holds has (Theano's
    ``downsample``: knowledge/legacy_names.toml's [[gone_api]] rows), with what replaced it:
    no pin helps, the code needs a port."""
    held = {canonicalize_name(Requirement(f.requirement).name)
            for f in repo.imported.requirements}
    return tuple(f"{code.uses[name]} uses {name}, which no release of {row.requirement} has: "
                 f"port it to {row.instead}"
                 for row in legacy_names().gone_api if canonicalize_name(row.requirement) in held
                 for name in row.names if name in code.uses)


def _capped_for_removed_apis(repo: Repository, code: CodeScan) -> Repository:
    """The requirements capped below the release that removed an API the repository's code
    uses (``from scipy.misc import imread``: scipy<1.3), the distribution added so capped
    where no requirement names it, and what the API needed besides (Pillow) added; a
    requirement that does not admit the removing release (``scipy==1.1.0``, ``<1.2``) is
    left as it is (knowledge/legacy_names.toml's [[removed_api]] rows)."""
    found = list(repo.imported.requirements)
    added: list[Found] = []
    for row in legacy_names().removed_api:
        used = sorted((code.uses[name], name) for name in row.names if name in code.uses)
        if not used:
            continue
        where, name = used[0]
        why = f"{where} uses {name}, which {row.requirement} {row.below} removed"
        names = [canonicalize_name(Requirement(f.requirement).name) for f in [*found, *added]]
        key = canonicalize_name(row.requirement)
        if key not in names:
            added.append(Found(f"{row.requirement}<{row.below}", where,
                               f"added: that line uses {name}, which {row.requirement} "
                               f"{row.below} removed, and no requirement names it", True))
        elif key in names[:len(found)]:
            at = names.index(key)
            requirement = Requirement(found[at].requirement)
            if requirement.url is None and requirement.specifier.contains(row.below, True):
                requirement.specifier = _below_only(requirement.specifier, row.below)
                found[at] = Found(str(requirement), found[at].origin,
                                  _joined(found[at].note, f"capped <{row.below}: {why}"), True)
        for need in row.needs:
            if canonicalize_name(need) not in names:
                added.append(Found(need, where, f"added: {name} needs {need} (imported only "
                                   "where it is installed), and no requirement names it", True))
    return _with_requirements(repo, [*found, *added])


def _with_api_needs(repo: Repository, code: CodeScan) -> Repository:
    """The requirements with what an API the code uses needs added where no requirement
    names it (``load_img``: Pillow; knowledge/legacy_names.toml's [[api_needs]] rows)."""
    found = repo.imported.requirements
    held = {canonicalize_name(Requirement(f.requirement).name) for f in found}
    added: list[Found] = []
    for row in legacy_names().api_needs:
        used = sorted((code.uses[name], name) for name in row.names if name in code.uses)
        for need in row.needs if used else ():
            if canonicalize_name(need) not in held:
                where, name = used[0]
                added.append(Found(need, where, f"added: that line uses {name}, which needs "
                                   f"{need} (imported only where it is installed; no metadata "
                                   "requires it), and no requirement names it", True))
                held.add(canonicalize_name(need))
    return _with_requirements(repo, [*found, *added])


def _below_only(specifier: SpecifierSet, below: str) -> SpecifierSet:
    """``specifier`` capped ``<below``, its upper bounds the cap makes redundant dropped
    (``Keras<2.4`` capped below 2.2.1 is ``Keras<2.2.1``, not ``Keras<2.2.1,<2.4``)."""
    kept = [s for s in specifier
            if s.operator not in ("<", "<=") or Version(s.version) < Version(below)]
    return SpecifierSet(",".join(str(s) for s in kept)) & SpecifierSet(f"<{below}")


def _with_extras(repo: Repository, code: CodeScan) -> Repository:
    """The requirements with each of the project's optional ones (setup.py's
    ``extras_require``) whose module the code imports (keras-rl's tests import gym, its
    ``gym`` extra): the module by the distribution's name, or by its known one (sklearn for
    scikit-learn: [[import_name]]); the repository's own modules never count. A test extra
    (``[test]``, ``tests_require``: TEST_EXTRAS) one of whose requirements the code imports
    comes whole: it names what the tests need, imported or not (baselines' ``[test]`` names
    atari-py, which gym imports for the Atari games its tests make)."""
    found = repo.imported.requirements
    held = {canonicalize_name(Requirement(f.requirement).name) for f in found}
    added: list[Found] = []
    tested: dict[str, str] = {}  # a test extra some of whose requirements came -> the first
    for extra in repo.imported.extras:
        name = canonicalize_name(Requirement(extra.requirement).name)
        module = code.first_imported(module_names(name))
        if module is None:
            continue
        if extra_of(extra) in TEST_EXTRAS:
            tested.setdefault(extra_of(extra), name)
        if name in held:
            continue
        added.append(Found(extra.requirement, extra.origin, f"added: the project's "
                           f"{extra.note}; {code.imports[module]} imports {module}", True))
        held.add(name)
    for extra in repo.imported.extras:
        name = canonicalize_name(Requirement(extra.requirement).name)
        if extra_of(extra) not in tested or name in held:
            continue
        added.append(Found(extra.requirement, extra.origin, f"added: the project's "
                           f"{extra.note}, which names what its tests need (the code imports "
                           f"{tested[extra_of(extra)]} of it)", True))
        held.add(name)
    return _with_requirements(repo, [*found, *added])


def _with_imported(repo: Repository, code: CodeScan, *,
                   frameworks: bool = False) -> Repository:
    """The requirements with each distribution the code imports by its known module name
    (``cv2``, ``matplotlib``) added where no requirement names it or an alternative and the
    repository defines no module of that name (knowledge/legacy_names.toml's
    [[import_name]] rows; an ``imports_only`` row, Lasagne or NumPy, only where the draft
    came from the imports alone, which ``_from_imports`` made). ``frameworks``: only the
    ``framework`` rows, mapped as a named one is (``theano`` -> Theano-PyMC), added before
    their packs mount; without, only the others."""
    found = repo.imported.requirements
    held = {canonicalize_name(Requirement(f.requirement).name) for f in found}
    added: list[Found] = []
    skipped: list[Skipped] = []

    def other_framework(module: str) -> bool:
        """Whether the requirements (or what this draft added before) name a framework
        other than ``module``'s."""
        return any(not held.isdisjoint(canonicalize_name(n) for n in (r.requirement, *r.also))
                   for r in legacy_names().import_name if r.framework and r.module != module)

    for row in legacy_names().import_name:
        if row.imports_only or row.framework != frameworks:
            continue
        where = code.imports.get(row.module)
        names = {canonicalize_name(n) for n in (row.requirement, *row.also)}
        if where is None or row.module in code.local or not held.isdisjoint(names):
            continue
        if frameworks and row.module in code.uncalled:
            skipped.append(Skipped(row.module, code.uncalled[row.module],
                                   "imported only inside a function nothing in the "
                                   "repository names: not added (add it where you call it)"))
            continue
        if frameworks and row.module in code.optional and other_framework(row.module):
            skipped.append(Skipped(row.module, code.optional[row.module],
                                   f"imported only when the code's own condition asks for it, "
                                   f"beside the framework the requirements name: not added "
                                   f"(add {row.requirement} to use that feature)"))
            continue
        text, mapped = row.requirement, ""
        if frameworks:
            text, mapped = map_requirement(row.requirement, installed_packs())
        note = (f"added: that line imports {row.module}, which {row.requirement} installs, and "
                "no requirement names it" + (FRAMEWORK_LEFT_OUT if frameworks else ""))
        added.append(Found(text, where, _joined(note, mapped), True))
        held.add(canonicalize_name(row.requirement))
    repo = _with_requirements(repo, [*found, *added])
    if not skipped:
        return repo
    return Repository(repo.files, replace(repo.imported,
                                          skipped=[*repo.imported.skipped, *skipped]))


# why a file leaves a framework out, with its sources: legacy_names.toml's `framework` rows
FRAMEWORK_LEFT_OUT = (" (its files leave the framework to the user, who installs it beside: "
                      "the environment needs it to run that code)")


def _with_test_runners(repo: Repository, code: CodeScan, root: Path) -> Repository:
    """The requirements with the test runner the repository's code shows its tests need
    (``import pytest``, a ``conftest.py``) added where no requirement names it, from the
    file and line that showed it, the pytest plugins its pytest configuration's addopts
    need (``-n 2``: pytest-xdist), and Jupyter's notebook where it has notebooks and no
    requirement names a front end (knowledge/legacy_names.toml's [[test_runner]],
    [[pytest_plugin]] and [[notebook_runner]] rows)."""
    found = repo.imported.requirements
    held = {canonicalize_name(Requirement(f.requirement).name) for f in found}
    added: list[Found] = []
    runners: set[str] = set()  # the modules a runner added answers: no longer unknown
    for row in legacy_names().test_runner:
        name = canonicalize_name(Requirement(row.requirement).name)
        shown = [code.imports[m] for m in row.modules if m in code.imports] + \
            [code.named[f] for f in row.files if f in code.named]
        if name not in held and shown:
            how = "that line imports it" if ":" in shown[0] else "it reads that file"
            added.append(Found(row.requirement, shown[0], f"added: {row.reason} ({how}), "
                               "and no requirement names it", True))
            held.add(name)
            runners.update(row.modules)
    config = pytest_addopts(root) if "pytest" in held else None
    if config is not None:
        file, words = config
        for plugin in legacy_names().pytest_plugin:
            option = next((o for o in plugin.options if passes(words, o)), None)
            if option is None or canonicalize_name(plugin.requirement) in held:
                continue
            added.append(Found(plugin.requirement, f"{file}:{option_line(root, file, option)}",
                               f"added: its pytest addopts pass {option}, which pytest takes "
                               f"only with {plugin.requirement}, and no requirement names it",
                               True))
    for front in legacy_names().notebook_runner if code.notebooks else ():
        if held.isdisjoint(canonicalize_name(n) for n in front.provided_by):
            count = len(code.notebooks)
            added.append(Found(front.requirement, code.notebooks[0], (
                f"added: {front.reason}; {count} notebook{'s' if count != 1 else ''}, and no "
                "requirement names a notebook front end"), True))
            held.add(canonicalize_name(front.requirement))
    repo = _with_requirements(repo, [*found, *added])
    skipped = [s for s in repo.imported.skipped if s.what not in runners]
    if len(skipped) == len(repo.imported.skipped):
        return repo
    return Repository(repo.files, replace(repo.imported, skipped=skipped))


def _with_requirements(repo: Repository, requirements: list[Found]) -> Repository:
    """``repo`` with these requirements (itself where they are its own)."""
    if requirements == repo.imported.requirements:
        return repo
    return Repository(repo.files, replace(repo.imported, requirements=requirements))


def _minor_tuple(version: str) -> tuple[int, int]:
    major, minor = version.split(".")[:2]
    return int(major), int(minor)


def _host(index: str) -> str:
    return "PyPI" if index == PYPI_SIMPLE else index


def _query(lookup: Lookup, index: str, pins: Mapping[str, tuple[str, str]],
           deadline: float | None) -> dict[str, Sequence[Mapping[str, Any]]]:
    """Every pin's project listing, side by side; what has not come by the deadline is
    left unknown (the resolver still decides)."""
    pool = ThreadPoolExecutor(max_workers=_LOOKUP_THREADS, thread_name_prefix="envforge-index")
    futures = {pin: pool.submit(lookup, index, package) for pin, (package, _) in pins.items()}
    left = None if deadline is None else max(0.0, deadline - time.monotonic())
    wait_all(futures.values(), timeout=left)
    pool.shutdown(wait=False, cancel_futures=True)
    return {pin: kept_yanked(pins[pin][0], got) for pin, future in futures.items()
            if future.done() and not future.cancelled() and future.exception() is None
            and (got := future.result())}

def _repaired(repo: Repository, pins: Mapping[str, tuple[str, str]],
              listings: Mapping[str, Sequence[Mapping[str, Any]]], minor: str,
              platform: Platform) -> Repository:
    """The repository's requirements with each exact pin that has no wheel for Python
    ``minor`` on ``platform`` moved to the nearest release that has one, the old pin and why
    in its note (a release with no binary wheel for the platform is its sdist there: kept)."""
    moved: list[Found] = []
    for found in repo.imported.requirements:
        requirement = Requirement(found.requirement)
        pin = next((p for p, (package, version) in pins.items()
                    if package == requirement.name and p in listings
                    and requirement.url is None and local_label(version) is None), None)
        proposal = None if pin is None else repair_pin(listings[pin], pins[pin][1], minor,
                                                       platform=platform)
        if proposal is None or proposal.value is None:
            if proposal is not None:
                found = Found(found.requirement, found.origin,
                              _joined(found.note, f"no wheel for Python {minor}: "
                                      f"{proposal.why}"), found.mapped)
            moved.append(found)
            continue
        old = found.requirement
        requirement.specifier = type(requirement.specifier)(f"=={proposal.value}")
        moved.append(Found(str(requirement), found.origin,
                           _joined(found.note, f"was {old}: {proposal.why} (the index's file "
                                   "list)"), True))
    imported = replace(repo.imported, requirements=moved)
    return Repository(repo.files, imported)


def _era_of_moved(as_of: Proposal, before: Repository, after: Repository,
                  listings: Mapping[str, Sequence[Mapping[str, Any]]]) -> Proposal:
    """The day raised to the newest release a pin moved to: its own dependencies (TF 1.13.1's
    tensorboard 1.13) are of its day, and ``as_of`` would hide them."""
    if as_of.value is None:
        return as_of
    newest: tuple[date, str] | None = None
    for old, new in zip(before.imported.requirements, after.imported.requirements,
                        strict=True):
        if old.requirement == new.requirement:
            continue
        was, requirement = Requirement(old.requirement), Requirement(new.requirement)
        pin = f"{was.name}=={next(iter(was.specifier)).version}"
        version = next(iter(requirement.specifier)).version
        day = next((r.uploaded for r in releases_from_files(listings.get(pin, ()))
                    if str(r.version) == version), None)
        if day is not None and day > date.fromisoformat(as_of.value) and (
                newest is None or day > newest[0]):
            newest = (day, f"{requirement.name}=={version}")
    if newest is None:
        return as_of
    return Proposal(newest[0].isoformat(), f"{as_of.why}; then {newest[1]}'s day "
                    f"({newest[0]}), the release a pin moved to, whose dependencies are of it")


def _joined(*notes: str) -> str:
    return "; ".join(n for n in notes if n)


def _older(python: Proposal, as_of: Proposal,
           host_older: Sequence[str] = ()) -> Proposal | None:
    """The Python one minor older than a Python proposed as the newest of the day (none for
    a Python the repository states, or the oldest envforge runs; 3.6 where this host has it,
    ``host_older``): the day's wheels of the newest Python are often few (Python 3.8 of
    2019-10: torch's first cp38 wheels came in 2020-01; 3.7 of 2018-10: TensorFlow's first
    cp37 wheels came in 2019-02), and the older one keeps the day where widening it would
    change every release."""
    day = date.fromisoformat(as_of.value) if as_of.value else None
    order = (*(m for m in OLDER if older_of_the_day(m, host_older, day)), *CANDIDATES)
    if python.value is None or not python.why.startswith("the newest Python released by") \
            or python.value not in order[1:]:
        return None
    older = order[order.index(python.value) - 1]
    return _full_python(Proposal(older, f"Python {python.value}, the newest released by "
                                 f"{as_of.value}, did not resolve on that day; {older} did"))


def _host_older() -> tuple[str, ...]:
    """The Pythons older than init's candidates (``OLDER``) that this host has."""
    from envforge.errors import StepError
    from envforge.host.interpreters import find_interpreter

    found = []
    for minor in OLDER:
        try:
            find_interpreter(minor)
        except StepError:
            continue
        found.append(minor)
    return tuple(found)


def _full_python(python: Proposal) -> Proposal:
    """``3.7`` -> this host's ``3.7.16``, the version lock resolves for (README: lock uses the
    spec's patch, else the host's); written so, every host locks the same and lock has
    nothing to warn about. A stated patch this host lacks (a conda list's ``python==3.6.12``
    where pyenv has 3.6.15) takes the host's of the same minor: patch releases keep the ABI
    and wheels are built per minor, and verify's version row holds the Python apply found.
    Kept as proposed where this host has no such Python."""
    from envforge.errors import StepError
    from envforge.host.interpreters import find_interpreter
    from envforge.host.interpreters import minor as minor_of

    value = python.value
    if value is None or value.count(".") not in (1, 2):
        return python
    minor = minor_of(value)
    try:
        found = find_interpreter(minor)
    except StepError:
        return python
    if found.version == value:
        return python
    if value != minor:
        return Proposal(found.version, f"{python.why} as {value}; {found.version} is the "
                        f"Python {minor} on this host (a patch release of the same minor: the "
                        "same ABI and wheels), the one lock resolves for")
    return Proposal(found.version, f"{python.why}; {found.version} is the Python {value} on "
                    "this host, the one lock resolves for")


def git_commit_day(root: Path) -> date | None:
    """The committer date of the repository's last commit; None outside git, and where no
    git is installed (a Windows machine, a project downloaded as a zip)."""
    from envforge.errors import ToolError
    from envforge.host import proc

    try:
        done = proc.run(["git", "-C", str(root), "log", "-1", "--format=%cs", "--", "."],
                        check=False)
    except ToolError:  # no git on PATH
        return None
    text = done.stdout.strip()
    return date.fromisoformat(text) if done.returncode == 0 and text else None
