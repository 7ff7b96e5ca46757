"""Verify's pure core: a probe report against the lock's expectations, as check rows.

Each pack's probe (``envforge/packs/theano/probe.py``) runs inside the target environment
and only describes; this package and the packs' ``verify_rows`` judge. It reads the
report defensively, since the report comes from another interpreter and possibly a
half-broken environment: a missing or malformed field is a failing row, never an
exception. Rows carry stable dotted names (``version.numpy``, ``kernel.gemm.checksum``)
so JSON and JUnit consumers can track them across runs.

One module a job: ``rows`` (the row and the verdict), ``untrusted`` (reading a report),
``hints`` (what a pack gives verify; its hints on failing rows), ``request`` (the probe's
request and merged reports), ``kernels``, ``gpu`` and ``judge`` (the rows), ``drift``
(drift's rows).
"""

from envforge.verify.drift import drift_rows
from envforge.verify.gpu import KernelTiming, kernel_timings
from envforge.verify.hints import VerifyPack, explain, hinted
from envforge.verify.judge import check_report
from envforge.verify.kernels import kernel_rows
from envforge.verify.request import (
    REPORT_FORMAT,
    REQUEST_FORMAT,
    build_request,
    kernel_request,
    merge_reports,
    probe_modules,
    probe_scripts,
)
from envforge.verify.rows import CheckRow, Status, verdict

__all__ = [
    "REPORT_FORMAT",
    "REQUEST_FORMAT",
    "CheckRow",
    "KernelTiming",
    "Status",
    "VerifyPack",
    "build_request",
    "check_report",
    "drift_rows",
    "explain",
    "hinted",
    "kernel_request",
    "kernel_rows",
    "kernel_timings",
    "merge_reports",
    "probe_modules",
    "probe_scripts",
    "verdict",
]
