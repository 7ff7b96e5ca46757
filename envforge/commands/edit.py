"""``envforge add REQ... [-s SPEC]`` / ``envforge remove NAME... [-s SPEC]``: uv's and pixi's
verbs for a spec's ``[pypi] packages``; ``app/editing.py`` edits and re-locks, this renders."""

from __future__ import annotations

import argparse
from pathlib import Path

from envforge.app.editing import Edit, edit_packages
from envforge.commands import Common
from envforge.errors import InputError
from envforge.spec import PLATFORMS, Platform
from envforge.ui import UI


def run_edit(verb: str, packages: list[str], *, spec: Path | None, platform: Platform | None,
             no_lock: bool, locks_dir: Path | None, ui: UI) -> int:
    """The command: exit 0 once the spec (and, unless ``no_lock``, its lock) is written."""
    from envforge.commands.lock_command import show_lock

    spec_path = spec if spec is not None else _only_spec()
    what = {"add": packages} if verb == "add" else {"remove": packages}
    with ui.progress(f"{verb}: locking {spec_path}"):
        edit = edit_packages(spec_path, platform=platform, locks_dir=locks_dir,
                             relock=not no_lock, **what)
    rows = _spec_rows(edit)
    section = "[pypi] packages" if platform is None else f"[pypi.platform.{platform}] packages"
    ui.table(f"{spec_path} {section} ({'written' if edit.spec_changed else 'unchanged'})",
             ["change", "requirement"], rows)
    result: dict[str, object] = {
        "spec": str(spec_path), "section": section, "spec_changed": edit.spec_changed,
        "before": list(edit.before), "after": list(edit.after), "locked": edit.locked is not None}
    if edit.locked is not None:
        result.update(show_lock(ui, edit.project, edit.previous, edit.locked,
                                changed=edit.lock_changed, notes=edit.notes))
    if ui.json:
        ui.document(verb, result)
    elif edit.locked is None:
        ui.next(f"envforge lock {spec_path}")
    else:
        ui.next(f"envforge apply {spec_path}")
    return 0


def _spec_rows(edit: Edit) -> list[list[str]]:
    before, after = set(edit.before), set(edit.after)
    return [*(["-", v] for v in edit.before if v not in after),
            *(["+", v] for v in edit.after if v not in before)]


def _only_spec() -> Path:
    """uv's and pixi's verbs find their project from the current folder: here the one spec
    under specs/, else the user names it."""
    found = sorted(Path("specs").glob("*.toml"))
    if len(found) != 1:
        raise InputError(f"{'no spec' if not found else f'{len(found)} specs'} under specs/: "
                         "name the one to edit with -s SPEC")
    return found[0]


def _cmd(args: argparse.Namespace, ui: UI) -> int:
    return run_edit(args.command, args.packages, spec=args.spec, platform=args.platform,
                    no_lock=args.no_lock, locks_dir=args.locks_dir, ui=ui)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser], common: Common) -> None:
    for verb, help_text, metavar, what in (
            ("add", "add PyPI requirements to a spec (or replace them, by name) and re-lock",
             "REQUIREMENT", "PEP 508 requirements, e.g. 'h5py==2.10.0'"),
            ("remove", "remove PyPI packages from a spec and re-lock", "NAME",
             "project names, e.g. h5py")):
        parser = sub.add_parser(verb, help=help_text)
        parser.add_argument("packages", nargs="+", metavar=metavar, help=what)
        parser.add_argument("-s", "--spec", type=Path, default=None,
                            help="the spec to edit (default: the one spec under specs/)")
        parser.add_argument("-p", "--platform", choices=PLATFORMS, default=None,
                            help="edit [pypi.platform.P] packages instead of [pypi] packages")
        parser.add_argument("--no-lock", action="store_true",
                            help="edit the spec only; `envforge lock` re-locks it later")
        parser.add_argument("--locks-dir", type=Path, default=None, help="where locks go")
        common(parser)
        parser.set_defaults(handler=_cmd)
