# Shared by the servespec_* modules: where a deployment lives on a host, and its state file.
# Everything a host keeps for a deployment is under /var/lib/servespec/<deployment>/ and the
# active files under /etc/servespec/<deployment> (a link to the active revision).

from __future__ import annotations

import json
import os
import tempfile
import time

STATE_ROOT = "/var/lib/servespec"
CONFIG_ROOT = "/etc/servespec"


def deployment_dir(deployment, root=STATE_ROOT):
    return os.path.join(root, deployment)


def revision_dir(deployment, number, root=STATE_ROOT):
    return os.path.join(root, deployment, "revisions", str(number))


def active_link(deployment, config_root=CONFIG_ROOT):
    return os.path.join(config_root, deployment)


def state_path(deployment, root=STATE_ROOT):
    return os.path.join(root, deployment, "state.json")


def empty_state(deployment):
    return {"version": 1, "deployment": deployment, "current": None, "good": None, "revisions": []}


def read_state(deployment, root=STATE_ROOT):
    try:
        with open(state_path(deployment, root)) as handle:
            return json.load(handle)
    except FileNotFoundError:
        return None


def write_state(state, root=STATE_ROOT):
    """Write state.json atomically (a crash leaves the old or the new file, never half of one)."""
    path = state_path(state["deployment"], root)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".state.")
    with os.fdopen(fd, "w") as handle:
        json.dump(state, handle, indent=2, sort_keys=True)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)


def revision_entry(state, number):
    for entry in state["revisions"]:
        if entry["number"] == number:
            return entry
    return None


def base_url(spec):
    """http://HOST:PORT of a container spec's health port, as reached from its own host."""
    host = "127.0.0.1"
    for port in spec["ports"]:
        if port["host_ip"] not in ("0.0.0.0", "::", ""):
            host = port["host_ip"]
    return f"http://{host}:{spec['healthcheck']['port']}"


def lock_holder(lock_dir):
    """The holder.json of a deployment's lock folder, or None when there is none."""
    try:
        with open(os.path.join(lock_dir, "holder.json")) as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


def now():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def load_container(deployment, number, root=STATE_ROOT):
    with open(os.path.join(revision_dir(deployment, number, root), ".servespec", "container.json")) as handle:
        return json.load(handle)


def read_env_file(path):
    """KEY=value lines as Docker reads env files (no quotes, no expansion)."""
    values = {}
    with open(path) as handle:
        for line in handle:
            line = line.rstrip("\n")
            if not line or line.startswith("#") or "=" not in line:
                continue
            key, _, value = line.partition("=")
            values[key] = value
    return values
