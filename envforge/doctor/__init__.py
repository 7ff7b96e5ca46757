"""``envforge doctor``: diagnose a host the way an expert would.

The host is observed once into ``HostFacts`` (``observe``: the only impure part); rules
are pure functions of those facts and, with a spec, its lock's expectations
(``diagnose``); each ``Finding`` carries its evidence, an exact fix and the knowledge
row it rests on. Safe fixes become steps (``fix_steps``), which the app layer performs
through apply's executor (``app/doctorfixes.py``); ``doctor_report_markdown`` writes a
report to commit.
"""

from __future__ import annotations

from envforge.doctor.expect import expected_from_lock
from envforge.doctor.facts import Expected, HostFacts
from envforge.doctor.fixes import fix_steps
from envforge.doctor.model import Evidence, FileCopy, Finding, Fix, FixAction, has_errors
from envforge.doctor.observe import observe
from envforge.doctor.report import doctor_report_markdown
from envforge.doctor.rules import RULES, all_rules, diagnose, judged

__all__ = [
    "RULES",
    "Evidence",
    "Expected",
    "FileCopy",
    "Finding",
    "Fix",
    "FixAction",
    "HostFacts",
    "all_rules",
    "diagnose",
    "doctor_report_markdown",
    "expected_from_lock",
    "fix_steps",
    "has_errors",
    "judged",
    "observe",
]
