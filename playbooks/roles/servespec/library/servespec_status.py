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
import re
import subprocess
import urllib.error
import urllib.request

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.servespec_common import (
    STATE_ROOT,
    STATUS,
    base_url,
    check_deployment,
    deployment_dir,
    load_container,
    lock_holder,
    read_state,
    revision_dir,
    servespec_result,
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
        from ansible.module_utils.servespec_docker import container

        attrs = container(name)
    except Exception:  # no Docker: reported as missing
        attrs = None
    if not attrs:
        return {"status": "missing", "started_at": None}
    return {"status": attrs["State"]["Status"], "started_at": attrs["State"].get("StartedAt")}


def _unit(spec):
    """A host-native unit's state in a container's terms: systemd's ActiveState and when it entered it (UTC)."""
    argv = [
        "systemctl",
        "show",
        "--timestamp=utc",
        "--property=ActiveState,ActiveEnterTimestamp",
        spec["native"]["unit"],
    ]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
    except OSError:  # no systemd: reported as missing
        return {"status": "missing", "started_at": None}
    values = dict(line.partition("=")[::2] for line in done.stdout.splitlines())
    status = {"active": "running", "activating": "restarting", "deactivating": "removing", "failed": "exited"}
    when = re.search(r"(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d) UTC", values.get("ActiveEnterTimestamp", ""))
    return {
        "status": status.get(values.get("ActiveState"), "exited" if values.get("ActiveState") else "missing"),
        "started_at": f"{when.group(1)}T{when.group(2)}Z" if when else None,
    }


def _replica(deployment, number, root, listed):
    """One replica of placement.replicas_per_host: its container's state, revision label and health."""
    name = listed["name"]
    found = _container(name)
    attrs = None
    try:
        from ansible.module_utils.servespec_docker import container

        attrs = container(name)
    except Exception:  # no Docker: reported as missing
        attrs = None
    labels = ((attrs or {}).get("Config") or {}).get("Labels") or {}
    healthy = False
    published = []
    for entries in (((attrs or {}).get("HostConfig") or {}).get("PortBindings") or {}).values():
        published += [int(e["HostPort"]) for e in entries or [] if str(e.get("HostPort", "")).isdigit()]
    slots = [port for port in published if port in listed["ports"]]
    if found["status"] == "running" and slots:
        try:
            spec = load_container(deployment, number, root, listed["index"])
            spec["healthcheck"]["port"] = slots[0]
            healthy = _healthy(spec)
        except (OSError, ValueError, KeyError):
            healthy = False
    return {
        "index": listed["index"],
        "name": name,
        **found,
        "revision": labels.get("servespec.revision"),
        "port": slots[0] if slots else None,
        "healthy": healthy,
    }


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
        try:
            state = read_state(name, root)
        except ValueError:
            state = "unreadable"  # not JSON: the controller names the problem for this host
        entry = {
            "state": state,
            "files": {},
            "lock": lock_holder(os.path.join(deployment_dir(name, root), "lock")),
            "container": None,
            "healthy": False,
        }
        current = state.get("current") if isinstance(state, dict) else None
        # Only a revision number names a folder; anything else goes back unread for the controller to refuse.
        if isinstance(current, int) and not isinstance(current, bool):
            entry["files"] = _files(revision_dir(name, current, root))
            try:
                spec = load_container(name, current, root)
            except (OSError, ValueError):
                report[name] = entry
                continue
            entry["container"] = _unit(spec) if spec.get("native") else _container(spec["name"])
            entry["healthy"] = entry["container"]["status"] == "running" and _healthy(spec)
            entry["endpoint_port"] = spec["healthcheck"]["port"]
            if spec.get("replicas"):
                # placement.replicas_per_host: the host serves when every replica runs and answers its health check.
                replicas = [_replica(name, current, root, listed) for listed in spec["replicas"]]
                entry["replicas"] = replicas
                down = [r for r in replicas if r["status"] != "running"]
                times = sorted(r["started_at"] for r in replicas if r["started_at"])
                entry["container"] = {
                    "status": down[0]["status"] if down else "running",
                    "started_at": times[-1] if times else None,
                }
                entry["healthy"] = all(r["healthy"] for r in replicas)
        report[name] = entry
    module.exit_json(changed=False, **servespec_result(STATUS, deployments=report))


if __name__ == "__main__":
    main()
