#!/usr/bin/python
# servespec: a per-deployment lock on a host, so two applies cannot interleave.

from __future__ import annotations

DOCUMENTATION = r"""
module: servespec_lock
short_description: Take or release a servespec deployment lock on a host
description:
  - The lock is a directory (created atomically) holding who took it. A second apply of
    the same deployment fails and names the holder. A lock whose holder is this
    controller's own dead process is broken when I(break_holder) names it.
options:
  deployment: {description: Deployment name, required: true, type: str}
  state:
    description: present takes the lock, absent releases it.
    type: str
    choices: [present, absent]
    default: present
  holder: {description: Who takes it (controller host, pid, run id), type: dict, default: {}}
  break_holder: {description: Run id of a stale lock of this controller to break, type: str}
  state_root: {description: Root of the state folders, type: str, default: /var/lib/servespec}
author: servespec
"""

import json
import os
import shutil

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.servespec_common import STATE_ROOT, check_deployment, deployment_dir, lock_holder, now


def main():
    module = AnsibleModule(
        argument_spec=dict(
            deployment=dict(type="str", required=True),
            state=dict(type="str", choices=["present", "absent"], default="present"),
            holder=dict(type="dict", default={}),
            break_holder=dict(type="str"),
            state_root=dict(type="str", default=STATE_ROOT),
        ),
        supports_check_mode=True,
    )
    p = module.params
    check_deployment(module, p["deployment"])
    path = os.path.join(deployment_dir(p["deployment"], p["state_root"]), "lock")
    run_id = str(p["holder"].get("run_id", ""))
    if p["state"] == "absent":
        held = lock_holder(path) or {}
        if os.path.isdir(path) and (not run_id or held.get("run_id") == run_id):
            if not module.check_mode:
                shutil.rmtree(path, ignore_errors=True)
            module.exit_json(changed=True)
        module.exit_json(changed=False)
    held = lock_holder(path) or {}
    if os.path.isdir(path) and p["break_holder"] and held.get("run_id") == p["break_holder"]:
        shutil.rmtree(path, ignore_errors=True)
    if module.check_mode:
        module.exit_json(changed=False, holder=(lock_holder(path) or {}))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    try:
        os.mkdir(path)
    except FileExistsError:
        held = lock_holder(path) or {}
        module.fail_json(
            msg=(
                f"deployment {p['deployment']} is locked by another apply: controller {held.get('controller', '?')} "
                f"pid {held.get('pid', '?')} since {held.get('since', '?')} (run {held.get('run_id', '?')}); "
                "wait for it to finish"
            ),
            holder=held,
        )
    with open(os.path.join(path, "holder.json"), "w") as handle:
        json.dump({**p["holder"], "since": now()}, handle)
    module.exit_json(changed=True, holder=p["holder"])


if __name__ == "__main__":
    main()
