"""The spec init writes: TOML whose every pin says, in a comment, where it came from."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date
from typing import Protocol

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from envforge.importers.debian import (
    DebianAddition,
    DebianPack,
    debian_additions,
    debian_packages,
    dependencies,
    no_debian,
    section_keys,
)
from envforge.importers.legacy_names import FrameworkRow, InitPack, framework_sections
from envforge.importers.propose import Proposal
from envforge.importers.pycode import CodeScan
from envforge.importers.repository import Repository
from envforge.packapi import Registry
from envforge.platforms import Platform
from envforge.spec import excluded_by_python_marker


@dataclass(frozen=True)
class Draft:
    """Everything the spec says, before it is text."""

    name: str
    source: str  # the repository as the user named it
    repository: Repository
    platform: Platform
    python: Proposal
    as_of: Proposal
    as_of_tried: tuple[str, ...] = ()  # days that did not resolve, before as_of (widened)
    as_of_failure: str | None = None  # why the last day tried did not resolve
    # the packages given the widened day, every other keeping as_of (``packagedays``)
    as_of_packages: Mapping[str, str] = field(default_factory=dict)
    as_of_widened: str | None = None  # the widened day that resolved, before narrowing
    # the Python one minor older, tried on the proposed day before the day is widened (the
    # newest Python of a day often has few of that day's wheels: Python 3.8 in late 2019)
    python_fallback: Proposal | None = None
    # requirement (or find-links page, extra index) -> why, written commented out
    left_out: Mapping[str, str] = field(default_factory=dict)
    index: str | None = None
    code: CodeScan | None = None  # the repository's own .py files, parsed for the Python
    # the repository's folder from the spec's, on PYTHONPATH where it is a project (setup.py)
    pythonpath: str | None = None
    # each use of an API no release provided has, with what replaced it: [[gone_api]]
    to_port: tuple[str, ...] = ()
    # what an sdist's build imports without declaring it, by project (normalized name), as
    # the resolver's failed build named it: [pypi] extra_build_dependencies
    extra_build: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # limits on what sdists' builds install, each with why: [pypi] build_constraints
    build_constraints: Mapping[str, str] = field(default_factory=dict)
    # why a package has its own day where settling's narrowing did not give it (normalized
    # name -> why): a release line whose metadata today's resolvers refuse
    package_days_why: Mapping[str, str] = field(default_factory=dict)
    # dependencies' requirements replaced, each with why: [pypi] overrides (a pin of a
    # release the index deleted, dropped where another distribution installs its module)
    overrides: Mapping[str, str] = field(default_factory=dict)
    # what the draft resolved to (normalized name -> version), once it does: the releases
    # whose wheels load a library they do not ship get its Debian package ([debian])
    resolved: Mapping[str, str] = field(default_factory=dict)


def render_spec(draft: Draft, registry: Registry[NotePack]) -> str:
    """The spec's text; deterministic for the same draft."""
    repo = draft.repository
    lines = [f"# Written by `envforge init {draft.source}` from {repo.sources}.",
             "# Every pin's comment names the file and line it came from; check them, then",
             "# `envforge lock` this file.", ""]
    if not repo.files:
        lines[1:1] = ["# No dependency file: each requirement is a distribution the code imports",
                      "# at that line, and nothing pinned it; the day below picks its release."]
    if repo.imported.skipped:
        lines.append("# Not imported (fix by hand if the project needs them):")
        lines += [_comment(f"#   {s.origin}: {s.what}: {s.reason}")
                  for s in repo.imported.skipped]
        lines.append("")
    lines += ["[project]", f"name = {json.dumps(draft.name)}",
              f"platforms = [{json.dumps(draft.platform)}]",
              f"description = {json.dumps('imported from ' + repo.sources)}", "",
              "[python]", f"# {draft.python.why}", *_code_note(draft),
              f"version = {json.dumps(draft.python.value)}",
              "", "[environment]", 'kind = "venv"', *_pythonpath(draft), "", "[pypi]"]
    if draft.index:
        lines.append(f"index = {json.dumps(draft.index)}")
    for key, option, places in (("index", "-i", repo.imported.index),
                                ("extra_indexes", "--extra-index-url",
                                 repo.imported.extra_indexes),
                                ("find_links", "-f", repo.imported.find_links)):
        urls = list(dict.fromkeys(url for url, _ in places))
        if key == "index":  # written above; one left out is said here
            urls = [url for url in urls if url in draft.left_out]
        if urls:
            origins = ", ".join(dict.fromkeys(origin for _, origin in places))
            lines.append(_comment(f"# pip's {option} at {origins}"))
            lines += [_comment(f"# left out {url}: {draft.left_out[url]}") for url in urls
                      if url in draft.left_out]
            kept = [url for url in urls if url not in draft.left_out]
            if kept:
                lines.append(f"{key} = {json.dumps(kept)}")
    if draft.as_of.value is not None:
        lines.append(f"# resolve as of {draft.as_of.why}")
        lines += _as_of_steps(draft)
        lines.append(f"as_of = {draft.as_of.value}")
        if draft.as_of_packages:
            lines += [_comment(f"# {name} from {draft.as_of_packages[name]}: {why}")
                      for name, why in draft.package_days_why.items()
                      if name in draft.as_of_packages]
            days = ", ".join(f"{json.dumps(n)} = {d}" for n, d in draft.as_of_packages.items())
            lines.append(f"as_of_packages = {{ {days} }}")
    else:
        lines.append(f"# as_of: not proposed ({draft.as_of.why})")
    lines.append("packages = [")
    for found in repo.imported.requirements:
        comment = found.origin + (f"; {found.note}" if found.note else "")
        why = left_out(draft).get(found.requirement)
        if why is not None:
            lines.append(_comment(f"    # {json.dumps(found.requirement)},  # {comment}; "
                                  f"left out: {why}"))
            continue
        lines.append(_comment(f"    {json.dumps(found.requirement)},  # {comment}"))
    lines.append("]")
    if draft.extra_build:
        lines.append(_comment(f"# {EXTRA_BUILD_NOTE}"))
        needs = ", ".join(f"{json.dumps(project)} = {json.dumps(list(modules))}"
                          for project, modules in sorted(draft.extra_build.items()))
        lines.append(f"extra_build_dependencies = {{ {needs} }}")
    if draft.build_constraints:
        lines += [_comment(f"# {constraint}: {why}")
                  for constraint, why in draft.build_constraints.items()]
        lines.append(f"build_constraints = {json.dumps(list(draft.build_constraints))}")
    if draft.overrides:
        lines += [_comment(f"# {override}: {why}") for override, why in draft.overrides.items()]
        lines.append(f"overrides = {json.dumps(list(draft.overrides))}")
    note = next((n for n in (_compiler_note(f.requirement, registry)
                             for f in repo.imported.requirements
                             if f.requirement not in left_out(draft)) if n), None)
    added = debian(draft, registry)
    if added:
        lines += ["", "[debian]"]
        lines += [_comment(f"# for {a.cause} on {draft.platform}: {a.row.reason} "
                           f"({a.where})") for a in added]
        lines += [f"suite = {json.dumps(added[0].row.suite)}",
                  f"packages = {json.dumps(debian_packages(added))}"]
        if dependencies(added) == "closure":
            lines.append(f"dependencies = {json.dumps(dependencies(added))}")
    missing = not_on_debian(draft)
    if missing:
        lines += ["", *(_comment(f"# {line}") for line in missing)]
    if note is not None:
        lines += ["", "[compiler]", f"# {note}", 'kind = "gcc"']
    for row in sections(draft, registry):
        lines += ["", f"[{row.section}]", _comment(f"# {row.reason} ({row.where})")]
        lines += [f"{key} = {json.dumps(value)}" for key, value in sorted(row.keys.items())]
        lines += _platform_keys(added, row.section, draft.platform)
    return "\n".join(lines) + "\n"


def _pythonpath(draft: Draft) -> list[str]:
    if draft.pythonpath is None:
        return []
    files = [f for f in draft.repository.files if f in PROJECT_FILES]
    return [_comment(f"# the repository, as `pip install -e .` would install it: its "
                     f"{' and '.join(files)} make{'s' if len(files) == 1 else ''} it a "
                     "project whose code imports its own packages by name"),
            f"pythonpath = [{json.dumps(draft.pythonpath)}]"]


# a repository with one at its root is a project its README installs (`python setup.py
# install`, `pip install -e .`), and its scripts import its packages by their names
PROJECT_FILES = ("setup.py", "setup.cfg")


def debian(draft: Draft, registry: Registry[NotePack]) -> list[DebianAddition]:
    """What the spec's [debian] holds: the mounted packs' rows for the draft's platform, the
    rows for programs a module the code uses runs and for libraries a resolved release loads
    (none where the platform is not one a row is for)."""
    return debian_additions(sections(draft, registry), draft.platform, registry,
                            _uses(draft), draft.resolved, _named(draft))


def not_on_debian(draft: Draft) -> list[str]:
    """The programs the code's modules run that no [debian] gives on the draft's platform
    (win-64), each with the use: the user installs them."""
    return no_debian(_uses(draft), draft.platform)


def _named(draft: Draft) -> dict[str, str]:
    """Each project a requirement of the draft names (normalized), with its origin."""
    named: dict[str, str] = {}
    for found in draft.repository.imported.requirements:
        if found.requirement in draft.left_out:
            continue
        try:
            requirement = Requirement(found.requirement)
        except InvalidRequirement:
            continue
        named.setdefault(canonicalize_name(requirement.name), found.origin)
    return named


def _uses(draft: Draft) -> Mapping[str, str]:
    return {} if draft.code is None else draft.code.uses


def _platform_keys(added: list[DebianAddition], section: str, platform: str) -> list[str]:
    """``[SECTION.platform.P]`` with the keys the [debian] rows set: theirs on that platform
    only, should the user add another platform to the spec."""
    keys = section_keys(added, section)
    if not keys:
        return []
    notes = dict.fromkeys(f"{a.row.note or a.row.reason} ({a.where})" for a in added
                          if a.section == section and a.row.keys)
    return ["", f"[{section}.platform.{platform}]",
            *(_comment(f"# {note}") for note in notes),
            *(f"{key} = {json.dumps(value)}" for key, value in sorted(keys.items()))]


def code_note(draft: Draft) -> str | None:
    """What the repository's code says of the Python proposed (Python 2 code), or None."""
    if draft.code is None or draft.python.value is None:
        return None
    return draft.code.summary(draft.python.minor)


def built_in_place(draft: Draft, spec: str = "SPEC") -> list[str]:
    """The project's own compiled extensions (setup.py's ``ext_modules``), which its code
    imports from its own folder and no lock can give: each with the command that builds it
    there, its CI's (fizyr/keras-retinanet's ``compute_overlap``: ``python setup.py
    build_ext --inplace`` in .travis.yml); envforge never writes into the repository."""
    return [f"{origin} builds {module}, the project's own compiled extension, which no wheel "
            f"gives: build it in the repository's folder before running its code, "
            f"`envforge run {spec} -- python setup.py build_ext --inplace`"
            for module, origin in draft.repository.imported.extensions]


def _code_note(draft: Draft) -> list[str]:
    note = code_note(draft)
    return [_comment(f"# {line}") for line in ([] if note is None else [note])
            + list(draft.to_port) + built_in_place(draft)]


def left_out(draft: Draft) -> dict[str, str]:
    """The requirements written commented out, with why: the draft's own, and those whose
    marker excludes the environment's Python (a Python 2 backport), which lock would refuse."""
    found = dict(draft.left_out)
    if draft.python.value is None:
        return found
    for item in draft.repository.imported.requirements:
        if item.requirement not in found and excluded_by_python_marker(item.requirement,
                                                                      draft.python.value):
            found[item.requirement] = f"its marker excludes Python {draft.python.value}"
    return found


def sections(draft: Draft, packs: Iterable[InitPack]) -> list[FrameworkRow]:
    """The framework sections the spec mounts: those its written requirements call for."""
    day = date.fromisoformat(draft.as_of.value) if draft.as_of.value else None
    return framework_sections([f.requirement for f in draft.repository.imported.requirements
                               if f.requirement not in left_out(draft)], packs, day=day)


def _as_of_steps(draft: Draft) -> list[str]:
    """The comment lines saying which days were tried before the one written."""
    tried = draft.as_of_tried
    if not tried:
        return []
    step = f"widened {WIDEN_NOTE}"
    if draft.as_of_packages:
        return [_comment(f"# {', '.join(tried)} did not resolve ({draft.as_of_failure}); "
                         f"{step}, {draft.as_of_widened} resolved; {NARROW_NOTE}")]
    if draft.as_of.value in tried:
        return [_comment(f"# does not resolve as of {', '.join(tried)} ({step}): "
                         f"{draft.as_of_failure}")]
    return [_comment(f"# {', '.join(tried)} did not resolve ({draft.as_of_failure}); {step}")]


WIDEN_NOTE = "six months a step from the proposed day"
EXTRA_BUILD_NOTE = ("each sdist's setup.py imports these without declaring them (its build "
                    "failed: No module named ...): installed into its build, at the "
                    "environment's version where it has them")
NARROW_NOTE = ("only as_of_packages take a later day, each the day after its first release "
               "that installs from a wheel here, or the widened day (what the resolver named "
               "at as_of, what those need, and what as_of gives only as sdists that do not "
               "build or that the widened day has wheels for); every other package keeps as_of")


def _comment(line: str) -> str:
    """A comment stays one line whatever a file or a resolver put in it."""
    return re.sub(r"\s*[\r\n]+\s*", " ", line).rstrip()


class NotePack(InitPack, DebianPack, Protocol):
    """What a draft asks of a pack: a note for a requirement of a framework that compiles,
    and the Debian packages its section needs."""

    def compiler_note(self, requirement: str) -> str | None: ...


def _compiler_note(text: str, registry: Registry[NotePack]) -> str | None:
    """The first pack's note for a requirement of a framework that compiles with g++."""
    return next((n for n in (p.compiler_note(text) for p in registry) if n), None)
