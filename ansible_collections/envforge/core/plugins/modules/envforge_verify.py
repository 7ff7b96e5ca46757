#!/usr/bin/python
"""Ansible module: run envforge verify on the host; its rows become facts, a failed row fails."""

from __future__ import annotations

DOCUMENTATION = r"""
module: envforge_verify
short_description: Verify an applied envforge environment and gather the result as facts
description:
  - Runs C(envforge verify SPEC --json) on the managed host. The check rows, counts and
    timings are returned as the fact C(envforge_verify); a failed check fails the host.
  - Verify changes nothing, so check mode runs it too.
options:
  spec:
    description: The spec file on the managed host.
    required: true
    type: path
  prefix:
    description: The environment's folder, when it is not the default.
    type: path
  envforge_home:
    description: ENVFORGE_HOME for the call.
    type: path
  executable:
    description: The envforge executable (default, the one on PATH).
    type: path
author: envforge developers
"""

RETURN = r"""
ansible_facts:
  description: C(envforge_verify) with verdict, counts, rows and timings.
  returned: always
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.envforge.core.plugins.module_utils.envforge_cli import (
    call,
    target_options,
)


def main():
    module = AnsibleModule(
        argument_spec={
            "spec": {"type": "path", "required": True},
            "prefix": {"type": "path"},
            "envforge_home": {"type": "path"},
            "executable": {"type": "path"},
        },
        supports_check_mode=True,
    )
    args = ["verify", module.params["spec"]] + target_options(module, sources=False)
    rc, document, _ = call(module, args, ok=(0, 1))
    document = document or {}
    facts = {key: document.get(key) for key in ("verdict", "counts", "rows", "timings")}
    if rc != 0:
        failed = [row["name"] + ": " + (row.get("why") or row.get("found", ""))
                  for row in document.get("rows", []) if row.get("status") == "fail"]
        module.fail_json(msg="envforge verify failed: " + "; ".join(failed), rc=rc,
                         ansible_facts={"envforge_verify": facts})
    module.exit_json(changed=False, ansible_facts={"envforge_verify": facts})


if __name__ == "__main__":
    main()
