"""``envforge init PATH``: a legacy repository's dependency files (where it has none, the
distributions its code imports) -> a spec that locks.

The drafting is ``app/drafting.py``; unless ``--offline``, ``app/settling.py`` resolves the
draft for this host's platform (the day widened until it does) and ``app/trialbuild.py``
builds what it resolves to only as sdists, as apply will, within ``--timeout`` seconds,
saying on stderr what it is doing; the spec is written either way, and the next command
printed.
"""

from __future__ import annotations

import argparse
import functools
import os
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from envforge.app.drafting import Lookup, draft_spec, git_commit_day, spec_name
from envforge.app.packs import installed_packs
from envforge.app.settling import settle
from envforge.app.trialbuild import Trial
from envforge.commands import Common
from envforge.errors import InputError
from envforge.host.outputs import check_output
from envforge.importers.render import (
    PROJECT_FILES,
    Draft,
    built_in_place,
    code_note,
    debian,
    not_on_debian,
    render_spec,
    sections,
)
from envforge.spec import Platform, parse_spec
from envforge.ui import UI

DEFAULT_TIMEOUT = 120.0  # seconds for the index queries and every trial resolution together


def run_init(root: Path, *, output: Path | None, name: str | None, force: bool, offline: bool,
             ui: UI, platform: Platform = "linux-64", timeout: float = DEFAULT_TIMEOUT) -> int:
    """The command: exit 0 when the spec written locks, 1 when written but it does not (or
    the time bound ran out first)."""
    if not root.is_dir():
        raise InputError(f"{root}: not a folder")
    if timeout <= 0:
        raise InputError(f"--timeout {timeout:g}: give a number of seconds above 0")
    output = output or Path("specs") / f"{name or spec_name(root)}.toml"
    if output.exists() and not force:
        raise InputError(f"{output} exists: pass --force to replace it, or -o another file")
    deadline = time.monotonic() + timeout
    lookup: Lookup | None = None
    if not offline:
        from envforge.resolve.pypi_index import index_files

        # each query bounded too: the pool's threads are joined when Python exits
        lookup = functools.partial(index_files, timeout=min(30.0, timeout))
    draft = draft_spec(root, source=str(root), name=name or spec_name(root), platform=platform,
                       lookup=lookup, commit_day=git_commit_day(root), say=ui.info,
                       deadline=deadline)
    check_output(output, inputs=[root / name for name in draft.repository.files],
                 make_parents=True)
    draft = replace(draft, pythonpath=project_folder(root, output, draft.repository.files))
    text = render_spec(draft, installed_packs())
    parse_spec(text, source=str(output), registry=installed_packs())
    failure, trial = None, Trial(unchecked="--offline: nothing resolved, nothing built")
    if not offline:
        settled = settle(draft, str(output), platform, say=ui.info, deadline=deadline,
                         lookup=lookup)
        draft, text, failure, trial = settled.draft, settled.text, settled.failure, \
            settled.trial or Trial(unchecked="the draft does not resolve")
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(text, encoding="utf-8")
    _report(draft, output, failure, trial, ui, resolved=not offline)
    return 0 if failure is None else 1


def project_folder(root: Path, spec: Path, files: Sequence[str]) -> str | None:
    """The repository's folder from the spec's, where it is a project (a setup.py or
    setup.cfg at its root: PROJECT_FILES): its scripts import its packages by name (pygcn's
    ``pygcn/train.py``: ``from pygcn.utils import load_data``, run from ``pygcn/`` as its
    README says), which only installing it allowed; the spec's PYTHONPATH does so."""
    if not any(name in PROJECT_FILES for name in files):
        return None
    return Path(os.path.relpath(root.absolute(), spec.absolute().parent)).as_posix()


def _report(draft: Draft, output: Path, failure: str | None, trial: Trial, ui: UI, *,
            resolved: bool) -> None:
    imported = draft.repository.imported
    mounted = sections(draft, installed_packs())
    added = debian(draft, installed_packs())
    if ui.json:
        ui.document("init", {
            "spec": str(output), "files": list(draft.repository.files),
            "from_imports": not draft.repository.files,
            "python": {"value": draft.python.value, "why": draft.python.why},
            "as_of": {"value": draft.as_of.value, "why": draft.as_of.why,
                      "tried": list(draft.as_of_tried), "failure": draft.as_of_failure,
                      "packages": dict(draft.as_of_packages),
                      "packages_why": dict(draft.package_days_why),
                      "widened": draft.as_of_widened},
            "requirements": [{"requirement": f.requirement, "origin": f.origin,
                              "note": f.note} for f in imported.requirements],
            "left_out": dict(draft.left_out),
            "built": {"sdists": list(trial.built), "checked": trial.unchecked is None,
                      "unchecked": trial.unchecked},
            "extra_build_dependencies": {project: list(needs) for project, needs
                                         in sorted(draft.extra_build.items())},
            "build_constraints": dict(draft.build_constraints),
            "sections": [{"section": r.section, "keys": r.keys, "why": r.reason}
                         for r in mounted],
            "debian": [{"section": a.section, "platform": a.row.platform,
                        "suite": a.row.suite, "packages": list(a.row.packages),
                        "dependencies": a.row.dependencies,
                        "used": None if a.used is None else {"name": a.used[0],
                                                             "origin": a.used[1]},
                        "keys": a.row.keys, "why": a.row.reason, "source": a.row.source}
                       for a in added],
            "no_debian": not_on_debian(draft),
            "not_imported": [{"what": s.what, "origin": s.origin, "reason": s.reason}
                             for s in imported.skipped],
            "code": None if draft.code is None else {
                "files": draft.code.files, "note": code_note(draft),
                "not_parsed": [{"path": p, "line": n, "message": m}
                               for p, n, m in draft.code.failing],
                "to_port": list(draft.to_port),
                "build_in_place": built_in_place(draft, str(output))},
            "resolved": resolved, "locks": failure is None if resolved else None,
            "error": failure, "next": f"envforge lock {output}" if failure is None
            else f"edit {output} as the error says, then envforge lock {output}"})
        return
    ui.table(f"{output}: from {draft.repository.sources}",
             ["requirement", "from", "note"],
             [[f.requirement, f.origin, f.note] for f in imported.requirements])
    if not draft.repository.files:
        ui.info("no dependency file: each requirement is a distribution the code imports, from "
                "the file:line that imports it, and nothing pinned it (as_of picks its release)")
    for skipped in imported.skipped:
        ui.warn(f"not imported: {skipped.origin}: {skipped.what}: {skipped.reason}")
    for requirement, why in draft.left_out.items():
        ui.warn(f"left out: {requirement}: {why}")
    for row in mounted:
        keys = ", ".join(f"{k} = {v}" for k, v in sorted(row.keys.items()))
        ui.info(f"[{row.section}]{' ' + keys if keys else ''}: {row.reason}")
    for addition in added:
        deb = addition.row
        keys = "".join(f" and [{addition.section}.platform.{deb.platform}] {key}"
                       for key in sorted(deb.keys))
        closure = "" if deb.dependencies != "closure" else \
            f" with {'its' if len(deb.packages) == 1 else 'their'} dependency closure"
        used = "" if addition.used is None else f" for {addition.cause}"
        ui.info(f"[debian] {deb.suite} {', '.join(deb.packages)}{closure}{keys} "
                f"added{used}: {deb.reason}")
    for line in not_on_debian(draft):
        ui.warn(line)
    ui.info(f"python {draft.python.value} ({draft.python.why})")
    note = code_note(draft)
    if note is not None:
        ui.warn(note)
    for use in (*draft.to_port, *built_in_place(draft, str(output))):
        ui.warn(use)
    if draft.as_of.value is None:
        ui.info(f"as_of - ({draft.as_of.why})")
    else:
        tried = f"; tried first: {', '.join(draft.as_of_tried)}" if draft.as_of_tried and \
            draft.as_of_failure is None else ""
        ui.info(f"as_of {draft.as_of.value} ({draft.as_of.why}{tried})")
        for name, why in draft.package_days_why.items():
            if name in draft.as_of_packages:
                ui.info(f"as_of_packages {name} {draft.as_of_packages[name]}: {why}")
        others = {n: d for n, d in draft.as_of_packages.items()
                  if n not in draft.package_days_why}
        if others and draft.as_of_widened is None:  # settling's own days
            days = ", ".join(f"{n} {d}" for n, d in others.items())
            ui.info(f"as_of_packages {days}: no release of these for the Python came by "
                    f"{draft.as_of.value}; each takes the day after its first one came, every "
                    f"other package keeps {draft.as_of.value}")
        elif others:
            days = ", ".join(f"{n} {d}" for n, d in others.items())
            ui.info(f"as_of_packages {days}: as of {draft.as_of.value} these (or what they "
                    f"need) do not resolve, or only as sdists that do not build or that "
                    f"{draft.as_of_widened} has wheels for; each takes the day after its "
                    f"first release that installs here came (or {draft.as_of_widened}, the "
                    f"widened day that resolved); every other package keeps "
                    f"{draft.as_of.value}")
    for constraint, why in draft.build_constraints.items():
        ui.info(f"build_constraints {constraint}: {why}")
    for project, needs in sorted(draft.extra_build.items()):
        ui.info(f"extra_build_dependencies {project}: {', '.join(needs)} (its sdist's setup.py "
                "imports them without declaring them; given to its build)")
    if trial.built:
        ui.info(f"built from their sdists, as apply will (kept in the cache for it): "
                f"{', '.join(trial.built)}")
    if not resolved:
        ui.success(f"wrote {output} (not resolved: --offline; nothing built)")
    elif failure is None and trial.unchecked is not None:
        ui.warn(f"not checked whether it installs: {trial.unchecked}")
        ui.success(f"wrote {output}; it resolves (its sdists' builds not tried)")
    elif failure is None:
        ui.success(f"wrote {output}; it resolves"
                   f"{' and its sdists build' if trial.built else ''}")
    else:
        ui.error(f"wrote {output}, but it does not resolve yet: {failure}")
        ui.next(f"edit {output} as the reason above says, then envforge lock {output}")
        return
    ui.next(f"envforge lock {output}")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser], common: Common) -> None:
    init = sub.add_parser("init", help="write a spec from a repository's requirements files "
                          "(with none, from its code's imports)")
    init.add_argument("path", type=Path, help="the repository's folder")
    init.add_argument("-o", "--output", type=Path,
                      help="the spec to write (default: specs/NAME.toml)")
    init.add_argument("--name", help="the spec's name (default: the folder's)")
    init.add_argument("--force", action="store_true", help="replace an existing spec")
    init.add_argument("--offline", action="store_true",
                      help="no index queries and no trial resolution")
    init.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                      help="bound on the index queries and trial resolutions together "
                      f"(default {DEFAULT_TIMEOUT:g})")
    common(init)
    init.set_defaults(handler=lambda args, ui: run_init(
        args.path, output=args.output, name=args.name, force=args.force,
        offline=args.offline, ui=ui, timeout=args.timeout))
