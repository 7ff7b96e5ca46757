"""The only place that prints: tables, progress, messages, and JSON for machines."""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from envforge import __version__

# rich is imported where something is printed: its import and a console cost ~20 ms, which
# a quiet run (apply -q) that prints nothing need not pay.
if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress
    from rich.text import Text

REPORT_EVERY = 100 << 20  # piped, a download's progress is a line per 100 MiB
PIPED_WIDTH = 200  # columns of a table printed to a pipe or file, unless COLUMNS says
CELL_LIMIT = 300  # characters of one table cell: rich folds a 2 MB one for seconds

# 2: doctor's facts keep a framework's settings under facts.frameworks.NAME (its pack's).
JSON_SCHEMA_VERSION = 2


@dataclass
class UI:
    """How a command talks to the user; ``json`` sends one document to stdout instead."""

    json: bool = False
    quiet: bool = False
    # None: stdout's and stderr's, made when first printed to (``stdout()``, ``stderr()``)
    out: Console | None = None
    err: Console | None = None

    def stdout(self) -> Console:
        """The console tables go to."""
        with _MAKING:
            if self.out is None:
                self.out = _console(stderr=False)
            return self.out

    def stderr(self) -> Console:
        """The console messages, progress and downloads go to."""
        with _MAKING:
            if self.err is None:
                self.err = _console(stderr=True)
            return self.err

    def info(self, message: str) -> None:
        """Plain text: never read as markup, so ``[global]`` in a diff stays."""
        if not (self.quiet or self.json):
            self._say(message)

    def success(self, message: str) -> None:
        if not (self.quiet or self.json):
            self._say((message, "green"))

    def next(self, command: str) -> None:
        """The command to run next (or what to look at), the last line on stderr."""
        if not (self.quiet or self.json):
            self._say(("next: ", "bold"), command)

    def warn(self, message: str) -> None:
        if not self.json:
            self._say(("warning: ", "yellow"), message)

    def error(self, message: str) -> None:
        self._say(("error: ", "red"), message)

    def _say(self, *parts: str | tuple[str, str]) -> None:
        """One line on stderr from plain text (never read as markup) and (text, style) parts."""
        from rich.text import Text

        self.stderr().print(Text.assemble(*parts))

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
        from rich.table import Table
        from rich.text import Text

        out = self.stdout()
        table = Table(title=Text(title), title_justify="left", header_style="bold")
        cells = [[_cell(cell) for cell in row] for row in rows]
        widths = piped_widths(out, columns, cells)
        fixed: list[int | None] = list(widths) if widths else [None] * len(columns)
        for column, width in zip(columns, fixed, strict=True):
            table.add_column(column, overflow="fold", width=width)
        for row in cells:
            table.add_row(*row)
        if widths is not None:  # print's own width is capped at the console's
            out.width = max(out.width, sum(widths) + 3 * len(widths) + 1)
        out.print(table)

    def document(self, kind: str, payload: dict[str, Any]) -> None:
        """One versioned JSON envelope on stdout (for --json)."""
        envelope = {"envforge": __version__, "schema": JSON_SCHEMA_VERSION, "kind": kind,
                    **payload}
        sys.stdout.write(json.dumps(envelope, indent=2, sort_keys=True, default=str) + "\n")

    @contextmanager
    def progress(self, description: str, total: float | None = None) -> Iterator[ProgressHook]:
        """A progress bar on stderr for long work; silent when quiet, json or not a terminal."""
        if self.quiet or self.json or not self.stderr().is_terminal:
            yield ProgressHook(None, None)
            return
        from rich.progress import (
            BarColumn,
            Progress,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
        )

        bar = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                       TextColumn("{task.completed:.0f}/{task.total:.0f}"), TimeElapsedColumn(),
                       console=self.stderr(), transient=True)
        with bar:
            task = bar.add_task(description, total=total)
            yield ProgressHook(bar, task)

    @contextmanager
    def download(self, name: str, size: int | None, have: int = 0) -> Iterator[Callable[[int],
                                                                                         None]]:
        """One file's download (host/fetch.py's ``Report``): a bar with sizes and speed on a
        terminal; piped, a line as it ends, and for a file of ``REPORT_EVERY`` bytes or more
        (or of no known size) one as it starts and one each ``REPORT_EVERY`` bytes, so a CI
        log shows a gigabyte moving while a small wheel is one line, not two; nothing when
        quiet or json."""
        if self.quiet or self.json:
            yield lambda amount: None
            return
        started = time.monotonic()
        if self.stderr().is_terminal:
            from rich.progress import (
                BarColumn,
                DownloadColumn,
                Progress,
                TextColumn,
                TimeRemainingColumn,
                TransferSpeedColumn,
            )

            bar = Progress(TextColumn("{task.description}"), BarColumn(), DownloadColumn(),
                           TransferSpeedColumn(), TimeRemainingColumn(), console=self.stderr(),
                           transient=True)
            with bar:
                task = bar.add_task(name, total=size, completed=have)
                yield lambda amount: bar.advance(task, amount)
        else:
            if size is None or size - have >= REPORT_EVERY:
                self.info(f"downloading {name} ({_size(size)}"
                          f"{f', resuming at {_size(have)}' if have else ''})")
            done = [have, have]  # bytes so far, bytes at the last line

            def advance(amount: int) -> None:
                done[0] += amount
                if done[0] - done[1] >= REPORT_EVERY:
                    done[1] = done[0]
                    self.info(f"  {name}: {_size(done[0])} of {_size(size)}")
            yield advance
        self.info(f"downloaded {name} ({_size(size)} in {time.monotonic() - started:.1f} s)")


_MAKING = threading.Lock()  # downloads report from worker threads: one console each


def _console(*, stderr: bool) -> Console:
    from rich.console import Console

    return Console(stderr=stderr, highlight=False, soft_wrap=True)


def _size(size: int | None) -> str:
    """Bytes as people read them: 840 KiB, 12.3 MiB, 1.02 GiB; "unknown size" for None."""
    if size is None:
        return "unknown size"
    if size < 1 << 20:
        return f"{size / 1024:.0f} KiB"
    if size < 1 << 30:
        return f"{size / (1 << 20):.1f} MiB"
    return f"{size / (1 << 30):.2f} GiB"


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


def piped_widths(console: Console, columns: Sequence[str],
                 cells: Sequence[Sequence[Text]]) -> list[int] | None:
    """Each column's width when the output is not a terminal (a CI log, ``| tee``), where
    rich's 80 columns cut names mid-word (``kernel.train.c`` / ``hecksum``): the table fits
    ``COLUMNS`` if set, else ``PIPED_WIDTH``, narrowing the widest columns first but none below
    its longest word (rich narrows past it). None on a terminal: rich fits its width."""
    from rich.cells import cell_len

    if console.is_terminal:
        return None
    try:
        wanted = int(os.environ.get("COLUMNS", "")) or PIPED_WIDTH
    except ValueError:
        wanted = PIPED_WIDTH
    natural = [cell_len(c) for c in columns]
    shortest = list(natural)
    for row in cells:
        for index, cell in enumerate(row[:len(columns)]):
            natural[index] = max([natural[index], *map(cell_len, cell.plain.splitlines())])
            shortest[index] = max([shortest[index], *map(cell_len, cell.plain.split())])
    return _narrowed(natural, shortest, wanted - 3 * len(columns) - 1)


def _narrowed(widths: list[int], least: Sequence[int], room: int) -> list[int]:
    """``widths`` narrowed, widest first, until they fit ``room`` or reach ``least``."""
    widths = list(widths)
    while sum(widths) > room:
        loose = [i for i, w in enumerate(widths) if w > least[i]]
        if not loose:
            break
        widest = max(widths[i] for i in loose)
        top = [i for i in loose if widths[i] == widest]
        below = max([widths[i] for i in loose if widths[i] < widest] + [0])
        cut = min(widest - below, -(-(sum(widths) - room) // len(top)))
        for i in top:
            widths[i] = max(least[i], widths[i] - cut)
    return widths


def _cell(value: Any) -> Text:
    """A table cell, cut at CELL_LIMIT with how much was left out (the JSON has it whole)."""
    from rich.text import Text

    text = value if isinstance(value, Text) else Text(str(value))
    extra = len(text.plain) - CELL_LIMIT
    if extra > 0:
        text = text.copy()
        text.truncate(CELL_LIMIT)
        text.append(f"… ({extra} more characters)")
    return text
