#!/usr/bin/python
# servespec: benchmark the engine of a revision against the deployment's slo, on the host beside it.

from __future__ import annotations

DOCUMENTATION = r"""
module: servespec_bench
short_description: Benchmark a servespec deployment's engine on its host against slo.targets
description:
  - Sends slo.workload to the revision's engine (container.json's health port, the model the smoke test
    names) from the host itself, so the figures hold no network latency between controller and host.
  - Returns the figures and one check per target under servespec_result (kind slo_verified).
  - With I(fail_on_miss), a missed target fails the task (apply --verify: the role's rescue restores the
    last good revision, as for a failed health check).
  - A worker of a multi-node replica serves no requests: it is skipped.
options:
  deployment: {description: Deployment name, required: true, type: str}
  number: {description: Revision to benchmark; default the active one, type: int}
  slo:
    description: "The spec's slo: workload, targets, and the dataset's prompts ({prompt, output_tokens}) if any"
    required: true
    type: dict
  fail_on_miss: {description: Fail when a target is missed, type: bool, default: false}
  state_root: {description: Root of the state folders, type: str, default: /var/lib/servespec}
author: servespec
"""

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.servespec_bench import evaluate, missed, run
from ansible.module_utils.servespec_common import (
    STATE_ROOT,
    VERIFIED,
    api_key,
    base_url,
    check_deployment,
    headers,
    load_container,
    read_state,
    served_model,
    servespec_result,
)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            deployment=dict(type="str", required=True),
            number=dict(type="int"),
            slo=dict(type="dict", required=True),
            fail_on_miss=dict(type="bool", default=False),
            state_root=dict(type="str", default=STATE_ROOT),
        ),
        supports_check_mode=True,
    )
    p = module.params
    check_deployment(module, p["deployment"])
    if module.check_mode:
        module.exit_json(changed=False)
    number = p["number"]
    if number is None:
        number = (read_state(p["deployment"], p["state_root"]) or {}).get("current")
    if not isinstance(number, int) or isinstance(number, bool):
        module.fail_json(msg=f"deployment {p['deployment']} is not deployed on this host", stage="verify")
    spec = load_container(p["deployment"], number, p["state_root"])
    if spec.get("role", "leader") != "leader":
        module.exit_json(changed=False, **servespec_result(VERIFIED, number=number, skipped="worker of a replica"))
    key = api_key(spec)
    model, _ = served_model(spec, key)
    url = base_url(spec) + "/v1/completions"
    figures = run(url, headers(key), model, p["slo"]["workload"], p["slo"].get("prompts"))
    checks = evaluate(figures, p["slo"]["targets"])
    miss = missed(checks)
    result = servespec_result(VERIFIED, number=number, model=model, figures=figures, checks=checks)
    if miss and p["fail_on_miss"]:
        module.fail_json(msg=f"slo missed: {miss}", stage="verify", **result)
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
