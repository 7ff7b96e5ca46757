"""The bench's machinery: run a command, time it, take its peak memory, pair rounds.

Every command runs as a child process with this machine's configuration removed
(``clean_environ``); its wall-clock time and the peak resident memory of its process tree
(``wait4``'s ``ru_maxrss``: the largest of the command and the children it waited for) are
one ``Sample``. A scenario runs its tools in rounds, one sample of each per round, in an
order that alternates between rounds, so a slow minute of the network or of the other jobs
on the machine hits all of them alike; a ratio is taken within each round, and its min,
median and max over the rounds are reported. A goal is met when the median is at or under
its limit.
"""

from __future__ import annotations

import os
import shlex
import statistics
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

# This machine's settings for uv and pip (a local mirror, find-links): no tool may read
# them. PYTHONDONTWRITEBYTECODE (set here) would make every run byte-compile again.
STRIPPED = ("UV_", "PIP_", "PYTHONDONTWRITEBYTECODE", "RES_OPTIONS")


class BenchError(Exception):
    """A command under measurement failed; the message carries its tail."""


def clean_environ(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(STRIPPED)}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1",
               PYTHONWARNINGS="ignore")
    env.update(extra)
    return env


@dataclass(frozen=True)
class Sample:
    seconds: float
    peak_mb: float
    cpu_seconds: float = 0.0  # user + system, the command's and its children's


def timed(cmd: Sequence[str | Path], *, env: dict[str, str], cwd: Path | None = None,
          ok: Sequence[int] = (0,), timeout: float = 900) -> Sample:
    """Run to completion; BenchError (with the output's tail) if it failed."""
    argv = [str(c) for c in cmd]
    with tempfile.TemporaryFile() as out:
        started = time.perf_counter()
        child = subprocess.Popen(argv, env=env, cwd=cwd, stdout=out, stderr=out,
                                 stdin=subprocess.DEVNULL)
        timer = threading.Timer(timeout, child.kill)
        timer.start()
        try:
            _, status, usage = os.wait4(child.pid, 0)  # blocking: no polling in the timing
        finally:
            timer.cancel()
        elapsed = time.perf_counter() - started
        if elapsed >= timeout:
            raise BenchError(f"timed out after {timeout}s: {shlex.join(argv)}")
        child.returncode = os.waitstatus_to_exitcode(status)
        if child.returncode not in ok:
            out.seek(0)
            tail = out.read().decode("utf-8", "replace").strip()[-1500:]
            raise BenchError(f"exit {child.returncode}: {shlex.join(argv)}\n{tail}")
    return Sample(elapsed, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime)


def summed(samples: Sequence[Sample]) -> Sample:
    """Commands run one after the other: times add up, peak memory is the largest."""
    return Sample(sum(s.seconds for s in samples), max(s.peak_mb for s in samples),
                  sum(s.cpu_seconds for s in samples))


@dataclass
class Row:
    key: str
    label: str
    command: str
    samples: list[Sample] = field(default_factory=list)
    error: str | None = None

    def seconds(self) -> list[float]:
        return [s.seconds for s in self.samples]


@dataclass(frozen=True)
class Goal:
    """``numerator / denominator`` per round, judged by its median against ``limit``
    (None: reported, no goal); of the samples' ``quantity``: wall seconds, peak memory or
    CPU seconds (where a wall-time ratio is bound by the machine's 2 cores)."""

    label: str
    numerator: str
    denominator: str
    limit: float | None
    quantity: Literal["seconds", "peak_mb", "cpu_seconds"] = "seconds"


@dataclass
class Bench:
    rounds: int
    rows: dict[str, Row] = field(default_factory=dict)
    goals: list[Goal] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    sections: dict[str, list[str]] = field(default_factory=dict)  # section -> row keys

    def row(self, section: str, key: str, label: str, command: str) -> Row:
        if key not in self.rows:
            self.rows[key] = Row(key, label, command)
            self.sections.setdefault(section, []).append(key)
        return self.rows[key]

    def sample(self, row: Row, fn: Callable[[], Sample]) -> None:
        """One sample; a failure stops that row (and the ratios that need it), not the run."""
        if row.error is not None:
            return
        try:
            row.samples.append(fn())
        except BenchError as exc:
            row.error = str(exc)
            print(f"  {row.key}: FAILED: {str(exc).splitlines()[0]}", flush=True)

    def paired(self, section: str, rounds: int,
               tools: Sequence[tuple[str, str, str, Callable[[int], Sample]]],
               before: Callable[[int], None] | None = None) -> None:
        """``rounds`` rounds of every tool once; the order is reversed every other round."""
        rows = [(self.row(section, key, label, cmd), fn) for key, label, cmd, fn in tools]
        for i in range(rounds):
            if before is not None:
                before(i)
            for row, fn in (rows if i % 2 == 0 else rows[::-1]):
                self.sample(row, lambda fn=fn, i=i: fn(i))  # type: ignore[misc]
            print(f"  {section} round {i + 1}/{rounds}: " + ", ".join(
                f"{r.key} {r.samples[-1].seconds:.2f}s" for r, _ in rows
                if r.samples and r.error is None), flush=True)

    def ratio_values(self, goal: Goal) -> list[float]:
        num, den = self.rows.get(goal.numerator), self.rows.get(goal.denominator)
        if num is None or den is None or num.error or den.error:
            return []
        values = [(getattr(a, goal.quantity), getattr(b, goal.quantity))
                  for a, b in zip(num.samples, den.samples, strict=False)]
        return [a / b for a, b in values if b > 0]

    def judged(self) -> list[dict[str, Any]]:
        out = []
        for goal in self.goals:
            values = self.ratio_values(goal)
            median = statistics.median(values) if values else None
            out.append({"label": goal.label, "numerator": goal.numerator,
                        "denominator": goal.denominator, "limit": goal.limit,
                        "quantity": goal.quantity, "n": len(values),
                        "min": min(values) if values else None, "median": median,
                        "max": max(values) if values else None,
                        "met": None if goal.limit is None or median is None
                        else median <= goal.limit})
        return out


def fmt_s(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.2f} s"


def verdict(judged: dict[str, Any]) -> str:
    if judged["median"] is None:
        return "not measured"
    if judged["limit"] is None:
        return "(no goal)"
    return "met" if judged["met"] else "NOT met"


def ratio_line(judged: dict[str, Any]) -> str:
    if judged["median"] is None:
        return f"{judged['label']}: not measured"
    limit = "—" if judged["limit"] is None else f"<= {judged['limit']:.2f}x"
    return (f"{judged['label']}: {judged['min']:.2f} / {judged['median']:.2f} / "
            f"{judged['max']:.2f}x (min/median/max, n={judged['n']}); goal {limit}: "
            f"{verdict(judged)}")


def markdown(bench: Bench, header: Sequence[str]) -> str:
    lines = [*header, "", "## Goals (ratio envforge ÷ the alternative, per round)", "",
             "| ratio | min | median | max | n | goal | |", "|---|---:|---:|---:|---:|---:|---|"]
    for j in bench.judged():
        if j["median"] is None:
            lines.append(f"| {j['label']} | | | | 0 | | not measured |")
            continue
        limit = "—" if j["limit"] is None else f"≤ {j['limit']:.2f}×"
        lines.append(f"| {j['label']} | {j['min']:.2f}× | {j['median']:.2f}× | "
                     f"{j['max']:.2f}× | {j['n']} | {limit} | {verdict(j)} |")
    for section, keys in bench.sections.items():
        lines += ["", f"## {section}", "", "| measurement | median | min | max | CPU "
                  "(median) | peak memory (median) | n | command |",
                  "|---|---:|---:|---:|---:|---:|---:|---|"]
        for key in keys:
            row = bench.rows[key]
            if row.error or not row.samples:
                reason = (row.error or "no samples").splitlines()[0]
                lines.append(f"| {row.label} | failed: {reason} | | | | | 0 | `{row.command}` |")
                continue
            secs = row.seconds()
            peak = statistics.median(s.peak_mb for s in row.samples)
            cpu = statistics.median(s.cpu_seconds for s in row.samples)
            lines.append(f"| {row.label} | {fmt_s(statistics.median(secs))} | "
                         f"{fmt_s(min(secs))} | {fmt_s(max(secs))} | {fmt_s(cpu)} | "
                         f"{peak:.0f} MB | {len(secs)} | `{row.command}` |")
    if bench.notes:
        lines += ["", "## Notes", "", *(f"- {n}" for n in bench.notes)]
    return "\n".join(lines) + "\n"


def load_average() -> str:
    try:
        return "/".join(f"{v:.1f}" for v in os.getloadavg())
    except OSError:
        return "unknown"
