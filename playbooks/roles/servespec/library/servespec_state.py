#!/usr/bin/python
# servespec: a deployment's revisions and state.json on a host.

from __future__ import annotations

DOCUMENTATION = r"""
module: servespec_state
short_description: Change a servespec deployment's state on a host
description:
  - Keeps /var/lib/servespec/<deployment>/state.json and the revisions/<n>/ folders, and
    points /etc/servespec/<deployment> at the active revision.
options:
  deployment: {description: Deployment name, required: true, type: str}
  action:
    description: What to do.
    required: true
    type: str
    choices: [allocate, activate, mark, restore, destroy]
  number: {description: Revision number (activate, mark), type: int}
  digest: {description: Content hash of the rendered files (allocate), type: str}
  bundle: {description: Uploaded JSON bundle of rendered files to unpack (allocate), type: str}
  bundle_content:
    description:
      - The JSON bundle of rendered files itself (allocate), read on the controller and sent with the module
        (no separate upload); its text, or the mapping of relative file name to text. Never templated.
    type: raw
  status: {description: New status (mark), type: str, choices: [good, failed]}
  state_root: {description: Root of the state folders, type: str, default: /var/lib/servespec}
  config_root: {description: Root of the active links, type: str, default: /etc/servespec}
author: servespec
"""

import json
import os
import shutil

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.servespec_common import (
    ALLOCATED,
    CONFIG_ROOT,
    FAILED,
    GOOD,
    STATE_ROOT,
    active_link,
    check_deployment,
    deployment_dir,
    empty_state,
    now,
    read_state,
    revision_dir,
    revision_entry,
    servespec_result,
    write_state,
)


def _point(link, target):
    os.makedirs(os.path.dirname(link), exist_ok=True)
    temporary = link + ".servespec-new"
    if os.path.lexists(temporary):
        os.unlink(temporary)
    os.symlink(target, temporary)
    os.replace(temporary, link)


def _bundle_files(p):
    """The bundle's files by relative name: from bundle_content, else the uploaded bundle file (then removed)."""
    content = p.get("bundle_content")
    if content is None:
        with open(p["bundle"], encoding="utf-8") as handle:
            files = json.load(handle)
        os.unlink(p["bundle"])
    else:
        files = json.loads(content) if isinstance(content, str) else content
    if not isinstance(files, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in files.items()):
        raise ValueError("the bundle is not a mapping of file names to texts")
    return files


def _unpack(files, folder):
    """Write the bundle's files (relative names, no '..') into the revision folder."""
    for relative, text in files.items():
        if relative.startswith("/") or ".." in relative.split("/"):
            raise ValueError(f"refusing file name {relative!r} in the bundle")
        path = os.path.join(folder, relative)
        os.makedirs(os.path.dirname(path), mode=0o750, exist_ok=True)
        with open(path, "w", encoding="utf-8") as out:
            out.write(text)
        os.chmod(path, 0o640)


def _allocate(p, state):
    name, root = p["deployment"], p["state_root"]
    number = max([entry["number"] for entry in state["revisions"]] or [0]) + 1
    os.makedirs(os.path.join(revision_dir(name, number, root), ".servespec"), mode=0o750, exist_ok=True)
    if p["bundle"] or p.get("bundle_content") is not None:
        _unpack(_bundle_files(p), revision_dir(name, number, root))
    state["revisions"].append({"number": number, "digest": p["digest"], "status": "pending", "created": now()})
    write_state(state, root)
    out = {"changed": True, "number": number, "path": revision_dir(name, number, root), "state": state}
    return {**out, **servespec_result(ALLOCATED, number=number)}


def _activate(p, state):
    _point(active_link(p["deployment"], p["config_root"]), revision_dir(p["deployment"], p["number"], p["state_root"]))
    state["current"] = p["number"]
    write_state(state, p["state_root"])
    return {"changed": True, "state": state}


def _mark(p, state):
    entry = revision_entry(state, p["number"])
    if entry is None:
        return {"failed": True, "msg": f"revision {p['number']} of {p['deployment']} does not exist"}
    entry["status"] = p["status"]
    entry["since" if p["status"] == "good" else "failed_at"] = now()
    if p["status"] == "good":
        state["good"] = p["number"]
    write_state(state, p["state_root"])
    kind = GOOD if p["status"] == "good" else FAILED
    return {"changed": True, "state": state, **servespec_result(kind, number=p["number"])}


def _restore(p, state):
    good = state.get("good")
    link = active_link(p["deployment"], p["config_root"])
    if good is None:
        state["current"] = None
        if os.path.lexists(link):
            os.unlink(link)
    else:
        _point(link, revision_dir(p["deployment"], good, p["state_root"]))
        state["current"] = good
    write_state(state, p["state_root"])
    return {"changed": True, "state": state, "restored": good}


def _destroy(p, state):
    link = active_link(p["deployment"], p["config_root"])
    if os.path.lexists(link):
        os.unlink(link)
    shutil.rmtree(deployment_dir(p["deployment"], p["state_root"]), ignore_errors=True)
    return {"changed": True}


ACTIONS = {"allocate": _allocate, "activate": _activate, "mark": _mark, "restore": _restore, "destroy": _destroy}


def main():
    module = AnsibleModule(
        argument_spec=dict(
            deployment=dict(type="str", required=True),
            action=dict(type="str", required=True, choices=list(ACTIONS)),
            number=dict(type="int"),
            digest=dict(type="str"),
            bundle=dict(type="str"),
            bundle_content=dict(type="raw"),
            status=dict(type="str", choices=["good", "failed"]),
            state_root=dict(type="str", default=STATE_ROOT),
            config_root=dict(type="str", default=CONFIG_ROOT),
        ),
        supports_check_mode=True,
    )
    p = module.params
    check_deployment(module, p["deployment"])
    state = read_state(p["deployment"], p["state_root"])
    if module.check_mode:
        module.exit_json(changed=True, state=state)
    try:
        result = ACTIONS[p["action"]](p, state or empty_state(p["deployment"]))
    except ValueError as err:  # a bundle that is not JSON, or names a file outside the revision
        result = {"failed": True, "msg": f"bad bundle: {err}"}
    # The result echoes the arguments; the bundle's texts are not sent back to the controller again.
    shown = {**p, "bundle_content": None if p["bundle_content"] is None else "(bundle)"}
    if result.pop("failed", False):
        module.fail_json(invocation={"module_args": shown}, **result)
    module.exit_json(invocation={"module_args": shown}, **result)


if __name__ == "__main__":
    main()
