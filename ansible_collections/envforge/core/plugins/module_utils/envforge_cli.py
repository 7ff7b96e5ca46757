"""Runs the envforge CLI on the managed host and reads its ``--json`` document.

The modules are a thin shell over envforge's own commands: the plan/apply/rollback/verify
semantics (exit 3 = changes pending, a no-op apply, the journal) stay in envforge, so a host
converged by Ansible is exactly a host converged by hand.
"""

from __future__ import annotations

import json

PENDING = 3  # envforge's exit code for "changes pending" (plan)


def base_command(module):
    """The envforge executable and the options every call shares."""
    exe = module.params["executable"] or module.get_bin_path("envforge", required=True)
    return [exe]


def target_options(module, *, sources=True):
    """``--prefix`` and, for plan/apply, ``--bundle`` + ``--offline``."""
    args = []
    if module.params.get("prefix"):
        args += ["--prefix", module.params["prefix"]]
    if sources and module.params.get("bundle"):
        args += ["--bundle", module.params["bundle"], "--offline"]
    return args


def call(module, args, *, ok=(0,)):
    """Runs ``envforge ARGS --json``; returns (exit code, document, stderr)."""
    command = base_command(module) + list(args) + ["--json"]
    rc, out, err = module.run_command(command, environ_update=_update(module),
                                      check_rc=False)
    document = None
    if out.strip():
        try:
            document = json.loads(out)
        except ValueError:
            document = None
    if rc not in ok:
        module.fail_json(msg=_first_line(err) or "envforge exited %d" % rc, rc=rc,
                         cmd=command, stdout=out, stderr=err, document=document)
    return rc, document, err


def _update(module):
    """ENVFORGE_HOME when the play names one: state, caches and environments go under it."""
    home = module.params.get("envforge_home")
    return {"ENVFORGE_HOME": home} if home else {}


def _first_line(text):
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    return lines[-1] if lines else ""


def plan_diff(document):
    """The plan as Ansible's diff: one line per change, then the .theanorc diffs."""
    plan = (document or {}).get("plan") or {}
    prefix = plan.get("prefix", "")
    lines, texts = [], []
    for step in plan.get("steps", []):
        for change in step.get("changes", []):
            target = change.get("target", "")
            if prefix and target.startswith(prefix):
                target = "<env>" + target[len(prefix):]
            lines.append("%s %s %s" % (step.get("step"), change.get("action"), target))
            detail = change.get("detail") or ""
            if detail.startswith("---"):
                texts.append(detail if detail.endswith("\n") else detail + "\n")
    if not lines:
        return {}
    return {"before_header": "host", "after_header": "plan",
            "prepared": "\n".join(lines) + "\n" + "".join(texts)}
