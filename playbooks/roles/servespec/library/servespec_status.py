#!/usr/bin/python
# servespec: what a host runs for each deployment (read-only).

from __future__ import annotations

DOCUMENTATION = r"""
module: servespec_status
short_description: Report servespec deployments on a host
description:
  - For each deployment, its state.json, the active revision's files, the lock holder,
    the container's status and start time, and one health probe.
options:
  deployments: {description: Deployment names, required: true, type: list, elements: str}
  state_root: {description: Root of the state folders, type: str, default: /var/lib/servespec}
author: servespec
"""

import os
import urllib.error
import urllib.request

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.servespec_common import (
    STATE_ROOT,
    base_url,
    check_deployment,
    deployment_dir,
    load_container,
    lock_holder,
    read_state,
    revision_dir,
)


def _files(path):
    out = {}
    if os.path.isdir(path):
        for name in sorted(os.listdir(path)):
            full = os.path.join(path, name)
            if os.path.isfile(full) and name != "secrets.env":
                with open(full, encoding="utf-8", errors="replace") as handle:
                    out[name] = handle.read()
    return out


def _container(name):
    try:
        import docker

        container = docker.from_env().containers.get(name)
        return {"status": container.status, "started_at": container.attrs["State"].get("StartedAt")}
    except Exception:  # absent container or no Docker: reported as missing
        return {"status": "missing", "started_at": None}


def _healthy(spec):
    url = base_url(spec) + spec["healthcheck"]["path"]
    try:
        with urllib.request.urlopen(url, timeout=3) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False


def main():
    module = AnsibleModule(
        argument_spec=dict(
            deployments=dict(type="list", elements="str", required=True),
            state_root=dict(type="str", default=STATE_ROOT),
        ),
        supports_check_mode=True,
    )
    root = module.params["state_root"]
    for name in module.params["deployments"]:
        check_deployment(module, name)
    report = {}
    for name in module.params["deployments"]:
        state = read_state(name, root)
        entry = {
            "state": state,
            "files": {},
            "lock": lock_holder(os.path.join(deployment_dir(name, root), "lock")),
            "container": None,
            "healthy": False,
        }
        if state and state.get("current") is not None:
            entry["files"] = _files(revision_dir(name, state["current"], root))
            spec = load_container(name, state["current"], root)
            entry["container"] = _container(spec["name"])
            entry["healthy"] = entry["container"]["status"] == "running" and _healthy(spec)
            entry["endpoint_port"] = spec["healthcheck"]["port"]
        report[name] = entry
    module.exit_json(changed=False, deployments=report)


if __name__ == "__main__":
    main()
