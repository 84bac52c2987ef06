"""ROL rules: rollouts keep serving and wait long enough."""

from __future__ import annotations

import math
from collections.abc import Iterator

from servespec.findings import Finding, Severity
from servespec.knowledge import resolve
from servespec.knowledge.memory import GIB, weight_bytes
from servespec.rules.base import Rule
from servespec.spec.fleet import DeploymentDoc, Fleet
from servespec.spec.models import duration_seconds

LOAD_GIB_PER_SECOND = 1.0
"""Assumed read rate of weights from a host's local model cache (a conservative NVMe/SATA figure)."""
_ANSIBLE_SERIAL = "https://docs.ansible.com/ansible/latest/playbook_guide/playbooks_strategies.html#setting-the-batch-size-with-serial"


def replica_count(deployment: DeploymentDoc) -> int:
    """Replicas the deployment runs (hosts divided by hosts per replica)."""
    hosts = len(resolve.placed_hosts(deployment))
    return max(1, hosts // deployment.spec.placement.hosts_per_replica)


def unavailable(deployment: DeploymentDoc, replicas: int) -> int:
    """Replicas taken down at once by ``rollout.max_unavailable``."""
    value = deployment.spec.rollout.max_unavailable
    if isinstance(value, str):
        return max(1, math.floor(replicas * int(value.rstrip("%")) / 100))
    return value


class AllHostsDownAtOnce(Rule):
    """A rolling update should keep some replicas serving.

    ``rollout.max_unavailable`` sets how many replicas are updated at once (Ansible's
    ``serial``). When it covers every replica of a multi-replica deployment, the update is
    an outage; ``strategy: recreate`` says so explicitly when that is intended.

    Fix: lower ``max_unavailable`` below the replica count, or use ``strategy: recreate``.

    Source: Ansible, setting the batch size with serial:
    https://docs.ansible.com/ansible/latest/playbook_guide/playbooks_strategies.html#setting-the-batch-size-with-serial
    """

    id = "ROL001"
    name = "rollout.all-at-once"
    severity = Severity.WARNING
    summary = "max_unavailable takes every host down at once"
    sources = (_ANSIBLE_SERIAL,)

    def check(self, fleet: Fleet) -> Iterator[Finding]:
        for deployment in fleet.deployments:
            if deployment.spec.rollout.strategy != "rolling":
                continue
            replicas = replica_count(deployment)
            if replicas > 1 and unavailable(deployment, replicas) >= replicas:
                yield self.report(
                    deployment.document,
                    f"max_unavailable takes all {replicas} replicas down at once",
                    ("rollout", "max_unavailable"),
                    hint=f"use max_unavailable ≤ {replicas - 1}, or strategy: recreate",
                )


class HealthTimeoutTooShort(Rule):
    """``rollout.health_timeout`` must cover the model's load time, or healthy hosts get rolled back.

    The estimate reads the weights each GPU loads at 1 GiB/s from the host's model cache
    (a conservative figure for local SSDs) and adds the engine's fixed start-up work
    (CUDA-graph capture and compilation: 2 minutes for vLLM/SGLang, 3 for TensorRT-LLM,
    1.5 for TGI, 15 s for llama.cpp/Ollama). It excludes the first download of weights.
    Both figures are assumptions, not measurements: raise the timeout if your storage is
    slower.

    Fix: raise ``rollout.health_timeout`` to at least the estimate.

    Source: servespec's load-time estimate (this rule); vLLM start-up steps:
    https://github.com/vllm-project/vllm/blob/v0.11.0/vllm/v1/engine/core.py
    """

    id = "ROL002"
    name = "rollout.health-timeout"
    severity = Severity.WARNING
    summary = "health_timeout shorter than the estimated model load time"
    sources = ("https://github.com/vllm-project/vllm/blob/v0.11.0/vllm/v1/engine/core.py",)

    def check(self, fleet: Fleet) -> Iterator[Finding]:
        for deployment in fleet.deployments:
            known = resolve.resolved(deployment)
            inp = known.estimate_input(weights_only=True)
            if inp is None:
                continue
            spec = deployment.spec
            per_host = weight_bytes(inp) / GIB / spec.placement.hosts_per_replica
            needed = per_host / LOAD_GIB_PER_SECOND + known.profile.startup.seconds
            timeout = duration_seconds(spec.rollout.health_timeout)
            if timeout < needed:
                yield self.report(
                    deployment.document,
                    f"health_timeout {spec.rollout.health_timeout} is shorter than the estimated load time "
                    f"of {math.ceil(needed)} s ({per_host:.0f} GiB of weights per host)",
                    ("rollout", "health_timeout"),
                    hint=f"set health_timeout ≥ {math.ceil(needed / 60)}m",
                )
