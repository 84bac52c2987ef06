#!/usr/bin/python
# servespec: start, stop and restore a deployment's engine container exactly as container.json says.

from __future__ import annotations

DOCUMENTATION = r"""
module: servespec_container
short_description: Run a servespec deployment's engine container with the Docker SDK
description:
  - C(start) stops the running container of the deployment, keeps it (renamed
    C(<name>-previous)) and starts the revision's container from its container.json.
  - C(promote) removes the kept previous container once the new one is healthy.
  - C(restore) removes the new container and starts the kept previous one again.
  - C(remove) removes the deployment's containers; C(logs) returns the last log lines.
  - C(beside) starts the revision's container as C(<name>-next) while the running one keeps
    serving (rollout.strategy auto, surge); C(swap) then stops the running one, keeps it as
    C(<name>-previous) and renames C(<name>-next) to C(<name>): the state C(start) leaves.
options:
  deployment: {description: Deployment name, required: true, type: str}
  action:
    description: What to do.
    required: true
    type: str
    choices: [start, promote, restore, remove, logs, exec, beside, swap]
  number: {description: Revision whose container.json to start, type: int}
  command: {description: Command to run inside the container (exec), type: list, elements: str}
  standin_image: {description: Test-only stand-in image (GPU requests and NUMA pinning dropped), type: str}
  replica:
    description: >-
      One of placement.replicas_per_host's replicas: the action works on its container
      C(servespec-<deployment>-r<replica>) (and its C(-previous) and C(-next)), started from its container.json
    type: int
  state_root: {description: Root of the state folders, type: str, default: /var/lib/servespec}
author: servespec
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.servespec_common import (
    STATE_ROOT,
    check_deployment,
    deployment_secrets,
    load_container,
    read_env_file,
    read_state,
    revision_entry,
    scrub_lines,
)

try:
    import docker
    from docker.errors import NotFound
    from docker.types import DeviceRequest

    HAS_DOCKER = True
except ImportError:  # pragma: no cover - reported to the user
    HAS_DOCKER = False


def _get(client, name):
    try:
        return client.containers.get(name)
    except NotFound:
        return None


def _environment(spec):
    environment = {}
    for path in spec["env_files"]:
        if os.path.exists(path):
            environment.update(read_env_file(path))
    environment.update(spec["environment"])
    return environment


def _run_args(spec, params):
    """The Docker SDK's containers.run arguments for a container.json: the role's one translation of it.

    The controller's is servespec.render.container.docker_run (the README's docker run);
    tests/render/test_container_agreement.py checks that the two agree on every field.
    """
    args = {
        "image": spec["image"],
        "name": spec["name"],
        "command": spec["command"],
        "entrypoint": spec["entrypoint"],
        "environment": _environment(spec),
        "labels": spec["labels"],
        "restart_policy": {"Name": spec["restart_policy"]},
        "detach": True,
        # A list of binds, as docker run -v takes them: a dict keyed by host folder keeps only one
        # mount of a folder mounted twice (a local .gguf directly in the model cache folder).
        "volumes": [f"{v['host']}:{v['container']}:{v['mode']}" for v in spec["volumes"]],
    }
    if spec["network_mode"] == "host":
        args["network_mode"] = "host"
    else:
        ports = {}
        for p in spec["ports"]:
            ports.setdefault(f"{p['container_port']}/tcp", []).append((p["host_ip"], p["host_port"]))
        args["ports"] = ports
    if params["standin_image"]:
        # Test-only stand-in: put in front of the real entrypoint, it receives the engine's
        # whole command line (entrypoint, then command, as Docker runs them) as its arguments.
        args["image"] = params["standin_image"]
        args["entrypoint"] = ["/usr/local/bin/servespec-standin", *(args["entrypoint"] or [])]
    if spec["gpus"] and not params["standin_image"]:
        # The stand-in runs on hosts without the GPUs (and NUMA nodes) the facts declare.
        args["device_requests"] = [
            DeviceRequest(device_ids=spec["gpus"]["device_ids"], capabilities=[spec["gpus"]["capabilities"]])
        ]
    pinning = () if params["standin_image"] else ("cpuset_cpus", "cpuset_mems")
    for key in ("ipc_mode", "shm_size", *pinning):
        if spec.get(key):
            args[key] = spec[key]
    return args


def _logs(container, lines=30):
    try:
        return container.logs(tail=lines).decode("utf-8", "replace").splitlines()
    except Exception:  # logs are best effort
        return []


def _good_digest(p):
    state = read_state(p["deployment"], p["state_root"]) or {"revisions": []}
    entry = revision_entry(state, state.get("good"))
    return entry.get("digest") if entry else None


def _start(client, p, name, previous, current):
    spec = load_container(p["deployment"], p["number"], p["state_root"], p["replica"])
    old = _get(client, previous)
    good = _good_digest(p)
    label = "servespec.revision"
    if old is not None and current is not None and good and old.labels.get(label) == good != current.labels.get(label):
        # An interrupted rollout left the last good container aside: keep it, drop the unfinished one.
        current.remove(force=True)
        current = None
    elif old is not None:
        old.remove(force=True)
    if current is not None:
        current.stop(timeout=30)
        current.rename(previous)
    container = client.containers.run(**_run_args(spec, p))
    return {"changed": True, "id": container.id, "kept_previous": current is not None}


def _promote(client, p, name, previous, current):
    old = _get(client, previous)
    if old is not None:
        old.remove(force=True)
    return {"changed": old is not None}


def _restore(client, p, name, previous, current):
    if current is not None:
        current.remove(force=True)
    old = _get(client, previous)
    if old is not None:
        old.rename(name)
        old.start()
    return {"changed": True, "restored": old is not None}


def _remove(client, p, name, previous, current):
    removed = 0
    for container_name in (name, previous, f"{name}-next"):
        found = _get(client, container_name)
        if found is not None:
            found.remove(force=True)
            removed += 1
    if p["replica"] is None:
        # placement.replicas_per_host's replicas (servespec-<deployment>-r<i>, -previous, -next): by their label
        label = f"servespec.deployment={p['deployment']}"
        for found in client.containers.list(all=True, filters={"label": [label, "servespec.replica"]}):
            found.remove(force=True)
            removed += 1
    return {"changed": removed > 0}


def _exec(client, p, name, previous, current):
    if current is None:
        return {"failed": True, "msg": f"{name} is not running"}
    result = current.exec_run(p["command"])
    output = result.output.decode("utf-8", "replace")[-2000:]
    output = "\n".join(scrub_lines(output.split("\n"), deployment_secrets(p["deployment"], p["state_root"])))
    if result.exit_code:
        return {"failed": True, "msg": f"{' '.join(p['command'])} failed in {name}", "output": output}
    return {"changed": True, "output": output}


def _beside(client, p, name, previous, current):
    spec = load_container(p["deployment"], p["number"], p["state_root"], p["replica"])
    stale = _get(client, f"{name}-next")
    if stale is not None:
        stale.remove(force=True)
    container = client.containers.run(**dict(_run_args(spec, p), name=f"{name}-next"))
    return {"changed": True, "id": container.id}


def _swap(client, p, name, previous, current):
    new = _get(client, f"{name}-next")
    if new is None:
        return {"failed": True, "msg": f"{name}-next is not running"}
    old = _get(client, previous)
    if old is not None:
        old.remove(force=True)
    if current is not None:
        current.stop(timeout=30)
        current.rename(previous)
    new.rename(name)
    return {"changed": True, "kept_previous": current is not None}


ACTIONS = {
    "start": _start,
    "promote": _promote,
    "restore": _restore,
    "remove": _remove,
    "exec": _exec,
    "beside": _beside,
    "swap": _swap,
}


def _native(p):
    """Whether the revision (the given one, else the current) is a host-native unit: no container to manage."""
    state = read_state(p["deployment"], p["state_root"]) or {}
    try:
        return bool(load_container(p["deployment"], p["number"] or state.get("current"), p["state_root"]).get("native"))
    except (OSError, ValueError, TypeError):
        return False


def main():
    module = AnsibleModule(
        argument_spec=dict(
            deployment=dict(type="str", required=True),
            action=dict(type="str", required=True, choices=["logs", *ACTIONS]),
            number=dict(type="int"),
            command=dict(type="list", elements="str"),
            standin_image=dict(type="str"),
            replica=dict(type="int"),
            state_root=dict(type="str", default=STATE_ROOT),
        ),
        supports_check_mode=True,
    )
    check_deployment(module, module.params["deployment"])
    if module.params["action"] != "exec" and _native(module.params):
        module.exit_json(changed=False, native=True, logs=[])  # servespec_native runs the unit (tasks/native.yml)
    if not HAS_DOCKER:
        module.fail_json(msg="the Docker SDK for Python is missing on this host: install python3-docker")
    p = module.params
    check_deployment(module, p["deployment"])
    client = docker.from_env()
    name = f"servespec-{p['deployment']}"
    if p["replica"] is not None:
        name = f"{name}-r{p['replica']}"  # servespec.spec.front_proxy.replica_name
    current = _get(client, name)
    if p["action"] == "logs":
        # The tail goes back to the controller's output: mask every secret this deployment has here.
        logs = scrub_lines(_logs(current), deployment_secrets(p["deployment"], p["state_root"])) if current else []
        module.exit_json(changed=False, logs=logs)
    if module.check_mode:
        module.exit_json(changed=True)
    result = ACTIONS[p["action"]](client, p, name, f"{name}-previous", current)
    if result.pop("failed", False):
        module.fail_json(**result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
