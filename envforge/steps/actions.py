"""What a step will do, as data: typed actions, each with the state it expects to find.

A step plans once (``plan``: reading only) and the executor performs exactly those actions,
first re-reading each one's ``before`` (``state_of``) and refusing the action when it
differs: the host changed since the plan was made (terraform's "inconsistent final plan").
A file's action carries everything needed to make it (its bytes, a verified source, a link
target), so nothing is observed or computed twice. Work only an external tool can do (venv,
pypa's installer, rattler) is one ``RunStep`` inside the environment's own prefix.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal, Protocol, runtime_checkable

from pydantic import ConfigDict, Field

from envforge.errors import InputError
from envforge.model import Frozen
from envforge.steps.base import (
    Change,
    StepContext,
    Want,
    WantLink,
    state_of,
    text_digest,
    want_change,
)

if TYPE_CHECKING:
    from envforge.journal import Transaction


class _Action(Frozen):
    model_config = ConfigDict(extra="forbid", frozen=True, ser_json_bytes="base64",
                              val_json_bytes="base64")


class MakeTree(_Action):
    """A folder an external tool fills; the journal adopts it, so rollback removes it whole.
    Whatever is later found under it was made by this plan, so its before-state is not read."""

    kind: Literal["tree"] = "tree"
    path: str
    before: str | None = None


class WriteFile(_Action):
    """``path`` gets exactly ``data`` (the mode of the file it replaces, else 0644)."""

    kind: Literal["write"] = "write"
    path: str
    before: str | None
    data: bytes


class WriteBlock(_Action):
    """envforge's marked block put at the end of a script another step makes (a venv's
    ``bin/activate``), keeping the script's own lines; nothing when the script is absent."""

    kind: Literal["block"] = "block"
    path: str
    before: str | None
    block: str


class CopyFile(_Action):
    """``path`` gets ``source``'s bytes and mode; ``sha256`` is the source's when planned,
    checked again before the copy, so a staged file changed since is refused too."""

    kind: Literal["copy"] = "copy"
    path: str
    before: str | None
    source: str
    sha256: str


class MakeLink(_Action):
    """``path`` becomes a symbolic link reading exactly ``target``."""

    kind: Literal["link"] = "link"
    path: str
    before: str | None
    target: str


class RunStep(_Action):
    """The step's own ``apply``: work only a tool does (venv, pypa's installer, rattler),
    idempotent, so a resumed apply re-runs it. ``within`` is the folder the tool writes in
    (the prefix, envforge's own): once it ran, what is found there is this plan's doing.
    ``before`` is what a step that writes elsewhere ``observe``s there (the user PATH)."""

    kind: Literal["run"] = "run"
    step: str
    within: str | None = None
    before: str | None = None


Action = Annotated[MakeTree | WriteFile | WriteBlock | CopyFile | MakeLink | RunStep,
                   Field(discriminator="kind")]


class StepPlan(Frozen):
    """One step's part of a plan: the rows shown (``changes``) and what is done (``actions``)."""

    step: str
    changes: tuple[Change, ...]
    actions: tuple[Action, ...] = ()
    artifacts: dict[str, str] = Field(default_factory=dict)  # role -> sha256 checked here


BEGIN = "# >>> envforge >>>"
END = "# <<< envforge <<<"


def with_block(script: str, block: str) -> str:
    """``script`` with envforge's marked block (replacing an older one) at its end."""
    head = script.split(BEGIN, 1)[0].rstrip("\n")
    return f"{head}\n{BEGIN}\n{block}{END}\n"


def file_plan(wants: Sequence[Want]) -> tuple[tuple[Change, ...], tuple[Action, ...]]:
    """The rows and actions that bring each wanted path to its state; reads only, and hashes
    each source once."""
    changes: list[Change] = []
    actions: list[Action] = []
    for want in wants:
        change = want_change(want)
        if change is None:
            continue
        changes.append(change)
        if isinstance(want, WantLink):
            actions.append(MakeLink(path=str(want.path), before=change.before,
                                    target=want.target))
        else:
            assert change.after is not None
            actions.append(CopyFile(path=str(want.path), before=change.before,
                                    source=str(want.source),
                                    sha256=change.after.removeprefix("sha256:")))
    return tuple(changes), tuple(actions)


def text_file_plan(step: str, target: Path, text: str) -> StepPlan:
    """``step``'s plan to make ``target`` hold ``text`` (UTF-8): nothing where it does, else
    one write with the diff the user reads before confirming. Bytes are compared, not text:
    a user's file in another encoding is replaced (and backed up), not a crash; the diff
    shows it with undecodable bytes escaped. A file where one of its folders must be (a
    user's ``~/.keras`` that is a file) is the user's to move: InputError, nothing planned."""
    for folder in target.parents:
        if folder.exists() or folder.is_symlink():
            if not folder.is_dir():
                raise InputError(f"{folder}: a file where {target} needs a folder; move it "
                                 "away (envforge does not replace it)")
            break
    raw = target.read_bytes() if target.is_file() else None
    before = None if raw is None else raw.decode("utf-8", "backslashreplace")
    data = text.encode("utf-8")
    if raw == data:
        return StepPlan(step=step, changes=())
    diff = "".join(difflib.unified_diff((before or "").splitlines(keepends=True),
                                        text.splitlines(keepends=True),
                                        str(target) + " (now)", str(target) + " (after)"))
    change = Change(action="replace" if before is not None else "create", target=str(target),
                    before=text_digest(before), after=text_digest(text), detail=diff)
    write = WriteFile(path=str(target), before=state_of(target), data=data)
    return StepPlan(step=step, changes=(change,), actions=(write,))


def drift(action: Action, owned: Sequence[Path] = (), *, sources: bool = True) -> str | None:
    """What no longer holds of the state ``action`` was planned against; None if all does.

    Paths under a folder this plan made or had a tool write in (``owned``) are the plan's
    own doing and are not compared. A ``RunStep``'s ``before`` is its step's to compare.
    ``sources``: also re-hash a copy's staged source (envforge's own cache; the executor
    does it once, before the first change)."""
    if isinstance(action, RunStep):
        return None
    path = Path(action.path)
    if any(path.is_relative_to(root) for root in owned):
        return None
    now = state_of(path)
    if now != action.before:
        return f"{path} was {action.before or 'absent'} when planned, now {now or 'absent'}"
    if isinstance(action, CopyFile) and sources:
        source = state_of(Path(action.source))
        if source != f"sha256:{action.sha256}":
            return (f"{action.source} (to be copied to {path}) was sha256:{action.sha256} when "
                    f"planned, now {source or 'absent'}")
    return None


def perform(action: Action, tx: Transaction) -> None:
    """Make one file action's change through the journal (``RunStep`` is the executor's)."""
    if isinstance(action, RunStep):
        raise TypeError(f"step {action.step}: a RunStep is run by its step, not performed")
    path = Path(action.path)
    if isinstance(action, MakeTree):
        tx.adopt_tree(path)  # refuses a folder this journal did not make
        path.mkdir(exist_ok=True)
        return
    if isinstance(action, WriteBlock):
        if not path.is_file():
            return
        script = path.read_text(encoding="utf-8")
        if with_block(script, action.block) != script:
            tx.write_text(path, with_block(script, action.block))
        return
    if not path.parent.exists():
        tx.mkdir(path.parent)
    if isinstance(action, WriteFile):
        tx.write_bytes(path, action.data)
    elif isinstance(action, CopyFile):
        tx.copy_file(Path(action.source), path)
    else:
        tx.symlink(path, action.target)


def perform_all(planned: StepPlan, tx: Transaction) -> None:
    """A step's file actions, just planned, in order (a step's own ``apply``)."""
    for action in planned.actions:
        perform(action, tx)


@runtime_checkable
class PlansActions(Protocol):
    """A step whose work is file actions: ``plan`` once, and the executor does the rest."""

    def plan(self, ctx: StepContext) -> StepPlan: ...


@runtime_checkable
class Observes(Protocol):
    """A ``RunStep`` step that changes something outside the prefix (the user PATH): what it
    finds there is its action's before-state."""

    def observe(self, ctx: StepContext) -> str | None: ...
