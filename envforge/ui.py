"""The only place that prints: tables, progress, messages, and JSON for machines."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from envforge import __version__

CELL_LIMIT = 300  # characters of one table cell: rich folds a 2 MB one for seconds

# 2: doctor's facts keep a framework's settings under facts.frameworks.NAME (its pack's).
JSON_SCHEMA_VERSION = 2


@dataclass
class UI:
    """How a command talks to the user; ``json`` sends one document to stdout instead."""

    json: bool = False
    quiet: bool = False
    out: Console = field(default_factory=lambda: Console(highlight=False, soft_wrap=True))
    err: Console = field(default_factory=lambda: Console(stderr=True, highlight=False,
                                                         soft_wrap=True))

    def info(self, message: str) -> None:
        """Plain text: never read as markup, so ``[global]`` in a diff stays."""
        if not (self.quiet or self.json):
            self.err.print(Text(message))

    def success(self, message: str) -> None:
        if not (self.quiet or self.json):
            self.err.print(Text(message, style="green"))

    def next(self, command: str) -> None:
        """The command to run next (or what to look at), the last line on stderr."""
        if not (self.quiet or self.json):
            self.err.print(Text.assemble(("next: ", "bold"), command))

    def warn(self, message: str) -> None:
        if not self.json:
            self.err.print(Text.assemble(("warning: ", "yellow"), message))

    def error(self, message: str) -> None:
        self.err.print(Text.assemble(("error: ", "red"), message))

    def confirm(self, question: str, *, what: str) -> bool:
        """Ask ``question [y/N]`` on a terminal; with no terminal, say that ``what`` are
        pending and ``--yes`` is needed, and answer no (apply and doctor --fix ask here)."""
        if not sys.stdin.isatty():
            self.error(f"{what} pending and no terminal to confirm them: pass --yes")
            return False
        return input(f"{question} [y/N] ").strip().lower() in ("y", "yes")

    def table(self, title: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
        if self.json or self.quiet:
            return
        table = Table(title=Text(title), title_justify="left", header_style="bold")
        for column in columns:
            table.add_column(column, overflow="fold")
        for row in rows:
            table.add_row(*(_cell(cell) for cell in row))
        self.out.print(table)

    def document(self, kind: str, payload: dict[str, Any]) -> None:
        """One versioned JSON envelope on stdout (for --json)."""
        envelope = {"envforge": __version__, "schema": JSON_SCHEMA_VERSION, "kind": kind,
                    **payload}
        sys.stdout.write(json.dumps(envelope, indent=2, sort_keys=True, default=str) + "\n")

    @contextmanager
    def progress(self, description: str, total: float | None = None) -> Iterator[ProgressHook]:
        """A progress bar on stderr for long work; silent when quiet, json or not a terminal."""
        if self.quiet or self.json or not self.err.is_terminal:
            yield ProgressHook(None, None)
            return
        bar = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                       TextColumn("{task.completed:.0f}/{task.total:.0f}"), TimeElapsedColumn(),
                       console=self.err, transient=True)
        with bar:
            task = bar.add_task(description, total=total)
            yield ProgressHook(bar, task)


@dataclass
class ProgressHook:
    """What long-running code calls to report progress, without knowing how it is shown."""

    bar: Progress | None
    task: Any

    def advance(self, amount: float = 1, description: str | None = None) -> None:
        if self.bar is not None:
            self.bar.update(self.task, advance=amount, description=description)

    def describe(self, description: str) -> None:
        if self.bar is not None:
            self.bar.update(self.task, description=description)


def _cell(value: Any) -> Text:
    """A table cell, cut at CELL_LIMIT with how much was left out (the JSON has it whole)."""
    text = value if isinstance(value, Text) else Text(str(value))
    extra = len(text.plain) - CELL_LIMIT
    if extra > 0:
        text = text.copy()
        text.truncate(CELL_LIMIT)
        text.append(f"… ({extra} more characters)")
    return text
