"""Verify's rows rendered for machines and people: JSON, JUnit XML, Markdown, HTML.

All renderers are pure string builders. JSON carries a versioned envelope so scripts
can rely on its shape; JUnit goes through ElementTree so escaping is never hand-made;
the chart is a small hand-written SVG (no plotting library in envforge's dependencies)
that works inline in HTML and in Markdown viewers that allow it.
"""

from __future__ import annotations

import html
import json
import re
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from envforge import __version__
from envforge.verify import CheckRow, KernelTiming, verdict

JSON_FORMAT = 1
# XML 1.0 forbids most control characters; a compiler's output can hold them.
_XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
_STATUS_MARK = {"pass": "✅ pass", "fail": "❌ fail", "skip": "⏭️ skip"}


def to_json(rows: Sequence[CheckRow], timings: Sequence[KernelTiming] = ()) -> str:
    """``{"envforge", "kind": "verify", "format", "verdict", "counts", "rows", "timings"}``."""
    counts = Counter(row.status for row in rows)
    document: dict[str, Any] = {
        "envforge": __version__,
        "kind": "verify",
        "format": JSON_FORMAT,
        "verdict": "fail" if verdict(rows) else "pass",
        "exit_code": int(verdict(rows)),
        "counts": {status: counts.get(status, 0) for status in ("pass", "fail", "skip")},
        "rows": [asdict(row) for row in rows],
        "timings": [asdict(timing) for timing in timings],
    }
    return json.dumps(document, indent=2, sort_keys=False) + "\n"


def to_junit(rows: Sequence[CheckRow], *, suite: str = "envforge.verify") -> str:
    """One testsuite, one testcase per row; failures and skips carry the row's why."""
    counts = Counter(row.status for row in rows)
    suites = ET.Element("testsuites", name=suite, tests=str(len(rows)),
                        failures=str(counts["fail"]), errors="0", skipped=str(counts["skip"]))
    element = ET.SubElement(suites, "testsuite", name=suite, tests=str(len(rows)),
                            failures=str(counts["fail"]), errors="0",
                            skipped=str(counts["skip"]), time="0")
    for row in rows:
        case = ET.SubElement(element, "testcase", classname=suite, name=_xml(row.name),
                             time="0")
        detail = _xml(f"expected: {row.expected}\nfound: {row.found}")
        if row.status == "fail":
            failure = ET.SubElement(case, "failure", message=_xml(row.why or "failed"),
                                    type="check")
            failure.text = detail
        elif row.status == "skip":
            ET.SubElement(case, "skipped", message=_xml(row.why or "skipped"))
        else:
            out = ET.SubElement(case, "system-out")
            out.text = detail
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, "unicode") + "\n"


def timing_svg(timings: Sequence[KernelTiming]) -> str:
    """Horizontal bars of each kernel's best run, CPU against the configured device.

    Each kernel's bars are scaled to that kernel's slower time: kernels differ by orders
    of magnitude, and the point of the chart is the ratio within a kernel. The seconds
    are written beside each bar.
    """
    shown = [t for t in timings if t.device_s is not None or t.cpu_s is not None]
    bar_h, gap, label_w, bar_w, text_w = 18, 14, 110, 360, 150
    height = 30 + sum(gap + bar_h * (2 if t.cpu_s is not None else 1) for t in shown) + 10
    width = label_w + bar_w + text_w
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12" '
             'role="img" aria-label="kernel timings">',
             '<rect x="0" y="0" width="100%" height="100%" fill="white"/>',
             f'<rect x="{label_w}" y="6" width="12" height="12" fill="#9e9e9e"/>'
             f'<text x="{label_w + 16}" y="16">CPU</text>'
             f'<rect x="{label_w + 60}" y="6" width="12" height="12" fill="#2e7d32"/>'
             f'<text x="{label_w + 76}" y="16">device</text>']
    y = 30
    for timing in shown:
        y += gap
        bars = [(timing.device, timing.device_s, "#2e7d32")]
        if timing.cpu_s is not None:
            bars.insert(0, ("cpu", timing.cpu_s, "#9e9e9e"))
        slowest = max(s for _, s, _ in bars if s is not None) or 1.0
        title = timing.name + (f" ({timing.speedup:.1f}x)" if timing.speedup else "")
        parts.append(f'<text x="4" y="{y + bar_h - 4}">{html.escape(title)}</text>')
        for label, seconds, color in bars:
            length = 0 if seconds is None else max(1, round(bar_w * seconds / slowest))
            text = "error" if seconds is None else f"{label}: {_seconds(seconds)}"
            parts.append(f'<rect x="{label_w}" y="{y}" width="{length}" height="{bar_h - 3}" '
                         f'fill="{color}"/>')
            parts.append(f'<text x="{label_w + length + 4}" y="{y + bar_h - 6}">'
                         f'{html.escape(text)}</text>')
            y += bar_h
    parts.append("</svg>")
    return "\n".join(parts)


def to_markdown(rows: Sequence[CheckRow], timings: Sequence[KernelTiming] = (), *,
                title: str = "envforge verify") -> str:
    """A summary line, the rows as a table, and the timing chart when there are timings."""
    counts = Counter(row.status for row in rows)
    result = "FAILED" if verdict(rows) else "PASSED"
    lines = [f"# {title}", "",
             f"**{result}**: {counts['pass']} passed, {counts['fail']} failed, "
             f"{counts['skip']} skipped (envforge {__version__})", "",
             "| status | check | expected | found | why |", "|---|---|---|---|---|"]
    for row in rows:
        cells = (_STATUS_MARK[row.status], f"`{row.name}`", row.expected, row.found, row.why)
        lines.append("| " + " | ".join(_md_cell(c) for c in cells) + " |")
    if any(t.device_s is not None or t.cpu_s is not None for t in timings):
        lines += ["", "## Kernel timings (best run)", "", timing_svg(timings), "",
                  "| kernel | device | device s | CPU s | speedup |", "|---|---|---|---|---|"]
        for t in timings:
            lines.append(f"| {t.name} | {t.device} | {_seconds(t.device_s)} | "
                         f"{_seconds(t.cpu_s)} | "
                         f"{'-' if t.speedup is None else f'{t.speedup:.1f}x'} |")
    return "\n".join(lines) + "\n"


def to_html(rows: Sequence[CheckRow], timings: Sequence[KernelTiming] = (), *,
            title: str = "envforge verify") -> str:
    """One self-contained page: no scripts, no external styles or images."""
    counts = Counter(row.status for row in rows)
    result = "FAILED" if verdict(rows) else "PASSED"
    colors = {"pass": "#e8f5e9", "fail": "#ffebee", "skip": "#f5f5f5"}
    body = [f"<h1>{html.escape(title)}</h1>",
            f"<p><strong>{result}</strong>: {counts['pass']} passed, {counts['fail']} failed, "
            f"{counts['skip']} skipped (envforge {html.escape(__version__)})</p>",
            "<table><tr><th>status</th><th>check</th><th>expected</th><th>found</th>"
            "<th>why</th></tr>"]
    for row in rows:
        cells = "".join(f"<td>{html.escape(c)}</td>"
                        for c in (row.status, row.name, row.expected, row.found, row.why))
        body.append(f'<tr style="background:{colors[row.status]}">{cells}</tr>')
    body.append("</table>")
    if any(t.device_s is not None or t.cpu_s is not None for t in timings):
        body += ["<h2>Kernel timings (best run)</h2>", timing_svg(timings)]
    style = ("body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
             "td,th{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top}")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{html.escape(title)}</title><style>{style}</style></head><body>\n"
            + "\n".join(body) + "\n</body></html>\n")


def _xml(text: str) -> str:
    return _XML_INVALID.sub("?", text)


def _md_cell(text: str) -> str:
    return html.escape(text, quote=False).replace("|", "\\|").replace("\n", "<br>")


def _seconds(value: float | None) -> str:
    if value is None:
        return "-"
    if value >= 1:
        return f"{value:.2f} s"
    if value >= 1e-3:
        return f"{value * 1e3:.1f} ms"
    return f"{value * 1e6:.0f} µs"
