"""What doctor says: findings, each with its evidence, a fix and the source of its rule.

A finding is data, so the same list renders as a table, JSON (``--json``) or Markdown
(a report to commit). A fix a machine may apply without judgement carries its actions
(``Fix.actions``); ``doctor --fix`` turns those into journaled steps. Every other fix is
text for a person: the exact edit or command.
"""

from __future__ import annotations

from typing import Literal

from envforge.spec import Frozen

Severity = Literal["error", "warning", "info"]
SEVERITY_RANK: dict[Severity, int] = {"error": 0, "warning": 1, "info": 2}


class Evidence(Frozen):
    """What was seen: a line of a file, a variable's value, a command's output."""

    kind: Literal["file", "env", "command", "value"]
    where: str  # the file (``path:line``), the variable, the command line, or what the value is
    text: str


class ConfigEdit(Frozen):
    """One line-level edit of an INI config file (a framework's: Theano's .theanorc);
    everything else in the file stays byte for byte.

    ``move``: the key goes to ``new_section``/``new_key`` with its value (the old line is
    commented out); ``set``: the key gets ``value`` (added, with its section, if absent);
    ``comment-out``: the line stays as a comment saying why.
    """

    # The kind doctor --json has always written, so a reader of saved output keeps working.
    kind: Literal["theanorc-edit"] = "theanorc-edit"
    path: str
    op: Literal["move", "set", "comment-out"]
    section: str
    key: str
    new_section: str | None = None
    new_key: str | None = None
    value: str | None = None
    note: str = ""


class FileCopy(Frozen):
    """A file copied under the name a loader asks for (libgpuarray's DLL names)."""

    kind: Literal["file-copy"] = "file-copy"
    source: str
    target: str


Action = ConfigEdit | FileCopy


class Fix(Frozen):
    """The remedy: ``text`` says it exactly; ``actions`` non-empty means ``--fix`` can apply it."""

    text: str
    actions: tuple[Action, ...] = ()

    @property
    def safe(self) -> bool:
        return bool(self.actions)


class Finding(Frozen):
    """One problem (or notice) on this host; ``source`` is the knowledge row the rule rests on."""

    id: str
    severity: Severity
    title: str
    evidence: tuple[Evidence, ...] = ()
    fix: Fix | None = None
    source: str


def sort_findings(findings: list[Finding]) -> tuple[Finding, ...]:
    """Errors first, then warnings, then notices; stable within a severity."""
    return tuple(sorted(findings, key=lambda f: SEVERITY_RANK[f.severity]))


def has_errors(findings: tuple[Finding, ...] | list[Finding]) -> bool:
    return any(f.severity == "error" for f in findings)
