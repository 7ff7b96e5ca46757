#!/usr/bin/python
"""Ansible module: converge a host to an envforge spec (present) or roll it back (absent)."""

from __future__ import annotations

DOCUMENTATION = r"""
module: envforge
short_description: Apply or roll back an envforge environment
description:
  - C(state=present) runs C(envforge plan) and, when changes are pending, C(envforge apply).
    A host already converged reports C(changed=false).
  - In check mode only the plan runs; C(changed) is the plan's verdict and C(--diff) shows
    every change and the .theanorc diff.
  - C(state=absent) runs C(envforge rollback), which restores every file envforge changed.
options:
  spec:
    description: The spec file on the managed host (its lock beside it in ../locks, or in a bundle).
    required: true
    type: path
  state:
    description: present applies, absent rolls back.
    choices: [present, absent]
    default: present
    type: str
  bundle:
    description: An envforge bundle folder on the host; the apply then uses no network.
    type: path
  prefix:
    description: Where the environment goes (default, envforge's data folder).
    type: path
  envforge_home:
    description: ENVFORGE_HOME for the call (state, caches and environments under one folder).
    type: path
  executable:
    description: The envforge executable (default, the one on PATH).
    type: path
author: envforge developers
"""

EXAMPLES = r"""
- name: Theano-PyMC stack from the bundle
  envforge.core.envforge:
    spec: /opt/envforge/bundle/specs/theano-cpu-debian.toml
    bundle: /opt/envforge/bundle
    executable: /opt/envforge/venv/bin/envforge
"""

RETURN = r"""
plan:
  description: envforge's plan document (steps and their changes).
  returned: state=present
  type: dict
ran:
  description: The steps apply ran.
  returned: when changed and not in check mode
  type: list
prefix:
  description: The environment's folder.
  returned: always
  type: str
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.envforge.core.plugins.module_utils.envforge_cli import (
    PENDING,
    call,
    plan_diff,
    target_options,
)


def present(module):
    spec = module.params["spec"]
    rc, plan, _ = call(module, ["plan", spec] + target_options(module), ok=(0, PENDING))
    changed = rc == PENDING
    result = {"changed": changed, "plan": (plan or {}).get("plan"),
              "prefix": ((plan or {}).get("plan") or {}).get("prefix")}
    if module._diff and changed:
        result["diff"] = plan_diff(plan)
    if changed and not module.check_mode:
        _, applied, _ = call(module, ["apply", spec, "--yes"] + target_options(module))
        result["ran"] = (applied or {}).get("ran", [])
    return result


def absent(module):
    spec = module.params["spec"]
    _, status, _ = call(module, ["status"])
    applied = _applied_here(status, module.params.get("prefix"), spec)
    result = {"changed": bool(applied), "prefix": applied}
    if applied and not module.check_mode:
        _, undone, _ = call(module, ["rollback", spec] + target_options(module, sources=False))
        result["undone"] = (undone or {}).get("undone", [])
    return result


def _applied_here(status, prefix, spec):
    """The prefix of this spec's environment if envforge's state records one, else None: a
    record of another spec, even at the same prefix, is never this module's to roll back."""
    wanted_spec = os.path.realpath(spec)
    for record in (status or {}).get("environments", []):
        if prefix and os.path.realpath(record.get("prefix", "")) != os.path.realpath(prefix):
            continue
        if os.path.realpath(record.get("spec", "")) == wanted_spec:
            return record.get("prefix")
    return None


def main():
    module = AnsibleModule(
        argument_spec={
            "spec": {"type": "path", "required": True},
            "state": {"type": "str", "default": "present", "choices": ["present", "absent"]},
            "bundle": {"type": "path"},
            "prefix": {"type": "path"},
            "envforge_home": {"type": "path"},
            "executable": {"type": "path"},
        },
        supports_check_mode=True,
    )
    result = present(module) if module.params["state"] == "present" else absent(module)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
