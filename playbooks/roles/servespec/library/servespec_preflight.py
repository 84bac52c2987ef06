#!/usr/bin/python
# servespec: check a host before anything of a deployment changes on it.

from __future__ import annotations

DOCUMENTATION = r"""
module: servespec_preflight
short_description: Preflight checks of a servespec deployment on a host
description:
  - Docker engine reachable; NVIDIA container runtime (or CDI) present when the container
    requests GPUs; the chosen GPUs run no foreign processes; the port is free or held by
    this deployment; disk room for the image archive; local model paths exist.
options:
  deployment: {description: Deployment name, required: true, type: str}
  number: {description: Revision whose container.json to check, required: true, type: int}
  model_paths: {description: Host paths the model needs, type: list, elements: str, default: []}
  model_roots:
    description:
      - Host folders a model path must resolve inside (symlinks followed). The controller always
        passes the inventory's defaults.model_roots; without roots every model path is refused.
    type: list
    elements: str
    default: []
  archive_bytes: {description: Size of the image archive to load, type: int, default: 0}
  standin: {description: Test-only stand-in image in use (GPU checks are skipped), type: bool, default: false}
  image: {description: Image reference to look for (reported as image_present), type: str}
  driver_min: {description: Lowest NVIDIA driver the image's CUDA version runs on (e.g. 525.60.13), type: str}
  state_root: {description: Root of the state folders, type: str, default: /var/lib/servespec}
author: servespec
"""

import os
import shutil
import socket
import subprocess

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.servespec_common import (
    STATE_ROOT,
    check_deployment,
    load_container,
    model_path_problem,
    replica_names,
)


def _docker(errors):
    """The engine's read-only API (module_utils/servespec_docker: no Docker SDK import), None when unreachable."""
    try:
        from ansible.module_utils import servespec_docker as engine

        engine.ping()
        return engine
    except Exception as err:  # any failure means the engine is unreachable
        errors.append(f"Docker engine not reachable: {err}")
        return None


def _smi(*args):
    """nvidia-smi's output for ``args`` ('' when it fails)."""
    return subprocess.run(["nvidia-smi", *args], capture_output=True, text=True, check=False).stdout


def _own_pids(client, spec):
    """Host PIDs of this deployment's own containers (the running revision and the one kept aside)."""
    pids = set()
    for name in (spec["name"], f"{spec['name']}-previous"):
        try:
            top = client.top(name)
        except Exception:  # absent or stopped: it holds no GPU
            continue
        column = top["Titles"].index("PID")
        pids.update(str(row[column]) for row in top.get("Processes") or [])
    return pids


def _gpu_checks(client, spec, errors):
    runtimes = client.info().get("Runtimes", {})
    if "nvidia" not in runtimes and not os.path.isdir("/etc/cdi") and not os.path.isdir("/var/run/cdi"):
        errors.append("the container requests GPUs but the NVIDIA container runtime (or CDI) is not configured")
    if not shutil.which("nvidia-smi"):
        return
    busy = _smi("--query-compute-apps=gpu_bus_id,pid,process_name", "--format=csv,noheader").strip()
    indices = _smi("--query-gpu=index,pci.bus_id", "--format=csv,noheader")
    bus_of = {line.split(",")[0].strip(): line.split(",")[1].strip() for line in indices.splitlines() if "," in line}
    wanted = {bus_of.get(i) for i in spec["gpus"]["device_ids"]}
    ours = _own_pids(client, spec)  # an update replaces them; they are not "other processes"
    foreign = []
    for line in busy.splitlines():
        fields = [field.strip() for field in line.split(",")]
        if fields[0] in wanted and (len(fields) < 2 or fields[1] not in ours):
            foreign.append(line)
    if foreign:
        errors.append(f"GPUs {spec['gpus']['device_ids']} run other processes: {foreign}")


def _driver(minimum, errors):
    """The host's NVIDIA driver must run the image's CUDA version (as rule HW005 expects)."""
    if not minimum or not shutil.which("nvidia-smi"):
        return
    out = _smi("--query-gpu=driver_version", "--format=csv,noheader").split()
    if not out:
        return

    def key(text):
        return tuple(int(part) for part in text.split(".") if part.isdigit())

    if key(out[0]) < key(minimum):
        errors.append(f"NVIDIA driver {out[0]} is older than {minimum}, which the image's CUDA version needs")


def _port(client, spec, errors):
    ports = spec["ports"] or [{"host_ip": "0.0.0.0", "host_port": spec["healthcheck"]["port"]}]
    ours = client.container_names() if client else set()
    for port in ports:
        probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("0.0.0.0", port["host_port"]))
        except OSError:
            # The port's owner may be this deployment's engine, its front proxy (rollout.strategy auto) or,
            # with placement.replicas_per_host, one of its replicas.
            owners = {spec["name"], f"servespec-{spec['deployment']}-proxy", *replica_names(spec)}
            if not owners & set(ours):
                errors.append(f"port {port['host_port']} is in use by another process")
        finally:
            probe.close()


def _image_present(client, image):
    if client is None or not image:
        return False
    try:
        return client.image_present(image)
    except Exception:  # unreadable: the image step loads or pulls it
        return False


def _native(spec, errors):
    """A host-native unit (LM Studio's lms): systemd running, its executable there, the port free or its own."""
    native = spec["native"]
    systemctl = shutil.which("systemctl")
    if not systemctl or not os.path.isdir("/run/systemd/system"):
        errors.append("systemd is not running on this host: a host-native engine unit needs it")
    executable = native.get("executable", "")
    if not (os.path.isfile(executable) and os.access(executable, os.X_OK)):
        errors.append(
            f"{os.path.basename(executable)} not found at {executable}: install the engine on this host (LM Studio's "
            "installer puts lms in ~/.lmstudio/bin) or name its path with engine.entrypoint"
        )
    own = systemctl and subprocess.run([systemctl, "is-active", "--quiet", native["unit"]], check=False).returncode == 0
    if not own:  # a running unit of this deployment holds the port itself
        _port(None, spec, errors)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            deployment=dict(type="str", required=True),
            number=dict(type="int", required=True),
            model_paths=dict(type="list", elements="str", default=[]),
            model_roots=dict(type="list", elements="str", default=[]),
            archive_bytes=dict(type="int", default=0),
            standin=dict(type="bool", default=False),
            image=dict(type="str"),
            driver_min=dict(type="str"),
            state_root=dict(type="str", default=STATE_ROOT),
        ),
        supports_check_mode=True,
    )
    p = module.params
    check_deployment(module, p["deployment"])
    spec = load_container(p["deployment"], p["number"], p["state_root"])
    errors = []
    native = bool(spec.get("native"))  # a host-native unit: no Docker engine, no image
    client = None if native else _docker(errors)
    if native:
        _native(spec, errors)
    if client is not None and spec["gpus"] and not p["standin"]:
        _gpu_checks(client, spec, errors)
        _driver(p["driver_min"], errors)
    if client is not None:
        _port(client, spec, errors)
    for path in p["model_paths"]:
        problem = model_path_problem(path, p["model_roots"])
        if problem:
            errors.append(problem)
    free = shutil.disk_usage(p["state_root"]).free
    if p["archive_bytes"] and free < 2 * p["archive_bytes"]:
        errors.append(f"{free} bytes free under {p['state_root']}, the image archive needs {2 * p['archive_bytes']}")
    if errors:
        module.fail_json(msg="; ".join(errors), stage="preflight", problems=errors)
    image = p["image"] or spec["image"]
    present = native or _image_present(client, image)
    module.exit_json(changed=False, image=image, image_present=present, native=native)


if __name__ == "__main__":
    main()
