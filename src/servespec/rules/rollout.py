"""ROL rules: rollouts keep serving and wait long enough."""

from __future__ import annotations

import math
from collections.abc import Iterator

from servespec.findings import Finding, Severity
from servespec.knowledge import resolve
from servespec.rules.base import Rule
from servespec.spec.fleet import DeploymentDoc, Fleet
from servespec.spec.front_proxy import DEFAULT_PROXY_IMAGE
from servespec.spec.models import duration_seconds

_ANSIBLE_SERIAL = "https://docs.ansible.com/ansible/latest/playbook_guide/playbooks_strategies.html#setting-the-batch-size-with-serial"


def replica_count(deployment: DeploymentDoc) -> int:
    """Replicas the deployment runs (hosts divided by hosts per replica)."""
    hosts = len(resolve.resolved(deployment).hosts)
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
            if deployment.spec.rollout.strategy not in ("rolling", "auto"):  # auto: in-place hosts go by batch
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

    The estimate reads the weights each host loads at 1 GiB/s from the host's model cache
    (a conservative figure for local SSDs) and adds the engine's fixed start-up work
    (CUDA-graph capture and compilation: 2 minutes for vLLM/SGLang, 3 for TensorRT-LLM,
    1.5 for TGI, 15 s for llama.cpp/Ollama). It excludes the first download of weights.
    Both figures are assumptions, not measurements: raise the timeout if your storage is
    slower.

    Only a ``health_timeout`` the spec sets is reported. Unset, servespec's default (15m) is
    raised to the estimate, rounded up to the minute, for a model that loads slower than
    that (the rendered health check's start period and the rollout's wait use it), so the
    default never warns.

    Fix: raise ``rollout.health_timeout`` to at least the estimate, or unset it.

    Source: servespec's load-time estimate (this rule); vLLM start-up steps:
    https://github.com/vllm-project/vllm/blob/v0.11.0/vllm/v1/engine/core.py
    """

    id = "ROL002"
    name = "rollout.health-timeout"
    severity = Severity.WARNING
    summary = "health_timeout set shorter than the estimated model load time"
    sources = ("https://github.com/vllm-project/vllm/blob/v0.11.0/vllm/v1/engine/core.py",)

    def check(self, fleet: Fleet) -> Iterator[Finding]:
        for deployment in fleet.deployments:
            rollout = deployment.spec.rollout
            if "health_timeout" not in rollout.model_fields_set:
                continue  # the default follows the estimate (Resolved.health_timeout_s)
            known = resolve.resolved(deployment)
            needed = known.load_seconds
            if needed is None or duration_seconds(rollout.health_timeout) >= needed:
                continue
            per_host = (needed - known.profile.startup.seconds) * resolve.LOAD_GIB_PER_SECOND
            yield self.report(
                deployment.document,
                f"health_timeout {rollout.health_timeout} is shorter than the estimated load time "
                f"of {math.ceil(needed)} s ({per_host:.0f} GiB of weights per host)",
                ("rollout", "health_timeout"),
                hint=f"set health_timeout ≥ {math.ceil(needed / 60)}m, or unset it (the default follows the estimate)",
            )


class ProxyImageNotAtHand(Rule):
    """``rollout.strategy: auto`` needs its front proxy's image on every host.

    With ``auto`` each host runs a front proxy (HAProxy, ``rollout.proxy_image``, default
    ``haproxy:2.6``) that owns ``serving.port``. A deployment whose engine comes from a
    ``docker save`` archive (``engine.image_archive``) is one whose hosts load images instead of
    pulling them, typically because they reach no registry: without ``rollout.proxy_image_archive``
    the first ``auto`` apply fails on each host when it pulls the proxy image (after the weights
    were staged, before anything stopped).

    Fix: set ``rollout.proxy_image_archive`` to a ``docker save`` archive of the proxy image
    (inside the checkout, like the engine's), or keep ``strategy: rolling``.

    Source: Docker, docker image load (images from a tar archive, no registry):
    https://docs.docker.com/reference/cli/docker/image/load/ ; HAProxy's official image:
    https://hub.docker.com/_/haproxy
    """

    id = "ROL003"
    name = "rollout.proxy-image"
    severity = Severity.WARNING
    summary = "strategy auto on hosts that load the engine from an archive, without an archive of the proxy image"
    sources = ("https://docs.docker.com/reference/cli/docker/image/load/", "https://hub.docker.com/_/haproxy")

    def check(self, fleet: Fleet) -> Iterator[Finding]:
        for deployment in fleet.deployments:
            spec = deployment.spec
            if spec.rollout.strategy != "auto" or not spec.engine.image_archive or spec.rollout.proxy_image_archive:
                continue
            if spec.placement.hosts_per_replica > 1:
                continue  # a multi-node replica runs no proxy
            image = spec.rollout.proxy_image or DEFAULT_PROXY_IMAGE
            yield self.report(
                deployment.document,
                f"strategy auto runs the front proxy {image} on every host, but the engine is loaded from "
                "engine.image_archive: hosts without a registry cannot pull the proxy",
                ("rollout", "strategy"),
                hint="set rollout.proxy_image_archive to a docker save archive of the proxy image, "
                "or use strategy rolling",
            )
