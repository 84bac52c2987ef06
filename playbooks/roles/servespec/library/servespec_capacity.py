#!/usr/bin/python
# servespec: the GPU and host memory free on a host now, for rollout.strategy auto's plan (read-only).

from __future__ import annotations

DOCUMENTATION = r"""
module: servespec_capacity
short_description: Report a host's free GPU and host memory and whether a deployment's front proxy runs
description:
  - Runs C(nvidia-smi --query-gpu=index,memory.total,memory.used --format=csv,noheader,nounits)
    (MiB per GPU) and reads C(MemAvailable) from /proc/meminfo; reports, for each deployment,
    whether its front proxy container (C(servespec-<deployment>-proxy)) is running.
  - The controller decides surge or in place from this (servespec.plan.strategy); nothing changes here.
options:
  deployments: {description: Deployment names, required: true, type: list, elements: str}
author: servespec
"""

import shutil
import subprocess

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.servespec_common import CAPACITY, check_deployment, servespec_result

GPU_QUERY = ["nvidia-smi", "--query-gpu=index,memory.total,memory.used", "--format=csv,noheader,nounits"]


def gpu_memory():
    """[{index, total_mib, used_mib}] from nvidia-smi, or None when it is missing or fails."""
    if not shutil.which(GPU_QUERY[0]):
        return None
    try:
        done = subprocess.run(GPU_QUERY, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode:
        return None
    rows = []
    for line in done.stdout.splitlines():
        words = [word.strip() for word in line.split(",")]
        if len(words) != 3 or not all(word.isdigit() for word in words):
            continue  # "[N/A]" or a header: not a number nvidia-smi measured
        rows.append({"index": int(words[0]), "total_mib": int(words[1]), "used_mib": int(words[2])})
    return rows


def mem_available_mib():
    """MemAvailable of /proc/meminfo in MiB (None when unread)."""
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) // 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def proxy_running(deployment):
    """Whether servespec-<deployment>-proxy runs (False without Docker or the container)."""
    try:
        import docker

        return docker.from_env().containers.get(f"servespec-{deployment}-proxy").status == "running"
    except Exception:  # absent container or no Docker: no proxy
        return False


def main():
    module = AnsibleModule(
        argument_spec=dict(deployments=dict(type="list", elements="str", required=True)),
        supports_check_mode=True,
    )
    names = module.params["deployments"]
    for name in names:
        check_deployment(module, name)
    proxies = {name: proxy_running(name) for name in names}
    report = servespec_result(CAPACITY, gpus=gpu_memory(), mem_available_mib=mem_available_mib(), proxies=proxies)
    module.exit_json(changed=False, **report)


if __name__ == "__main__":
    main()
