"""``envforge init PATH``: a legacy repository's dependency files -> a spec that locks.

The drafting is ``app/drafting.py``; unless ``--offline``, the draft is resolved once for
this host's platform, and the spec written is one that locks.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from envforge.app.drafting import draft_spec, git_commit_day, settle, spec_name
from envforge.commands import Common
from envforge.errors import InputError
from envforge.host.outputs import check_output
from envforge.importers.render import Draft, render_spec
from envforge.spec import Platform, parse_spec
from envforge.ui import UI


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
        from envforge.resolve.pypi_index import index_files

        lookup = index_files
    with ui.progress(f"reading {root}"):
        draft = draft_spec(root, source=str(root), name=name or spec_name(root),
                           platform=platform, lookup=lookup, commit_day=git_commit_day(root))
    check_output(output, inputs=[root / name for name in draft.repository.files],
                 make_parents=True)
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
