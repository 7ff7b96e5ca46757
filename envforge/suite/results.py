"""The suite's pure core: pytest's JUnit XML -> test results -> a verdict -> verify's rows.

pytest writes JUnit XML (``junit_family=xunit1``, which keeps each test's file); nothing
here reads pytest's text output. A failure or error that a known-bad row matches is
counted apart and does not fail verify; any other one does, and gets a row of its own
saying which test failed and why.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from envforge.verify import CheckRow

Outcome = Literal["passed", "failed", "error", "skipped"]
# How much of a failure's message a row keeps: enough to name the exception.
_MESSAGE_LIMIT = 300


class KnownBad(Protocol):
    """A pack's row of tests known to fail (Theano's: packs/theano/theano_suite.toml)."""

    @property
    def test(self) -> str: ...

    @property
    def reason(self) -> str: ...

    @property
    def source(self) -> str: ...

    def matches(self, nodeid: str) -> bool: ...


class SuiteReportError(ValueError):
    """pytest's JUnit XML is missing or unreadable."""


@dataclass(frozen=True, slots=True)
class CaseResult:
    """One test as pytest reported it; ``nodeid`` is relative to the sdist's root."""

    nodeid: str
    outcome: Outcome
    message: str = ""
    seconds: float = 0.0


@dataclass(frozen=True, slots=True)
class KnownBadHit:
    row: KnownBad
    tests: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class SuiteVerdict:
    """Counts and the failures behind them; ``unknown`` failures fail verify."""

    subset: str
    passed: int
    skipped: int
    unknown: tuple[CaseResult, ...]
    known_bad: tuple[KnownBadHit, ...]
    # Tests a known-bad row names that passed here: worth a look, not a failure.
    known_bad_passed: tuple[str, ...] = ()
    problem: str = ""  # the run itself went wrong: timed out, crashed, collected nothing
    seconds: float = 0.0
    workers: int = 1
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def failed(self) -> int:
        return len(self.unknown)

    @property
    def known_bad_count(self) -> int:
        return sum(len(hit.tests) for hit in self.known_bad)

    @property
    def ok(self) -> bool:
        return not self.unknown and not self.problem

    def summary(self) -> str:
        return (f"{self.passed} passed, {self.failed} failed, {self.known_bad_count} known-bad, "
                f"{self.skipped} skipped")


def parse_junit(text: str) -> tuple[CaseResult, ...]:
    """Every test case of pytest's JUnit XML, in document order."""
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise SuiteReportError(f"pytest's JUnit XML does not parse: {exc}") from None
    return tuple(_result(case) for case in root.iter("testcase"))


def _result(case: ET.Element) -> CaseResult:
    outcome: Outcome = "passed"
    message = ""
    for child in case:
        if child.tag in ("failure", "error"):
            outcome = "failed" if child.tag == "failure" else "error"
            message = _message(child)
            break
        if child.tag == "skipped":
            outcome, message = "skipped", child.get("message") or ""
    try:
        seconds = float(case.get("time") or 0.0)
    except ValueError:
        seconds = 0.0
    return CaseResult(nodeid(case), outcome, " ".join(message.split()), seconds)


def _message(element: ET.Element) -> str:
    """pytest's one-line message; for a module that failed to import (message "collection
    failure") the exception line of its traceback as well."""
    message = element.get("message") or ""
    lines = [line.strip() for line in (element.text or "").splitlines() if line.strip()]
    raised = [line.removeprefix("E").strip() for line in lines if line.startswith("E ")]
    detail = raised[-1] if raised else (lines[-1] if lines else "")
    if not message:
        return detail or element.tag
    if message == "collection failure" and detail:
        return f"{message}: {detail}"
    return message


def nodeid(case: ET.Element) -> str:
    """pytest's node id (``a/b/test_x.py::TestC::test_d[1]``) from a test case's attributes.

    ``classname`` is the collecting module's dotted path followed by its classes, which
    pytest only collects under names starting with ``Test``. The ``file`` attribute is
    where the test is *defined*: for a class imported from another module (as Theano's
    gpuarray tests do) that is not the module that runs it, so it is not used for the id.
    A module that failed to import has an empty classname: its id is its file.
    """
    name = case.get("name") or ""
    classname = case.get("classname") or ""
    if not classname:
        path = (case.get("file") or "").replace("\\", "/")
        return path or name.replace(".", "/") + ".py"
    parts = classname.split(".")
    first = next((i for i, part in enumerate(parts) if part.startswith("Test")), len(parts))
    return "::".join(["/".join(parts[:first]) + ".py", *parts[first:], name])


def read_run(junit: str | None, returncode: int | None, output_tail: str, *, bound_s: int,
             subset: str, defined_in: str = "the pack's suite knowledge",
             ) -> tuple[tuple[CaseResult, ...], str]:
    """The tests a pytest run reported, and what went wrong with the run itself ("" if
    nothing): stopped at its bound (``returncode`` None; what ran still counts), an exit
    other than 0 (all passed) or 1 (some failed), or no readable JUnit XML. ``defined_in``:
    the knowledge file that bounds the subset (``theano_suite.toml``)."""
    problem = ""
    if returncode is None:
        problem = (f"the run passed its bound of {bound_s}s (subset {subset} in "
                   f"{defined_in}) and was stopped")
    elif returncode not in (0, 1):
        problem = f"pytest exited {returncode}: {output_tail.strip()[-600:]}"
    results: tuple[CaseResult, ...] = ()
    if junit is not None:
        try:
            results = parse_junit(junit)
        except SuiteReportError as exc:
            problem = problem or str(exc)
    elif not problem:
        problem = f"pytest wrote no JUnit XML: {output_tail.strip()[-600:]}"
    return results, problem


def judge(results: Sequence[CaseResult], known_bad: Sequence[KnownBad], *,
          subset: str, problem: str = "", seconds: float = 0.0,
          workers: int = 1) -> SuiteVerdict:
    """Sort failures into known-bad (by the first row that matches) and unknown."""
    hits: dict[int, list[str]] = {}
    unknown: list[CaseResult] = []
    known_passed: list[str] = []
    for result in results:
        row = next((i for i, r in enumerate(known_bad) if r.matches(result.nodeid)), None)
        if result.outcome in ("failed", "error"):
            if row is None:
                unknown.append(result)
            else:
                hits.setdefault(row, []).append(result.nodeid)
        elif result.outcome == "passed" and row is not None:
            known_passed.append(result.nodeid)
    if not results and not problem:
        problem = "pytest ran no tests"
    counts = {o: sum(r.outcome == o for r in results)
              for o in ("passed", "failed", "error", "skipped")}
    return SuiteVerdict(
        subset=subset, passed=counts["passed"], skipped=counts["skipped"],
        unknown=tuple(unknown),
        known_bad=tuple(KnownBadHit(known_bad[i], tuple(tests)) for i, tests in hits.items()),
        known_bad_passed=tuple(known_passed), problem=problem, seconds=seconds,
        workers=workers, counts=counts)


def suite_rows(verdict: SuiteVerdict) -> tuple[CheckRow, ...]:
    """A summary row, a failing row per unknown failure, a skipped row per known-bad rule."""
    name = f"suite.{verdict.subset}"
    expected = "no failures but known-bad ones"
    found = f"{verdict.summary()} in {verdict.seconds:.0f}s ({verdict.workers} workers)"
    if verdict.problem:
        summary = CheckRow(name, expected, found, "fail", verdict.problem)
    elif verdict.unknown:
        shown = ", ".join(r.nodeid for r in verdict.unknown[:3])
        more = f" and {len(verdict.unknown) - 3} more" if len(verdict.unknown) > 3 else ""
        summary = CheckRow(name, expected, found, "fail",
                           f"{len(verdict.unknown)} test(s) failed that no known-bad row "
                           f"explains: {shown}{more}")
    else:
        summary = CheckRow(name, expected, found, "pass")
    rows = [summary]
    rows += [CheckRow(f"suite.test.{r.nodeid}", "passed", r.outcome, "fail",
                      _clip(r.message) or "no message") for r in verdict.unknown]
    rows += [CheckRow(f"suite.known-bad.{hit.row.test}", "fails (known-bad)",
                      f"{len(hit.tests)} failed", "skip",
                      f"{hit.row.reason} (source: {hit.row.source})")
             for hit in verdict.known_bad]
    return tuple(rows)


def _clip(text: str) -> str:
    return text if len(text) <= _MESSAGE_LIMIT else text[:_MESSAGE_LIMIT - 1] + "…"


def verdict_document(verdict: SuiteVerdict) -> dict[str, Any]:
    """The verdict for ``--json``: counts, and every failure with its reason."""
    return {
        "subset": verdict.subset, "ok": verdict.ok, "seconds": round(verdict.seconds, 1),
        "workers": verdict.workers, "passed": verdict.passed, "failed": verdict.failed,
        "known_bad": verdict.known_bad_count, "skipped": verdict.skipped,
        "problem": verdict.problem or None,
        "failures": [{"test": r.nodeid, "outcome": r.outcome, "message": r.message}
                     for r in verdict.unknown],
        "known_bad_tests": [{"rule": hit.row.test, "reason": hit.row.reason,
                             "source": hit.row.source, "tests": list(hit.tests)}
                            for hit in verdict.known_bad],
        "known_bad_passed": list(verdict.known_bad_passed),
    }
