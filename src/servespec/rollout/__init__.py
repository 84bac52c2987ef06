"""Roll rendered deployments out to hosts with Ansible: status, plan, apply, rollback, destroy.

The controller renders, reads every host's state (``status.yml``), computes the plan
(:func:`servespec.plan.plan`, a pure function), then executes exactly that plan with
``apply.yml`` in batches of ``rollout.max_unavailable`` replicas. Secrets are resolved here,
on the controller, only while applying; they reach hosts in a mode-0600 env file copied with
``no_log`` and appear in no plan, event or log.
"""

from __future__ import annotations

import json
import os
import socket
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from servespec.knowledge import resolve
from servespec.plan import Action, Desired, Observed, plan
from servespec.render import Rendered, render_fleet
from servespec.rollout.runner import EventHandler, HostResult, RunResult, run_playbook
from servespec.rules.rollout import replica_count, unavailable
from servespec.spec.fleet import DeploymentDoc, Fleet, HostView, InventoryDoc


class RolloutError(Exception):
    """A problem found on the controller before any host is touched (missing secret, ...)."""


TASK_ALLOCATE = "Allocate a revision folder and unpack the files into it"
TASK_MARK_GOOD = "Mark the revision good"
TASK_COLLECT = "Collect the hardware outputs"
TASK_STATUS = "Read the deployments' state"
"""Names of the role's tasks whose results the controller reads (tests/rollout/test_task_names.py)."""


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

    def to_json(self) -> dict[str, Any]:
        """The contract's status object (§2.2)."""
        return {
            "deployment": self.deployment,
            "host": self.host,
            "revision": self.revision,
            "healthy": self.healthy,
            "endpoint": self.endpoint,
            "since": self.since,
        }


def _host_vars(host: HostView) -> dict[str, Any]:
    defaults = host.inventory.spec.defaults
    spec = host.spec
    if spec.connection == "local":
        import sys

        # Host state lives under /var/lib and /etc: a non-root controller uses sudo on itself.
        return {
            "ansible_connection": "local",
            "ansible_python_interpreter": sys.executable,
            "ansible_become": os.geteuid() != 0,
        }
    out: dict[str, Any] = {
        "ansible_host": host.address,
        "ansible_port": spec.ssh_port or defaults.ssh_port,
        "ansible_python_interpreter": "/usr/bin/python3",
        "ansible_become": defaults.become,
    }
    user = spec.ssh_user or defaults.ssh_user
    if user:
        out["ansible_user"] = user
    if defaults.ssh_key:
        out["ansible_ssh_private_key_file"] = str(Path(defaults.ssh_key).expanduser())
    return out


def inventory_for(hosts: dict[str, tuple[HostView, dict[str, Any]]]) -> dict[str, Any]:
    """An Ansible inventory with the hosts in order, each with its connection and servespec vars."""
    return {
        "all": {
            "children": {
                "servespec_targets": {
                    "hosts": {name: {**_host_vars(view), **extra} for name, (view, extra) in hosts.items()}
                }
            }
        }
    }


def desired_state(rendered: Rendered, deployment: DeploymentDoc) -> list[Desired]:
    """What the specs render for each host of one deployment (deployment-level files excluded)."""
    out = []
    for (name, host), container in rendered.containers.items():
        if name != deployment.name:
            continue
        out.append(Desired(name, host, str(container["revision"]), rendered.host_files(name, host)))
    return out


def host_report(results: dict[str, HostResult], host: str, deployment: str) -> dict[str, Any]:
    """What the status playbook reported for one deployment on one host ({} when nothing)."""
    result = results.get(host)
    if result is None:
        return {}
    report = result.results.get(TASK_STATUS, {}).get("deployments", {})
    return dict(report.get(deployment) or {})


def _observed(deployment: str, host: str, report: dict[str, Any]) -> Observed:
    state = report.get("state") or {}
    current = state.get("current")
    entry: dict[str, Any] = next((r for r in state.get("revisions", []) if r.get("number") == current), {})
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


def _run_on(
    playbook: str,
    hosts: dict[str, tuple[HostView, dict[str, Any]]],
    extravars: dict[str, Any],
    on_event: EventHandler | None,
) -> RunResult:
    """Run ``playbook`` on ``hosts`` (in their order), all of them at once."""
    return run_playbook(playbook, inventory_for(hosts), extravars, on_event=on_event, forks=len(hosts))


def gather(
    deployment: DeploymentDoc, *, on_event: EventHandler | None = None
) -> tuple[list[Observed], dict[str, HostResult]]:
    """Read every placed host's state of ``deployment``."""
    hosts = {
        view.name: (view, {"servespec_deployments": [deployment.name]}) for view in resolve.placed_hosts(deployment)
    }
    if not hosts:
        return [], {}
    result = _run_on("status.yml", hosts, {}, on_event)
    observed = [_observed(deployment.name, name, host_report(result.hosts, name, deployment.name)) for name in hosts]
    return observed, result.hosts


def status(fleet: Fleet) -> list[Status]:
    """What every host runs for every deployment of the fleet."""
    rows = []
    for deployment in fleet.deployments:
        observed, results = gather(deployment)
        for seen in observed:
            view = deployment.inventory.hosts[seen.host] if deployment.inventory else None
            result = results.get(seen.host)
            container = host_report(results, seen.host, deployment.name).get("container") or {}
            rows.append(
                Status(
                    deployment=deployment.name,
                    host=seen.host,
                    revision=seen.current,
                    healthy=seen.healthy,
                    endpoint=f"http://{view.address if view else seen.host}:{deployment.spec.serving.port}",
                    since=container.get("started_at"),
                    container=seen.container,
                    reachable=not (result is not None and result.unreachable),
                    error=result.error if result and not result.ok else "",
                )
            )
    return rows


def resolve_secrets(references: dict[str, dict[str, str]]) -> str:
    """The secrets env file's text, from references resolved on this controller."""
    lines = []
    for name, reference in sorted(references.items()):
        if "from_env" in reference:
            value = os.environ.get(reference["from_env"])
            if value is None:
                raise RolloutError(
                    f"secret {name}: environment variable {reference['from_env']} is not set on this controller"
                )
        else:
            try:
                value = Path(reference["from_file"]).read_text(encoding="utf-8").strip()
            except OSError as err:
                raise RolloutError(f"secret {name}: cannot read {reference['from_file']}: {err.strerror}") from err
        if "\n" in value or "\r" in value:
            raise RolloutError(f"secret {name} spans several lines")
        lines.append(f"{name}={value}")
    return "\n".join(lines) + "\n"


def _stage(rendered: Rendered, deployment: DeploymentDoc, host: str, workdir: Path) -> tuple[Path, Path | None]:
    """One JSON bundle of the host's rendered files (one upload), and its secrets env file."""
    files = rendered.host_files(deployment.name, host)
    container = rendered.containers[(deployment.name, host)]
    files[".servespec/container.json"] = json.dumps(container, indent=2, sort_keys=True)
    folder = workdir / "staging" / deployment.name / f"{host}.json"
    folder.parent.mkdir(parents=True, exist_ok=True)
    folder.write_text(json.dumps(files), encoding="utf-8")
    secrets_file = None
    if container["secret_environment"]:
        secrets_file = workdir / "secrets" / f"{deployment.name}-{host}.env"
        secrets_file.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(secrets_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(resolve_secrets(container["secret_environment"]))
    return folder, secrets_file


def _run_info() -> dict[str, Any]:
    return {"controller": socket.gethostname(), "pid": os.getpid(), "run_id": uuid.uuid4().hex[:12]}


def _stale_lock(lock: dict[str, Any] | None) -> str:
    """The run id of a lock this controller left behind in a process that no longer runs."""
    if not lock or lock.get("controller") != socket.gethostname():
        return ""
    try:
        os.kill(int(lock.get("pid", 0)), 0)
    except (OSError, ValueError):
        return str(lock.get("run_id", ""))
    return ""


@dataclass
class ApplyOptions:
    """How to apply: confirmation, check mode, progress, and the test-only stand-in image."""

    confirm: Callable[[list[Action]], bool] = lambda actions: True
    on_event: EventHandler | None = None
    standin_image: str | None = None
    """Test-only: replaces every engine image and drops GPU requests (see tests/hosts/standin)."""


def _extravars_for(deployment: DeploymentDoc, hosts: list[str]) -> dict[str, Any]:
    replicas = replica_count(deployment)
    group = deployment.spec.placement.hosts_per_replica
    if deployment.spec.rollout.strategy == "recreate":
        return {"servespec_serial": len(hosts)}
    return {"servespec_serial": max(1, min(unavailable(deployment, replicas), replicas)) * group}


def _plan_reachable(
    deployment: DeploymentDoc, rendered: Rendered, observed: list[Observed], results: dict[str, HostResult]
) -> tuple[list[Action], set[str]]:
    """The plan for the hosts that answered, and the names of those that did not."""
    unreachable = {name for name, result in results.items() if result.unreachable}
    wanted = [d for d in desired_state(rendered, deployment) if d.host not in unreachable]
    return plan(wanted, [o for o in observed if o.host not in unreachable]), unreachable


def apply_deployment(
    deployment: DeploymentDoc, rendered: Rendered, options: ApplyOptions, workdir: Path
) -> tuple[list[Action], list[HostOutcome]]:
    """Plan and execute one deployment's rollout; returns the plan and the per-host outcome."""
    observed, results = gather(deployment, on_event=options.on_event)
    actions, unreachable = _plan_reachable(deployment, rendered, observed, results)
    changing = [a for a in actions if a.kind in ("create", "update")]
    outcomes = [
        HostOutcome(a.deployment, a.host, a.kind, a.current, a.current, "unchanged")
        for a in actions
        if a.kind == "unchanged"
    ]
    outcomes += [
        HostOutcome(deployment.name, h, "unknown", None, None, "unreachable", results[h].error)
        for h in sorted(unreachable)
    ]
    if not changing or not options.confirm(actions):
        return actions, outcomes
    locks = {o.host: _stale_lock(host_report(results, o.host, deployment.name).get("lock")) for o in observed}
    run = _run_info()
    views = {view.name: view for view in resolve.placed_hosts(deployment)}
    spec = deployment.spec
    archive = Path(spec.engine.image_archive).expanduser() if spec.engine.image_archive else None
    if archive is not None and not archive.is_file():
        raise RolloutError(f"engine.image_archive {archive} not found on this controller")
    hosts: dict[str, tuple[HostView, dict[str, Any]]] = {}
    for action in changing:
        staging, secrets = _stage(rendered, deployment, action.host, workdir)
        container = rendered.containers[(deployment.name, action.host)]
        source = str(spec.model.source)
        hosts[action.host] = (
            views[action.host],
            {
                "servespec_deployment": deployment.name,
                "servespec_digest": action.digest,
                "servespec_staging": str(staging),
                "servespec_secrets": str(secrets) if secrets else "",
                "servespec_image": container["image"],
                "servespec_image_archive": str(archive) if archive else "",
                "servespec_image_archive_bytes": archive.stat().st_size if archive else 0,
                "servespec_model_paths": [source] if resolve.is_local_path(source) else [],
                "servespec_driver_min": _driver_min(deployment),
                "servespec_smoke_test": bool(spec.rollout.smoke_test),
                "servespec_standin_image": options.standin_image or "",
                "servespec_run": run,
                "servespec_break_lock": locks.get(action.host, ""),
                "servespec_role": container["role"],
                "servespec_engine": spec.engine.name,
                "servespec_model_source": source,
            },
        )
    ordered = dict(sorted(hosts.items(), key=lambda item: _order(rendered, deployment.name, item[0])))
    result = _run_on("apply.yml", ordered, _extravars_for(deployment, list(ordered)), options.on_event)
    for action in changing:
        outcomes.append(_outcome(action, result))
    return actions, outcomes


def _driver_min(deployment: DeploymentDoc) -> str:
    """The lowest driver the official image's CUDA version runs on ('' for custom images)."""
    from servespec.knowledge import engines

    release = resolve.release(deployment)
    if release is None or deployment.spec.engine.image not in (
        None,
        resolve.profile(deployment).image(deployment.spec.engine.version),
    ):
        return ""
    cuda, _ = engines.image_cuda(release)
    minimum = engines.MIN_DRIVER_FOR_CUDA_MAJOR.get(cuda[0]) if cuda else None
    return ".".join(str(part) for part in minimum) if minimum else ""


def _order(rendered: Rendered, deployment: str, host: str) -> tuple[int, int]:
    container = rendered.containers[(deployment, host)]
    return int(container["replica"]), int(container["rank"])


def _outcome(action: Action, result: RunResult) -> HostOutcome:
    host = result.hosts.get(action.host)
    if host is None or not host.touched:
        return HostOutcome(
            action.deployment, action.host, action.kind, action.current, action.current, "not reached (rollout stopped)"
        )
    allocated = host.results.get(TASK_ALLOCATE, {})
    new = allocated.get("number")
    if host.ok and TASK_MARK_GOOD not in host.results:
        # The run was cancelled (Ctrl-C) or ended before this host finished: apply again to converge.
        return HostOutcome(
            action.deployment, action.host, action.kind, action.current, new, f"interrupted ({result.status})"
        )
    if host.ok:
        return HostOutcome(action.deployment, action.host, action.kind, action.current, new, "ok")
    verdict = (
        "unreachable"
        if host.unreachable
        else "rolled back"
        if action.current is not None
        else "failed (nothing to roll back to)"
    )
    return HostOutcome(
        action.deployment,
        action.host,
        action.kind,
        action.current,
        new,
        verdict,
        f"{host.stage}: {host.error}",
        host.logs,
    )


def apply(fleet: Fleet, options: ApplyOptions, workdir: Path) -> tuple[list[Action], list[HostOutcome]]:
    """Apply every deployment of the fleet, one after another; stops at the first that fails."""
    rendered = render_fleet(fleet)
    all_actions: list[Action] = []
    all_outcomes: list[HostOutcome] = []
    for deployment in fleet.deployments:
        actions, outcomes = apply_deployment(deployment, rendered, options, workdir)
        all_actions += actions
        all_outcomes += outcomes
        if any(o.result not in ("ok", "unchanged") for o in outcomes):
            break
    return all_actions, all_outcomes


def plan_fleet(fleet: Fleet) -> list[Action]:
    """The plan for every deployment, from live host state (read-only)."""
    rendered = render_fleet(fleet)
    actions = []
    for deployment in fleet.deployments:
        actions += _plan_reachable(deployment, rendered, *gather(deployment))[0]
    return actions


def rollback(fleet: Fleet, to: int | None, options: ApplyOptions) -> list[HostOutcome]:
    """Restore revision ``to`` (default: the last good one before the current) on every host."""
    outcomes = []
    for deployment in fleet.deployments:
        observed, results = gather(deployment, on_event=options.on_event)
        views = {view.name: view for view in resolve.placed_hosts(deployment)}
        hosts: dict[str, tuple[HostView, dict[str, Any]]] = {}
        run = _run_info()
        for seen in observed:
            state = host_report(results, seen.host, deployment.name).get("state") or {}
            target = to if to is not None else _previous_good(state)
            if target is None or seen.current == target:
                outcomes.append(
                    HostOutcome(deployment.name, seen.host, "rollback", seen.current, seen.current, "unchanged")
                )
                continue
            if not any(r.get("number") == target for r in state.get("revisions", [])):
                outcomes.append(
                    HostOutcome(
                        deployment.name,
                        seen.host,
                        "rollback",
                        seen.current,
                        target,
                        "failed",
                        f"revision {target} does not exist on {seen.host}",
                    )
                )
                continue
            hosts[seen.host] = (
                views[seen.host],
                {
                    "servespec_deployment": deployment.name,
                    "servespec_existing_revision": target,
                    "servespec_run": run,
                    "servespec_image": "",
                    "servespec_smoke_test": bool(deployment.spec.rollout.smoke_test),
                },
            )
        if hosts and options.confirm([]):
            result = _run_on("rollback.yml", hosts, _extravars_for(deployment, list(hosts)), options.on_event)
            for name, (_, extra) in hosts.items():
                host = result.hosts.get(name)
                ok = host is not None and host.ok and host.touched
                outcomes.append(
                    HostOutcome(
                        deployment.name,
                        name,
                        "rollback",
                        None,
                        extra["servespec_existing_revision"],
                        "ok" if ok else "failed",
                        host.error if host else "not reached",
                    )
                )
    return outcomes


def _previous_good(state: dict[str, Any]) -> int | None:
    current = state.get("current")
    good = [r["number"] for r in state.get("revisions", []) if r.get("status") == "good" and r.get("number") != current]
    return max(good) if good else None


def destroy(fleet: Fleet, options: ApplyOptions) -> list[HostOutcome]:
    """Stop and remove every deployment of the fleet from its hosts."""
    outcomes = []
    for deployment in fleet.deployments:
        hosts = {
            view.name: (view, {"servespec_deployment": deployment.name, "servespec_run": _run_info()})
            for view in resolve.placed_hosts(deployment)
        }
        if not hosts or not options.confirm([]):
            continue
        result = _run_on("destroy.yml", hosts, {}, options.on_event)
        for name in hosts:
            host = result.hosts.get(name)
            ok = host is not None and host.ok
            outcomes.append(
                HostOutcome(
                    deployment.name, name, "destroy", None, None, "ok" if ok else "failed", host.error if host else ""
                )
            )
    return outcomes


def discover(inventory: InventoryDoc, destination: Path, *, on_event: EventHandler | None = None) -> dict[str, str]:
    """Collect every inventory host's outputs over Ansible and write ``<host>.json`` facts files.

    Returns the hosts that could not be read, with why.
    """
    import tempfile

    from servespec.discover.facts import write_facts

    hosts: dict[str, tuple[HostView, dict[str, Any]]] = {name: (view, {}) for name, view in inventory.hosts.items()}
    result = _run_on("discover.yml", hosts, {}, on_event)
    failed = {name: r.error for name, r in result.hosts.items() if not r.ok}
    with tempfile.TemporaryDirectory(prefix="servespec-discover-") as tmp:
        for name in hosts:
            host = result.hosts.get(name)
            outputs = host.results.get(TASK_COLLECT, {}).get("outputs") if host and host.ok else None
            if outputs is None:
                failed.setdefault(name, "no answer")
                continue
            folder = Path(tmp) / name
            folder.mkdir()
            for file_name, text in outputs.items():
                (folder / file_name).write_text(text, encoding="utf-8")
        write_facts(Path(tmp), destination)
    return failed
