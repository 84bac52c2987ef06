"""``rollout.strategy: auto`` on the controller: each host's need and capacity, and the role's proxy variables.

The decision itself is pure (:func:`servespec.plan.strategy.decide`): this module gives it the
inputs, the new revision's :class:`~servespec.plan.strategy.Need` from the specs (resolved
``gpu_ids`` and ``deploy estimate``'s plan) and the host's
:class:`~servespec.plan.strategy.HostCapacity` from the status run (``servespec_capacity``), and
turns the chosen path into the role's variables (``servespec_rollout_path``, ``servespec_proxy_*``,
``servespec_gpu_wait``).

The front proxy (HAProxy, ``servespec_proxy``) owns ``serving.bind:serving.port``; the engine
container publishes on ``127.0.0.1`` at one of two internal slot ports (:func:`slot_ports`), the
one the running revision does not use, so a new revision can start beside the old one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from servespec.knowledge import resolve
from servespec.plan.strategy import HostCapacity, Need, Strategy, checked_capacity
from servespec.rollout.errors import RolloutError
from servespec.rollout.runner import HostResult, Report
from servespec.spec.fleet import DeploymentDoc, HostView
from servespec.spec.front_proxy import DEFAULT_PROXY_IMAGE, slot_ports
from servespec.spec.paths import PathRefusedError, default_root, resolve_inside

GIB_MIB = 1024


def auto(deployment: DeploymentDoc) -> bool:
    """Whether the deployment rolls out with ``rollout.strategy: auto`` (False for a stand-in without a spec)."""
    spec = getattr(deployment, "spec", None)
    return spec is not None and spec.rollout.strategy == "auto"


def need_on(known: resolve.Resolved, host: HostView) -> Need:
    """What the new revision allocates on ``host``: its GPUs and MiB per GPU, or host MiB on a CPU-only host."""
    multi_node = known.deployment.spec.placement.hosts_per_replica > 1
    plan = known.estimate_on(host)
    mib = round((plan.weights_gib + plan.overhead_gib + plan.kv_cache_gib) * GIB_MIB) if plan is not None else None
    replicas: tuple[tuple[int, ...], ...] = ()
    on_gpus = bool(resolve.host_gpus(host).count)
    if known.replicas_per_host > 1:  # placement.replicas_per_host: the estimate is one replica's
        replicas = tuple(tuple(ids) if on_gpus else () for ids in known.replica_gpu_ids)
    if on_gpus:
        return Need(tuple(known.gpu_ids), mib, None, multi_node, replicas)
    return Need((), None, mib, multi_node, replicas)


def capacity_of(result: HostResult | None, deployment: str) -> HostCapacity | None:
    """The host's checked capacity report for ``deployment`` (None when it sent none or one that fails the checks)."""
    report = result.reports.get(Report.CAPACITY) if result is not None else None
    if not isinstance(report, dict):
        return None
    proxies = report.get("proxies")
    running = proxies.get(deployment) if isinstance(proxies, dict) else None
    if not isinstance(running, bool):
        return None
    return checked_capacity({**{k: report.get(k) for k in ("gpus", "mem_available_mib")}, "proxy": running})


def proxy_archive(deployment: DeploymentDoc) -> Path | None:
    """The real path of ``rollout.proxy_image_archive`` inside the spec's checkout (None: pull the image)."""
    written, document = deployment.spec.rollout.proxy_image_archive, deployment.document
    if not written:
        return None
    try:
        return resolve_inside(written, document.path.parent, document.root or default_root(document.path))
    except PathRefusedError as refused:
        raise RolloutError(
            f"rollout.proxy_image_archive {written!r} {refused.reason}; put the archive inside the checkout"
            " (or pass --root DIR) and name it relative to the spec"
        ) from None


def proxy_vars(deployment: DeploymentDoc, strategy: Strategy | None) -> dict[str, Any]:
    """The HostVars fields of one host's path (empty: not ``auto``, the classic stop-then-start)."""
    if strategy is None:
        return {}
    out: dict[str, Any] = {"rollout_path": strategy.path}
    if strategy.wait_gpus:
        out |= {"gpu_wait": strategy.wait_gpus, "gpu_need_mib": strategy.need_mib}
    if not strategy.proxied:
        return out
    serving, rollout = deployment.spec.serving, deployment.spec.rollout
    archive = proxy_archive(deployment)
    return out | {
        "proxy_image": rollout.proxy_image or DEFAULT_PROXY_IMAGE,
        "proxy_image_archive": str(archive) if archive else "",
        "proxy_bind": serving.bind,
        "proxy_port": serving.port,
        "proxy_ports": slot_ports(serving.port),
        **replica_vars(deployment),
    }


def replica_vars(deployment: DeploymentDoc) -> dict[str, Any]:
    """``placement.replicas_per_host`` for the role: the replica count and the path each replica is checked at."""
    count = deployment.spec.placement.replicas_per_host
    if count < 2:
        return {}
    return {"proxy_replicas": count, "proxy_health_path": resolve.resolved(deployment).profile.health_path}


def rollback_strategy(deployment: DeploymentDoc) -> Strategy | None:
    """A rollback of an ``auto`` deployment: in place behind the proxy (the old revision's memory is free then)."""
    if not auto(deployment):
        return None
    multi_node = deployment.spec.placement.hosts_per_replica > 1
    return Strategy("in_place", "rollback", proxied=not multi_node)
