"""What doctor says: findings, each with its evidence, a fix and the source of its rule.

A finding is data, so the same list renders as a table, JSON (``--json``) or Markdown
(a report to commit). A fix a machine may apply without judgement carries its actions
(``Fix.actions``); ``doctor --fix`` turns those into journaled steps. Every other fix is
text for a person: the exact edit or command.
"""

from __future__ import annotations

from typing import Literal

from pydantic import SerializeAsAny

from envforge.spec import Frozen

Severity = Literal["error", "warning", "info"]
SEVERITY_RANK: dict[Severity, int] = {"error": 0, "warning": 1, "info": 2}


class Evidence(Frozen):
    """What was seen: a line of a file, a variable's value, a command's output."""

    kind: Literal["file", "env", "command", "value"]
    where: str  # the file (``path:line``), the variable, the command line, or what the value is
    text: str


class FixAction(Frozen):
    """One action a fix applies; its ``kind`` names who plans it into steps: the core's
    ``file-copy``, or a pack's (``FrameworkPack.fix_kinds``: Theano's ``theanorc-edit``)."""

    kind: str


class FileCopy(FixAction):
    """A file copied under the name a loader asks for, where the toolkit ships it under
    another (a framework's DLL loader asking for an older naming scheme)."""

    kind: Literal["file-copy"] = "file-copy"
    source: str
    target: str


class Fix(Frozen):
    """The remedy: ``text`` says it exactly; ``actions`` non-empty means ``--fix`` can apply it."""

    text: str
    actions: tuple[SerializeAsAny[FixAction], ...] = ()

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
