#!/usr/bin/python
# servespec: wait for the engine's health endpoint, then send one real completion request.

from __future__ import annotations

DOCUMENTATION = r"""
module: servespec_probe
short_description: Health check and smoke test of a servespec deployment on a host
description:
  - Polls the engine's own health endpoint (from container.json) until it answers 200 or
    the deployment's health timeout passes; fails early when the container exits.
  - With I(smoke_test), then sends one /v1/completions request and requires generated text. It names
    serving.model_name (container.json C(model_name)) where the spec gives one, else the first model
    the engine lists in /v1/models: never a name the engine was not told. Then one request per LoRA
    adapter the engine serves by name (container.json C(smoke_adapters)), naming the adapter.
options:
  deployment: {description: Deployment name, required: true, type: str}
  number: {description: Revision being checked, required: true, type: int}
  smoke_test: {description: Send a completion after health passes, type: bool, default: true}
  timeout: {description: Seconds to wait; default is the container's start_period_s, type: int}
  replica: {description: "One of placement.replicas_per_host's replicas: probe its own slot port", type: int}
  state_root: {description: Root of the state folders, type: str, default: /var/lib/servespec}
author: servespec
"""

import json
import time
import urllib.error
import urllib.request

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.servespec_common import (
    STATE_ROOT,
    api_key,
    base_url,
    check_deployment,
    headers,
    listed_models,
    load_container,
    served_model,
)


def _running(name):
    """False once the container has exited or crashed and restarted (it will not become healthy)."""
    try:
        from ansible.module_utils.servespec_docker import container

        attrs = container(name)
    except Exception:  # engine unreachable: rely on the timeout
        return True
    if attrs is None:  # gone (as the SDK's NotFound was): rely on the timeout
        return True
    return attrs["State"]["Status"] in ("running", "created") and not attrs.get("RestartCount")


def _wait_healthy(spec, timeout):
    url = base_url(spec) + spec["healthcheck"]["path"]
    deadline = time.monotonic() + timeout
    last = "no answer"
    while time.monotonic() < deadline:
        if not _running(spec["name"]):
            return False, f"container {spec['name']} exited (or restarted) before it became healthy"
        try:
            with urllib.request.urlopen(url, timeout=spec["healthcheck"]["timeout_s"]) as response:
                if response.status == 200:
                    return True, url
                last = f"HTTP {response.status}"
        except (urllib.error.URLError, OSError) as err:
            last = str(err)
        time.sleep(1)
    return False, f"{url} not healthy after {timeout} s ({last})"


def _smoke(spec, key, model=None):
    listed = None
    if model is None:
        model, listed = served_model(spec, key)
    body = {"prompt": "Hello", "max_tokens": 4, "temperature": 0, **({"model": model} if model else {})}
    request = urllib.request.Request(
        base_url(spec) + "/v1/completions", data=json.dumps(body).encode(), headers=headers(key)
    )
    named = f" for model {model!r}" if model else ""
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            answer = json.loads(response.read().decode())
    except (urllib.error.URLError, OSError, ValueError) as err:
        served = f"; /v1/models lists {listed_models(spec, key)!r}" if listed is None else ""
        return False, f"completion request{named} failed: {err}{served}"
    choices = answer.get("choices") or [] if isinstance(answer, dict) else []
    if not choices or not isinstance(choices[0], dict) or "text" not in choices[0]:
        return False, f"completion{named} answered without text: {str(answer)[:200]}"
    return True, choices[0]["text"]


def _smoke_adapters(spec, key):
    """One completion per adapter the engine serves by name (container.json C(smoke_adapters), model.adapters):
    (True, {name: text}) or (False, why)."""
    answers = {}
    for name in spec.get("smoke_adapters") or []:
        ok, answer = _smoke(spec, key, name)
        if not ok:
            return False, f"adapter {name!r}: {answer}"
        answers[name] = answer
    return True, answers


def main():
    module = AnsibleModule(
        argument_spec=dict(
            deployment=dict(type="str", required=True),
            number=dict(type="int", required=True),
            smoke_test=dict(type="bool", default=True),
            timeout=dict(type="int"),
            replica=dict(type="int"),
            state_root=dict(type="str", default=STATE_ROOT),
        ),
        supports_check_mode=True,
    )
    p = module.params
    check_deployment(module, p["deployment"])
    if module.check_mode:
        module.exit_json(changed=False)
    spec = load_container(p["deployment"], p["number"], p["state_root"], p["replica"])
    timeout = p["timeout"] or spec["healthcheck"]["start_period_s"]
    healthy, detail = _wait_healthy(spec, timeout)
    if not healthy:
        module.fail_json(msg=detail, stage="health")
    if p["smoke_test"] and spec["smoke_test"]:
        ok, text = _smoke(spec, api_key(spec))
        if not ok:
            module.fail_json(msg=text, stage="smoke")
        ok, adapters = _smoke_adapters(spec, api_key(spec))
        if not ok:
            module.fail_json(msg=adapters, stage="smoke")
        module.exit_json(changed=False, health=detail, completion=text, adapters=adapters)
    module.exit_json(changed=False, health=detail)


if __name__ == "__main__":
    main()
