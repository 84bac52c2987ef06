#!/usr/bin/python
# servespec: install, start and restore a host-native engine's systemd unit (LM Studio's daemon), no container.

from __future__ import annotations

DOCUMENTATION = r"""
module: servespec_native
short_description: Run a servespec deployment's host-native engine as its rendered systemd unit
description:
  - For engines without a container (LM Studio's llmster, driven by lms), container.json's C(native)
    names the rendered unit file and the commands it runs. C(start) installs the revision's unit file
    as /etc/systemd/system/<unit>, reloads systemd and restarts the unit; systemctl returns once the
    unit's ExecStart and ExecStartPost commands (lms daemon up, load, server start) have run.
  - C(restore) installs and restarts the last good revision's unit (state.json C(good)), or stops and
    removes the unit when there is none. C(logs) returns the unit's last journal lines, secrets masked.
  - C(remove) (deploy destroy) stops, disables and removes the deployment's unit where there is one.
  - Only the Python standard library and systemctl/journalctl are used; values reach no shell.
options:
  deployment: {description: Deployment name, required: true, type: str}
  action: {description: What to do, required: true, type: str, choices: [start, restore, logs, remove]}
  number: {description: Revision whose unit to start (start), type: int}
  state_root: {description: Root of the state folders, type: str, default: /var/lib/servespec}
  unit_root: {description: Where systemd reads unit files, type: str, default: /etc/systemd/system}
author: servespec
"""

import os
import re
import shutil
import subprocess
import tempfile

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.servespec_common import (
    STATE_ROOT,
    check_deployment,
    deployment_secrets,
    load_container,
    read_state,
    revision_dir,
    scrub_lines,
)

UNIT_NAME = re.compile(r"^servespec-[a-z0-9-]+\.service$")


def _systemctl(*args):
    """systemctl's exit status and output (never through a shell)."""
    done = subprocess.run(["systemctl", *args], capture_output=True, text=True, check=False)
    return done.returncode, (done.stdout + done.stderr).strip()


def _native(deployment, number, root):
    """container.json's ``native`` mapping of a revision, checked: a servespec unit name, a plain file name."""
    native = load_container(deployment, number, root).get("native")
    if not isinstance(native, dict):
        raise ValueError(f"revision {number} of {deployment} is not a host-native unit")
    unit, unit_file = native.get("unit"), native.get("unit_file")
    if not isinstance(unit, str) or not UNIT_NAME.match(unit) or unit != f"servespec-{deployment}.service":
        raise ValueError(f"refusing unit name {unit!r}")
    if not isinstance(unit_file, str) or "/" in unit_file or unit_file.startswith("."):
        raise ValueError(f"refusing unit file name {unit_file!r}")
    return native


def _check_unit(text, native):
    """Refuse a unit that would run as root or run anything but the engine's own executable (lms)."""
    lines = [line.strip() for line in text.splitlines()]
    users = [line.partition("=")[2].strip() for line in lines if line.startswith("User=")]
    if not users or users[-1] in ("", "root", "0"):
        raise ValueError("refusing a host-native unit that runs as root (no User= or User=root)")
    executable = native.get("executable")
    if not isinstance(executable, str) or not executable.startswith("/") or os.path.basename(executable) != "lms":
        raise ValueError(f"refusing host-native executable {executable!r}: only an absolute path to lms runs")
    for line in lines:
        if line.startswith("Exec") and line.partition("=")[2].split(" ", 1)[0] != executable:
            raise ValueError(f"refusing a unit line that runs something other than {executable}")


def _install(p, number):
    """Write the revision's unit file into unit_root atomically; True when its content changed."""
    native = _native(p["deployment"], number, p["state_root"])
    source = os.path.join(revision_dir(p["deployment"], number, p["state_root"]), native["unit_file"])
    with open(source, encoding="utf-8") as handle:
        text = handle.read()
    _check_unit(text, native)
    target = os.path.join(p["unit_root"], native["unit"])
    try:
        with open(target, encoding="utf-8") as handle:
            same = handle.read() == text
    except OSError:
        same = False
    if not same:
        os.makedirs(p["unit_root"], exist_ok=True)
        fd, temporary = tempfile.mkstemp(dir=p["unit_root"], prefix=".servespec-")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(temporary, 0o644)
        os.replace(temporary, target)
    return native, not same


def _restart(native):
    """daemon-reload, enable and restart the unit; (ok, message)."""
    for args in (("daemon-reload",), ("enable", native["unit"]), ("restart", native["unit"])):
        code, output = _systemctl(*args)
        if code:
            return False, f"systemctl {' '.join(args)} failed ({code}): {output[-500:]}"
    return True, ""


def _active_since(unit):
    code, output = _systemctl("show", "--property=ActiveEnterTimestampMonotonic,MainPID,ActiveState", unit)
    values = dict(line.partition("=")[::2] for line in output.splitlines() if "=" in line) if code == 0 else {}
    return values


def _start(p):
    native, changed = _install(p, p["number"])
    ok, message = _restart(native)
    if not ok:
        return {"failed": True, "msg": message, "stage": "native", "unit": native["unit"]}
    return {
        "changed": True,
        "unit": native["unit"],
        "unit_file_changed": changed,
        "active": _active_since(native["unit"]),
    }


def _remove(p, unit):
    _systemctl("disable", "--now", unit)
    path = os.path.join(p["unit_root"], unit)
    if os.path.lexists(path):
        os.unlink(path)
    _systemctl("daemon-reload")
    return {"changed": True, "restored": None, "unit": unit}


def _restore(p):
    state = read_state(p["deployment"], p["state_root"]) or {}
    good, unit = state.get("good"), f"servespec-{p['deployment']}.service"
    if not isinstance(good, int) or isinstance(good, bool):
        return _remove(p, unit)
    try:
        native, _ = _install(p, good)
    except (OSError, ValueError):
        # The last good revision ran a container (another engine): this unit has nothing to go back to.
        return _remove(p, unit)
    ok, message = _restart(native)
    if not ok:
        return {"failed": True, "msg": f"restoring revision {good}: {message}", "stage": "restore"}
    return {"changed": True, "restored": good, "unit": native["unit"]}


def _logs(p):
    unit = f"servespec-{p['deployment']}.service"
    if not shutil.which("journalctl"):
        return {"changed": False, "logs": []}
    done = subprocess.run(
        ["journalctl", "--unit", unit, "--lines", "30", "--no-pager", "--output", "cat"],
        capture_output=True,
        text=True,
        check=False,
    )
    lines = done.stdout.splitlines()[-30:]
    return {"changed": False, "logs": scrub_lines(lines, deployment_secrets(p["deployment"], p["state_root"]))}


def _destroy(p):
    unit = f"servespec-{p['deployment']}.service"
    if not os.path.lexists(os.path.join(p["unit_root"], unit)):
        return {"changed": False, "unit": None}
    return _remove(p, unit)


ACTIONS = {"start": _start, "restore": _restore, "logs": _logs, "remove": _destroy}


def main():
    module = AnsibleModule(
        argument_spec=dict(
            deployment=dict(type="str", required=True),
            action=dict(type="str", required=True, choices=list(ACTIONS)),
            number=dict(type="int"),
            state_root=dict(type="str", default=STATE_ROOT),
            unit_root=dict(type="str", default="/etc/systemd/system"),
        ),
        supports_check_mode=True,
    )
    p = module.params
    check_deployment(module, p["deployment"])
    if p["action"] in ("start", "restore") and not shutil.which("systemctl"):
        module.fail_json(msg="systemctl not found: a host-native engine unit needs systemd on the host", stage="native")
    if module.check_mode:
        module.exit_json(changed=p["action"] in ("start", "restore"))
    if p["action"] == "start" and p["number"] is None:
        module.fail_json(msg="start needs the revision number")
    try:
        result = ACTIONS[p["action"]](p)
    except (OSError, ValueError) as err:
        module.fail_json(msg=f"{p['action']}: {err}", stage="native")
    if result.pop("failed", False):
        module.fail_json(**result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
