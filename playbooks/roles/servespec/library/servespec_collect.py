#!/usr/bin/python
# servespec: collect the hardware outputs `deploy discover` parses (read-only).

from __future__ import annotations

DOCUMENTATION = r"""
module: servespec_collect
short_description: Run the commands servespec parses into a host's facts file
description:
  - Runs nvidia-smi (CSV query, table, topo -m), lspci -vvv and numactl --hardware when
    they exist, and returns their outputs verbatim; missing commands give no output.
    Parsing happens on the controller.
options: {}
author: servespec
"""

import shutil
import subprocess

from ansible.module_utils.basic import AnsibleModule

COMMANDS = {
    "nvidia-smi.csv": [
        "nvidia-smi",
        "--query-gpu=index,name,pci.bus_id,memory.total,compute_cap,driver_version",
        "--format=csv",
    ],
    "nvidia-smi.txt": ["nvidia-smi"],
    "topo.txt": ["nvidia-smi", "topo", "-m"],
    "lspci.txt": ["lspci", "-vvv"],
    "numa.txt": ["numactl", "--hardware"],
}


def main():
    module = AnsibleModule(argument_spec={}, supports_check_mode=True)
    outputs = {}
    for name, argv in COMMANDS.items():
        if not shutil.which(argv[0]):
            continue
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
        except (OSError, subprocess.SubprocessError):
            continue
        if done.returncode == 0 and done.stdout.strip():
            outputs[name] = done.stdout
    module.exit_json(changed=False, outputs=outputs)


if __name__ == "__main__":
    main()
