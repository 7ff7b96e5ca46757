"""``envforge init PATH``: a legacy repository's dependency files -> a spec that locks.

The repository's files are read, never run. Proposals (the Python, the day to resolve as of)
use the index's JSON API and the repository's git history; unless ``--offline``, the draft
is then resolved once for this host's platform, and a proposed day that does not resolve is
left commented out with uv's reason, so the spec written is one that locks.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable, Mapping, Sequence
from datetime import date
from pathlib import Path
from typing import Any

from packaging.requirements import Requirement

from envforge.commands import Common
from envforge.errors import EnvforgeError, InputError
from envforge.importers.propose import propose_as_of, propose_python, release_files
from envforge.importers.render import Draft, render_spec
from envforge.importers.repository import Repository, read_repository
from envforge.spec import PYPI_SIMPLE, Platform, parse_spec
from envforge.ui import UI

Lookup = Callable[[str, str], "Sequence[Mapping[str, Any]] | None"]


def spec_name(root: Path) -> str:
    """The repository folder's name as a spec name (``DeepSurv`` -> ``deepsurv``)."""
    name = re.sub(r"[^a-z0-9._-]+", "-", root.resolve().name.lower()).strip("-._")
    return name or "imported"


def exact_pins(repo: Repository) -> dict[str, tuple[str, str]]:
    """``name==version`` -> (name, version) for every exact pin the project made (not the
    ones init mapped a legacy name to)."""
    pins = {}
    for found in repo.imported.requirements:
        if found.mapped:
            continue
        requirement = Requirement(found.requirement)
        exact = [s for s in requirement.specifier if s.operator in ("==", "===")
                 and "*" not in s.version]
        if len(exact) == 1:
            pins[f"{requirement.name}=={exact[0].version}"] = (requirement.name,
                                                               exact[0].version)
    return pins


def draft_spec(root: Path, *, source: str, name: str, platform: Platform,
               lookup: Lookup | None, commit_day: date | None) -> Draft:
    """Read the repository and make the proposals; ``lookup`` None means no index queries."""
    repo = read_repository(root)
    if not repo.files:
        raise InputError(f"{source}: no requirements*.txt, setup.py, setup.cfg, Pipfile, "
                         "Pipfile.lock, environment.yml or conda list file found")
    index = repo.imported.index[0][0] if repo.imported.index else None
    files: dict[str, Sequence[Mapping[str, Any]]] = {}
    if lookup is not None:
        for pin, (package, version) in exact_pins(repo).items():
            listed = lookup(index or PYPI_SIMPLE, package)
            if listed:
                files[pin] = release_files(listed, version)
    as_of = propose_as_of(files, commit_day)
    python = propose_python(files, as_of.value, repo.imported.python)
    return Draft(name=name, source=source, repository=repo, platform=platform, python=python,
                 as_of=as_of, index=index if index and index != PYPI_SIMPLE else None)


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


def try_lock(text: str, source: str, platform: Platform) -> str | None:
    """Resolve the draft for ``platform`` once; None when it locks, else the one-line reason."""
    from envforge.commands.lock import lock_platform
    from envforge.resolve.pypi import UnsatisfiableError
    from envforge.resolve.pypi_explain import explain_unsatisfiable

    spec = parse_spec(text, source=source)
    try:
        lock_platform(spec.for_platform(platform))
    except UnsatisfiableError as exc:
        return explain_unsatisfiable(spec, exc).reason
    except EnvforgeError as exc:
        return str(exc).splitlines()[0]
    return None


def run_init(root: Path, *, output: Path | None, name: str | None, force: bool, offline: bool,
             ui: UI, platform: Platform = "linux-64") -> int:
    """The command: exit 0 when the spec written locks, 1 when written but it does not."""
    if not root.is_dir():
        raise InputError(f"{root}: not a folder")
    output = output or Path("specs") / f"{name or spec_name(root)}.toml"
    if output.exists() and not force:
        raise InputError(f"{output} exists: pass --force to replace it, or -o another file")
    lookup = None
    if not offline:
        from envforge.host.pypi_index import index_files

        lookup = index_files
    with ui.progress(f"reading {root}"):
        draft = draft_spec(root, source=str(root), name=name or spec_name(root),
                           platform=platform, lookup=lookup, commit_day=git_commit_day(root))
    text = render_spec(draft)
    parse_spec(text, source=str(output))
    failure = None
    if not offline:
        with ui.progress("resolving the draft"):
            draft, text, failure = settle(draft, str(output), platform)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(text, encoding="utf-8")
    _report(draft, output, failure, ui, resolved=not offline)
    return 0 if failure is None else 1


def settle(draft: Draft, source: str, platform: Platform) -> tuple[Draft, str, str | None]:
    """The first variant of the draft that resolves: as proposed; without the proposed day;
    without the git dependencies (an unreachable host), with and without the day. What had
    to go is kept in the spec as a comment with the reason. Returns the last failure too."""
    text = render_spec(draft)
    failure = try_lock(text, source, platform)
    if failure is None:
        return draft, text, None
    first = failure
    gits = {f.requirement for f in draft.repository.imported.requirements
            if "@ git+" in f.requirement}
    variants: list[dict[str, Any]] = []
    if draft.as_of.value is not None:
        variants.append({"as_of_refused": f"it does not resolve: {first}"})
    if gits:
        left_out = {g: f"it does not resolve: {first}" for g in sorted(gits)}
        variants.append({"left_out": left_out})
        if draft.as_of.value is not None:
            variants.append({"left_out": left_out,
                             "as_of_refused": f"it does not resolve: {first}"})
    for changes in variants:
        candidate = _replace(draft, **changes)
        text = render_spec(candidate)
        failure = try_lock(text, source, platform)
        if failure is None:
            return candidate, text, None
    return draft, render_spec(draft), first


def _replace(draft: Draft, **changes: Any) -> Draft:
    from dataclasses import replace

    return replace(draft, **changes)


def _report(draft: Draft, output: Path, failure: str | None, ui: UI, *,
            resolved: bool) -> None:
    imported = draft.repository.imported
    if ui.json:
        ui.document("init", {
            "spec": str(output), "files": list(draft.repository.files),
            "python": {"value": draft.python.value, "why": draft.python.why},
            "as_of": {"value": draft.as_of.value, "why": draft.as_of.why,
                      "left_out": draft.as_of_refused},
            "requirements": [{"requirement": f.requirement, "origin": f.origin,
                              "note": f.note} for f in imported.requirements],
            "not_imported": [{"what": s.what, "origin": s.origin, "reason": s.reason}
                             for s in imported.skipped],
            "resolved": resolved, "locks": failure is None if resolved else None,
            "error": failure})
        return
    ui.table(f"{output}: from {', '.join(draft.repository.files)}",
             ["requirement", "from", "note"],
             [[f.requirement, f.origin, f.note] for f in imported.requirements])
    for skipped in imported.skipped:
        ui.warn(f"not imported: {skipped.origin}: {skipped.what}: {skipped.reason}")
    ui.info(f"python {draft.python.value} ({draft.python.why}); as_of "
            f"{draft.as_of.value or '-'} ({draft.as_of.why}"
            f"{'; left out: ' + draft.as_of_refused if draft.as_of_refused else ''})")
    if not resolved:
        ui.success(f"wrote {output} (not resolved: --offline); next: `envforge lock {output}`")
    elif failure is None:
        ui.success(f"wrote {output}; it resolves: `envforge lock {output}`")
    else:
        ui.error(f"wrote {output}, but it does not resolve yet: {failure}")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser], common: Common) -> None:
    init = sub.add_parser("init", help="write a spec from a repository's requirements files")
    init.add_argument("path", type=Path, help="the repository's folder")
    init.add_argument("-o", "--output", type=Path,
                      help="the spec to write (default: specs/NAME.toml)")
    init.add_argument("--name", help="the spec's name (default: the folder's)")
    init.add_argument("--force", action="store_true", help="replace an existing spec")
    init.add_argument("--offline", action="store_true",
                      help="no index queries and no trial resolution")
    common(init)
    init.set_defaults(handler=lambda args, ui: run_init(
        args.path, output=args.output, name=args.name, force=args.force,
        offline=args.offline, ui=ui))
