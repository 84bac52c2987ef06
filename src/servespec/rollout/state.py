"""What the hosts run: their checked status reports, the observed state the planner reads, report rows.

Host reports are type-checked (:mod:`servespec.rollout.reported`) before any of their
values is reused; a report that fails the checks becomes that host's error.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass, field, replace
from typing import Any

import servespec.rollout.inventory as inventory
from servespec.engines.kit import host_and_port
from servespec.knowledge import resolve
from servespec.plan import Action, Desired, Observed, plan
from servespec.render import Rendered
from servespec.rollout.reported import RUN_ID, checked_report
from servespec.rollout.runner import EventHandler, HostResult, Report
from servespec.spec.fleet import DeploymentDoc, Fleet


@dataclass
class HostOutcome:
    """One row of the apply report."""

    deployment: str
    host: str
    action: str
    old: int | None
    new: int | None
    result: str
    error: str = ""
    logs: list[str] = field(default_factory=list)


@dataclass
class Status:
    """One row of ``deploy status``."""

    deployment: str
    host: str
    revision: int | None
    healthy: bool
    endpoint: str
    since: str | None
    container: str | None
    reachable: bool = True
    error: str = ""
    replicas: list[dict[str, Any]] = field(default_factory=list)
    """placement.replicas_per_host: each replica's index, container, status, revision label, port and health."""

    def to_json(self) -> dict[str, Any]:
        """The contract's status object (§2.2); ``replicas`` added where the host runs several."""
        out: dict[str, Any] = {
            "deployment": self.deployment,
            "host": self.host,
            "revision": self.revision,
            "healthy": self.healthy,
            "endpoint": self.endpoint,
            "since": self.since,
        }
        if self.replicas:
            out["replicas"] = [dict(replica) for replica in self.replicas]
        return out


def desired_state(rendered: Rendered, deployment: DeploymentDoc) -> list[Desired]:
    """What the specs render for each host of one deployment (deployment-level files excluded)."""
    import servespec.rollout.surge as surge

    out = []
    known = resolve.resolved(deployment) if surge.auto(deployment) else None
    views = {view.name: view for view in known.hosts} if known is not None else {}
    for (name, host), container in rendered.containers.items():
        if name != deployment.name:
            continue
        # rollout.strategy auto: the plan decides surge or in place per host from what the revision needs.
        need = surge.need_on(known, views[host]) if known is not None and host in views else None
        strategy = deployment.spec.rollout.strategy
        files = rendered.host_files(name, host)
        verify = slo_words(deployment) if container.role == "leader" else ""
        out.append(Desired(name, host, container.revision, files, None, strategy, need, verify))
    return out


def slo_words(deployment: DeploymentDoc) -> str:
    """The spec's slo as ``deploy plan`` says it ('' when there is none)."""
    slo = deployment.spec.slo
    if slo is None:
        return ""
    load = slo.workload
    pace = f"concurrency {load.concurrency}" if load.concurrency else f"{load.rate} requests/s"
    what = "the dataset's prompts" if load.dataset else f"{load.prompt_tokens}+{load.output_tokens} tokens"
    targets = ", ".join(f"{k} {v}" for k, v in slo.targets.model_dump(exclude_none=True).items())
    return f"{load.requests} requests of {what} at {pace}, at most {load.max_seconds:g} s; targets {targets}"


def host_report(results: dict[str, HostResult], host: str, deployment: str) -> dict[str, Any]:
    """What the status playbook reported for one deployment on one host, type-checked ({} when nothing).

    :func:`gather` has already replaced a report that failed the checks by an empty one.
    """
    result = results.get(host)
    if result is None:
        return {}
    report = result.reports.get(Report.STATUS, {}).get("deployments", {})
    found = report.get(deployment) if isinstance(report, dict) else None
    return dict(found) if isinstance(found, dict) else {}


def _check_reports(results: dict[str, HostResult], deployment: str) -> None:
    """Replace each host's report by its checked copy; a report that fails makes that host's error."""
    for name, result in results.items():
        checked, problem = checked_report(host_report(results, name, deployment))
        result.reports[Report.STATUS] = {"kind": Report.STATUS, "deployments": {deployment: checked}}
        if problem and result.ok:
            result.ok = False
            result.stage = "status"
            result.error = f"{problem}; nothing was done on this host"


def _observed(deployment: str, host: str, report: dict[str, Any]) -> Observed:
    state = report.get("state") or {}
    current = state.get("current")
    entry: dict[str, Any] = next((r for r in state.get("revisions", []) if r["number"] == current), {})
    container = report.get("container") or {}
    return Observed(
        deployment=deployment,
        host=host,
        current=current,
        good=state.get("good"),
        digest=str(entry.get("digest", ""))[:12] or None,
        status=entry.get("status"),
        files=dict(report.get("files") or {}),
        healthy=bool(report.get("healthy")),
        container=container.get("status"),
    )


def gather(
    deployment: DeploymentDoc, *, on_event: EventHandler | None = None
) -> tuple[list[Observed], dict[str, HostResult]]:
    """Read every placed host's state of ``deployment``."""
    import servespec.rollout.surge as surge

    # rollout.strategy auto: each host also reports its free GPU and host memory (servespec_capacity).
    asked: dict[str, Any] = {"servespec_capacity": True} if surge.auto(deployment) else {}
    hosts = {
        view.name: (view, {"servespec_deployments": [deployment.name], **asked})
        for view in resolve.resolved(deployment).hosts
    }
    if not hosts:
        return [], {}
    result = inventory.run_on("status.yml", hosts, {}, on_event)
    _check_reports(result.hosts, deployment.name)
    observed = [_observed(deployment.name, name, host_report(result.hosts, name, deployment.name)) for name in hosts]
    if asked:
        observed = [replace(o, capacity=surge.capacity_of(result.hosts.get(o.host), deployment.name)) for o in observed]
    return observed, result.hosts


def status(fleet: Fleet) -> list[Status]:
    """What every host runs for every deployment of the fleet."""
    rows = []
    for deployment in fleet.deployments:
        observed, results = gather(deployment)
        port = deployment.spec.serving.port
        for seen in observed:
            view = deployment.inventory.hosts[seen.host] if deployment.inventory else None
            result = results.get(seen.host)
            report = host_report(results, seen.host, deployment.name)
            container = report.get("container") or {}
            rows.append(
                Status(
                    deployment=deployment.name,
                    host=seen.host,
                    revision=seen.current,
                    healthy=seen.healthy,
                    endpoint=f"http://{host_and_port(view.address if view else seen.host, port)}",
                    since=container.get("started_at"),
                    container=seen.container,
                    reachable=not (result is not None and result.unreachable),
                    error=result.error if result and not result.ok else "",
                    replicas=list(report.get("replicas") or []),
                )
            )
    return rows


def stale_lock(lock: dict[str, Any] | None) -> str:
    """The run id of a lock this controller left behind in a process that no longer runs."""
    if not lock or lock.get("controller") != socket.gethostname():
        return ""
    run_id, pid = lock.get("run_id"), lock.get("pid")
    # The run id goes back to the host as a variable: only the 12-hex ids servespec makes.
    if not isinstance(run_id, str) or not RUN_ID.match(run_id) or isinstance(pid, bool) or not isinstance(pid, int):
        return ""
    try:
        os.kill(pid, 0)
    except (OSError, OverflowError):
        return run_id
    return ""


def plan_reachable(
    deployment: DeploymentDoc, rendered: Rendered, observed: list[Observed], results: dict[str, HostResult]
) -> tuple[list[Action], set[str]]:
    """The plan for the hosts that answered with a usable report, and the names of the others."""
    unusable = {name for name, result in results.items() if not result.ok}
    wanted = [d for d in desired_state(rendered, deployment) if d.host not in unusable]
    return plan(wanted, [o for o in observed if o.host not in unusable]), unusable


def unread(
    deployment: DeploymentDoc, names: set[str], results: dict[str, HostResult], action: str = "unknown"
) -> list[HostOutcome]:
    """One row per host whose state could not be read (unreachable, or a report that failed its checks)."""
    return [
        HostOutcome(
            deployment.name,
            name,
            action,
            None,
            None,
            "unreachable" if results[name].unreachable else "failed",
            results[name].error,
        )
        for name in sorted(names)
    ]


def previous_good(state: dict[str, Any]) -> int | None:
    """The newest good revision of a host's ``state.json`` other than its current one."""
    current = state.get("current")
    good = [r["number"] for r in state.get("revisions", []) if r.get("status") == "good" and r.get("number") != current]
    return max(good) if good else None
