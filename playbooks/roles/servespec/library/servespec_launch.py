#!/usr/bin/python
# servespec: send a platform's launch request (XInference POST /v1/models) once its server is healthy.

from __future__ import annotations

DOCUMENTATION = r"""
module: servespec_launch
short_description: Start the model of a platform whose server starts empty (XInference)
description:
  - Waits until the server's health endpoint (container.json C(healthcheck)) answers 200, then
    sends the revision's rendered C(launch.json) as the body of C(POST /v1/models)
    (XInference restful_api.py C(launch_model); C(xinference launch) sends the same).
  - Idempotent: when C(GET /v1/models) already lists the request's C(model_uid) and the request is the
    one last launched into this very container (its sha256 and the container id, kept in the
    revision's C(.servespec/launched.json)), nothing is sent. A model listed under that uid from
    another request is terminated (C(DELETE /v1/models/UID)) and launched again.
  - The request is read as JSON data and sent as it is: nothing in it is evaluated.
options:
  deployment: {description: Deployment name, required: true, type: str}
  number: {description: Revision whose launch.json is sent, required: true, type: int}
  timeout: {description: Seconds to wait for health and the launch (default the container's start_period_s), type: int}
  state_root: {description: Root of the state folders, type: str, default: /var/lib/servespec}
author: servespec
"""

import hashlib
import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.servespec_common import STATE_ROOT, base_url, check_deployment, load_container, revision_dir

REQUEST_FILE = "launch.json"


def _call(url, method="GET", body=None, timeout=10.0):
    """(status, parsed JSON or None) of one request; status 0 when nothing answered."""
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            text = response.read().decode("utf-8", "replace")
            status = response.status
    except urllib.error.HTTPError as err:
        text, status = err.read().decode("utf-8", "replace"), err.code
    except (urllib.error.URLError, OSError):
        return 0, None
    try:
        return status, json.loads(text)
    except ValueError:
        return status, text[:300]


def _wait_healthy(spec, deadline):
    url = base_url(spec) + spec["healthcheck"]["path"]
    last = "no answer"
    while time.monotonic() < deadline:
        status, _ = _call(url, timeout=spec["healthcheck"]["timeout_s"])
        if status == 200:
            return True, url
        last = f"HTTP {status}" if status else "no answer"
        time.sleep(1)
    return False, f"{url} not healthy ({last})"


def _listed(spec):
    status, answer = _call(base_url(spec) + "/v1/models", timeout=spec["healthcheck"]["timeout_s"])
    entries = answer.get("data") if status == 200 and isinstance(answer, dict) else None
    if isinstance(entries, dict):  # XInference before the OpenAI-style list answered {uid: info}
        return set(entries)
    return {e.get("id") for e in entries or [] if isinstance(e, dict)}


def _container_id(name):
    try:
        import docker

        return docker.from_env().containers.get(name).id
    except Exception:
        return None


def _request(module, folder):
    """The rendered launch request, as JSON data (never evaluated)."""
    try:
        with open(os.path.join(folder, REQUEST_FILE), "rb") as handle:
            body = json.loads(handle.read())
    except (OSError, ValueError) as err:
        module.fail_json(msg=f"cannot read {REQUEST_FILE}: {err}")
    if not isinstance(body, dict) or not isinstance(body.get("model_uid"), str) or not body["model_uid"]:
        module.fail_json(msg=f"{REQUEST_FILE} names no model_uid")
    return body


def _launch(module, spec, body, listed, deadline):
    """Terminate a model listed under the uid from another request, send the launch, wait until it is listed."""
    uid = body["model_uid"]
    if listed:
        _call(base_url(spec) + "/v1/models/" + urllib.parse.quote(uid, safe=""), method="DELETE", timeout=60)
    remaining = max(deadline - time.monotonic(), 30.0)
    status, answer = _call(base_url(spec) + "/v1/models", method="POST", body=body, timeout=remaining)
    if status != 200:
        detail = answer.get("detail") if isinstance(answer, dict) else answer
        module.fail_json(msg=f"launch request for {uid} answered HTTP {status or 'nothing'}: {str(detail)[:300]}")
    while uid not in _listed(spec):
        if time.monotonic() > deadline:
            module.fail_json(msg=f"model {uid} launched but not listed by /v1/models")
        time.sleep(1)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            deployment=dict(type="str", required=True),
            number=dict(type="int", required=True),
            timeout=dict(type="int"),
            state_root=dict(type="str", default=STATE_ROOT),
        ),
        supports_check_mode=True,
    )
    p = module.params
    check_deployment(module, p["deployment"])
    folder = revision_dir(p["deployment"], p["number"], p["state_root"])
    spec = load_container(p["deployment"], p["number"], p["state_root"])
    if REQUEST_FILE not in spec.get("files", []):
        module.exit_json(changed=False, msg="no launch request in this revision")
    body = _request(module, folder)
    uid = body["model_uid"]
    digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
    record_path = os.path.join(folder, ".servespec", "launched.json")
    container = _container_id(spec["name"])
    deadline = time.monotonic() + (p["timeout"] or spec["healthcheck"]["start_period_s"])
    healthy, where = _wait_healthy(spec, deadline)
    if not healthy:
        module.fail_json(msg=f"server not healthy before the launch: {where}")
    try:
        with open(record_path) as handle:
            record = json.load(handle)
    except (OSError, ValueError):
        record = {}
    listed = _listed(spec)
    same = record.get("sha256") == digest and record.get("container") == container
    if uid in listed and same:
        module.exit_json(changed=False, model_uid=uid, msg=f"model {uid} already launched with this request")
    if module.check_mode:
        module.exit_json(changed=True, model_uid=uid)
    _launch(module, spec, body, uid in listed, deadline)
    tmp = record_path + ".tmp"
    with open(tmp, "w") as handle:
        json.dump({"sha256": digest, "container": container, "model_uid": uid}, handle)
    os.replace(tmp, record_path)
    module.exit_json(changed=True, model_uid=uid, msg=f"launched {uid}")


if __name__ == "__main__":
    main()
