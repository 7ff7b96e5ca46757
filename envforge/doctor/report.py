"""Findings and host facts as Markdown, to commit beside a spec as a record of a host."""

from __future__ import annotations

from envforge.doctor.facts import HostFacts
from envforge.doctor.model import Finding

_MARK = {"error": "❌ error", "warning": "⚠️ warning", "info": "ℹ️ info"}


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", "<br>")


def host_rows(facts: HostFacts) -> list[tuple[str, str]]:
    """What the host is, in one line per subject (shared by the table and the report)."""
    driver = facts.driver
    rows = [("platform", facts.platform),
            ("NVIDIA driver", f"{driver.version} (CUDA {driver.cuda or '?'}; {driver.source})"
             if driver.version else f"none ({driver.source})")]
    rows += [(f"GPU {g.index}", f"{g.name}, compute capability {g.compute_capability or '?'}, "
              f"{g.memory_free_mib or '?'} of {g.memory_total_mib or '?'} MiB free")
             for g in facts.gpus]
    rows += [("CUDA toolkit", f"{t.version or '?'} at {t.root} ({t.found_by}; {t.version_from})"
              + (f"; cuDNN {t.cudnn.version}" if t.cudnn else "")) for t in facts.toolkits]
    if not facts.toolkits:
        rows.append(("CUDA toolkit", "none found"))
    rows += [(c.cuda_root_label, f"{c.cuda_root or '-'} ({c.cuda_root_from})")
             for c in facts.frameworks.values() if c.cuda_root_label]
    rows += [("cuDNN header", f"{h.version} at {h.file}") for h in facts.cudnn_headers.values()
             if not any(t.cudnn == h for t in facts.toolkits)]
    gxx = facts.gxx
    rows.append(("g++", f"{gxx.path} ({gxx.version or '?'}, thread model "
                        f"{gxx.thread_model or '?'})" if gxx else "none on PATH"))
    if facts.msvc is not None:
        rows.append(("cl.exe", f"{facts.msvc.path} (PATH[{facts.msvc.index}])"))
    for config in facts.frameworks.values():
        rows += [(f"{config.files_label} (read)", rc.path + ("" if rc.exists else " (absent)"))
                 for rc in config.files]
        if config.ignored is not None:
            rows.append((f"{config.files_label} (not read)", config.ignored.path))
        if config.variable:
            rows.append((config.variable, config.variable_value or "(unset)"))
    env = facts.env
    if env is not None:
        installed = ", ".join(f"{k} {v}" for k, v in sorted(env.versions.items())
                              if k in facts.packages)
        rows.append(("environment", f"{env.prefix} ({env.found_by}"
                     + (", activated" if env.activated else "") + "): "
                     + (installed or "nothing known installed" if env.exists else "absent")))
    return rows


def doctor_report_markdown(findings: tuple[Finding, ...] | list[Finding],
                           facts: HostFacts) -> str:
    """A self-contained report: the host, a summary table, then each finding in full."""
    errors = sum(f.severity == "error" for f in findings)
    warnings = sum(f.severity == "warning" for f in findings)
    lines = ["# envforge doctor", "",
             f"{errors} error(s), {warnings} warning(s), "
             f"{len(findings) - errors - warnings} notice(s).", "",
             "## Host", "", "| | |", "|---|---|"]
    lines += [f"| {_cell(k)} | {_cell(v)} |" for k, v in host_rows(facts)]
    lines += ["", "## Findings", ""]
    if not findings:
        lines += ["Nothing to report.", ""]
        return "\n".join(lines)
    lines += ["| severity | id | finding | fix |", "|---|---|---|---|"]
    lines += [f"| {_MARK[f.severity]} | `{f.id}` | {_cell(f.title)} | "
              f"{_cell(f.fix.text) if f.fix else '-'}"
              f"{' (`--fix` applies it)' if f.fix and f.fix.safe else ''} |" for f in findings]
    for number, finding in enumerate(findings, start=1):
        lines += ["", f"### {number}. {finding.title}", "",
                  f"- **id**: `{finding.id}` ({finding.severity})",
                  f"- **source**: {finding.source}"]
        if finding.fix is not None:
            safe = " (safe: `envforge doctor --fix` applies it)" if finding.fix.safe else ""
            lines.append(f"- **fix**{safe}: {finding.fix.text}")
        for evidence in finding.evidence:
            lines += ["", f"Evidence ({evidence.kind}) `{evidence.where}`:", "", "```text",
                      evidence.text.replace("```", "'''"), "```"]
    return "\n".join(lines) + "\n"
