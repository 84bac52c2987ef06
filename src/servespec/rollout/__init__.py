"""Roll rendered deployments out to hosts with Ansible: status, plan, apply, rollback, destroy.

The controller renders, reads every host's state (``status.yml``), computes the plan
(:func:`servespec.plan.plan`, a pure function), then executes exactly that plan with
``apply.yml`` in batches of ``rollout.max_unavailable`` replicas. Secrets are resolved here,
on the controller, only while applying; they reach hosts in a mode-0600 env file copied with
``no_log`` and appear in no plan, event or log.

Nothing read from a checkout or a host is ever evaluated: every string reaches Ansible
marked unsafe (:mod:`servespec.rollout.ansible_vars`), connection values that ssh would
read as options are refused here, and host reports are type-checked
(:mod:`servespec.rollout.reported`) before any of their values is reused.
"""

from __future__ import annotations

import functools
import json
import os
import socket
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from servespec.knowledge import resolve
from servespec.plan import Action, Desired, Observed, plan
from servespec.render import Rendered, render_fleet
from servespec.render.common import host_and_port
from servespec.rollout.errors import RolloutError as RolloutError
from servespec.rollout.local_files import archive_path as archive_path
from servespec.rollout.local_files import resolve_secrets as resolve_secrets
from servespec.rollout.local_files import secret_values, write_secrets
from servespec.rollout.reported import RUN_ID, checked_report
from servespec.rollout.runner import EventHandler, HostResult, RunResult, run_playbook
from servespec.rules.rollout import replica_count, unavailable
from servespec.spec.fleet import DeploymentDoc, Fleet, HostView, InventoryDoc
from servespec.spec.grammars import is_address, is_key_path, is_user_name
from servespec.spec.models import HostName
from servespec.text import unsafe_character

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


def _plain_host_name(name: str) -> bool:
    """An inventory host name as the loader takes it (spec.models.HostName: one definition)."""
    try:
        _host_names().validate_python(name)
    except ValidationError:
        return False
    return True


@functools.cache
def _host_names() -> TypeAdapter[str]:
    """The validator of models.HostName, built once."""
    return TypeAdapter(HostName)


def _connection_value(host: str, field: str, value: str, valid: Callable[[str], bool]) -> str:
    """``value`` when ssh reads it as the value it is (the loader's own grammar), else a RolloutError.

    The loader refuses these values already; this is the check again where the inventory
    is written, for anything that skipped it.
    """
    if not valid(value):
        raise RolloutError(
            f"host {host}: {field} {value!r} is not a plain address or name (see spec.grammars; "
            "no whitespace, quotes or template characters, not starting with '-'); fix the inventory"
        )
    return value


def _key_path(host: str, key: str) -> str:
    """``defaults.ssh_key`` expanded, when ssh and Ansible read it as the file it names."""
    # ssh expands %-tokens and ${VAR} in IdentityFile, and Ansible quotes it with '"': refused
    # here by name, whatever the grammar allows.
    if not is_key_path(key) or unsafe_character(key) or any(char in key for char in '%$"'):
        raise RolloutError(
            f'host {host}: defaults.ssh_key holds a character ssh would expand or split (% $ " or a control'
            " character) or is not a plain file path; rename the key file"
        )
    return str(Path(key).expanduser())


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
        "ansible_host": _connection_value(host.name, "address", host.address, is_address),
        "ansible_port": spec.ssh_port or defaults.ssh_port,
        "ansible_python_interpreter": "/usr/bin/python3",
        "ansible_become": defaults.become,
    }
    user = spec.ssh_user or defaults.ssh_user
    if user:
        out["ansible_user"] = _connection_value(host.name, "ssh_user", user, is_user_name)
    if defaults.ssh_key:
        out["ansible_ssh_private_key_file"] = _key_path(host.name, defaults.ssh_key)
    return out


def inventory_for(hosts: dict[str, tuple[HostView, dict[str, Any]]]) -> dict[str, Any]:
    """An Ansible inventory with the hosts in order, each with its connection and servespec vars.

    Raises RolloutError for a host name, address or user that is not a plain name (every
    string value is passed to Ansible unsafe anyway; these would still reach ssh's argv).
    """
    for name in hosts:
        if not _plain_host_name(name):
            raise RolloutError(f"host name {name!r} is not letters, digits, '.', '_' and '-'; fix the inventory")
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
    """What the status playbook reported for one deployment on one host, type-checked ({} when nothing).

    :func:`gather` has already replaced a report that failed the checks by an empty one.
    """
    result = results.get(host)
    if result is None:
        return {}
    report = result.results.get(TASK_STATUS, {}).get("deployments", {})
    found = report.get(deployment) if isinstance(report, dict) else None
    return dict(found) if isinstance(found, dict) else {}


def _check_reports(results: dict[str, HostResult], deployment: str) -> None:
    """Replace each host's report by its checked copy; a report that fails makes that host's error."""
    for name, result in results.items():
        checked, problem = checked_report(host_report(results, name, deployment))
        result.results[TASK_STATUS] = {"deployments": {deployment: checked}}
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


def _run_on(
    playbook: str,
    hosts: dict[str, tuple[HostView, dict[str, Any]]],
    extravars: dict[str, Any],
    on_event: EventHandler | None,
    secrets: tuple[str, ...] = (),
) -> RunResult:
    """Run ``playbook`` on ``hosts`` (in their order), all of them at once; ``secrets`` are masked in results."""
    return run_playbook(playbook, inventory_for(hosts), extravars, on_event=on_event, forks=len(hosts), secrets=secrets)


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
    _check_reports(result.hosts, deployment.name)
    observed = [_observed(deployment.name, name, host_report(result.hosts, name, deployment.name)) for name in hosts]
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
            container = host_report(results, seen.host, deployment.name).get("container") or {}
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
                )
            )
    return rows


def _stage(
    rendered: Rendered, deployment: DeploymentDoc, host: str, workdir: Path, secrets_dir: Path | None
) -> tuple[Path, str]:
    """One JSON bundle of the host's rendered files (one upload), and its secrets env file's text ('' if none)."""
    files = rendered.host_files(deployment.name, host)
    container = rendered.containers[(deployment.name, host)]
    files[".servespec/container.json"] = json.dumps(container, indent=2, sort_keys=True)
    folder = workdir / "staging" / deployment.name / f"{host}.json"
    folder.parent.mkdir(parents=True, exist_ok=True)
    folder.write_text(json.dumps(files), encoding="utf-8")
    if not container["secret_environment"]:
        return folder, ""
    return folder, resolve_secrets(container["secret_environment"], secrets_dir)


def _run_info() -> dict[str, Any]:
    return {"controller": socket.gethostname(), "pid": os.getpid(), "run_id": uuid.uuid4().hex[:12]}


def _stale_lock(lock: dict[str, Any] | None) -> str:
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


@dataclass
class ApplyOptions:
    """How to apply: confirmation, check mode, progress, and the test-only stand-in image."""

    confirm: Callable[[list[Action]], bool] = lambda actions: True
    on_event: EventHandler | None = None
    standin_image: str | None = None
    """Test-only: replaces every engine image and drops GPU requests (see tests/hosts/standin)."""
    check_only: bool = False
    """``apply --check``: read host state and plan; controller inputs (secrets, archive) are not read."""
    secrets_dir: Path | None = None
    """Where from_file secrets may be read (``--secrets-dir``); default: the inventory's defaults.secrets_dir."""


def secrets_dir(deployment: DeploymentDoc, options: ApplyOptions) -> Path | None:
    """The folder from_file secrets must stay inside: ``--secrets-dir``, else the inventory's (relative to it)."""
    if options.secrets_dir is not None:
        return options.secrets_dir
    inventory = deployment.inventory
    configured = inventory.spec.defaults.secrets_dir if inventory is not None else None
    if inventory is None or configured is None:
        return None
    base = inventory.document.path.parent if inventory.document is not None else Path.cwd()
    return base / Path(configured).expanduser()


def _extravars_for(deployment: DeploymentDoc, hosts: list[str]) -> dict[str, Any]:
    replicas = replica_count(deployment)
    group = deployment.spec.placement.hosts_per_replica
    if deployment.spec.rollout.strategy == "recreate":
        return {"servespec_serial": len(hosts)}
    return {"servespec_serial": max(1, min(unavailable(deployment, replicas), replicas)) * group}


def _plan_reachable(
    deployment: DeploymentDoc, rendered: Rendered, observed: list[Observed], results: dict[str, HostResult]
) -> tuple[list[Action], set[str]]:
    """The plan for the hosts that answered with a usable report, and the names of the others."""
    unusable = {name for name, result in results.items() if not result.ok}
    wanted = [d for d in desired_state(rendered, deployment) if d.host not in unusable]
    return plan(wanted, [o for o in observed if o.host not in unusable]), unusable


def _unread(
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
    outcomes += _unread(deployment, unreachable, results)
    if not changing or not options.confirm(actions):
        return actions, outcomes
    locks = {o.host: _stale_lock(host_report(results, o.host, deployment.name).get("lock")) for o in observed}
    common = _common_vars(deployment, options)
    views = {view.name: view for view in resolve.placed_hosts(deployment)}
    hosts: dict[str, tuple[HostView, dict[str, Any]]] = {}
    secrets: list[str] = []
    allowed = secrets_dir(deployment, options)
    for action in changing:
        staging, env_text = _stage(rendered, deployment, action.host, workdir, allowed)
        env_file = write_secrets(workdir, deployment.name, action.host, env_text) if env_text else None
        secrets += secret_values(env_text)
        container = rendered.containers[(deployment.name, action.host)]
        hosts[action.host] = (
            views[action.host],
            {
                **common,
                "servespec_digest": action.digest,
                "servespec_staging": str(staging),
                "servespec_secrets": str(env_file) if env_file else "",
                "servespec_image": container["image"],
                "servespec_break_lock": locks.get(action.host, ""),
                "servespec_role": container["role"],
                "servespec_model_roots": list(views[action.host].inventory.spec.defaults.model_roots),
            },
        )
    ordered = dict(sorted(hosts.items(), key=lambda item: _order(rendered, deployment.name, item[0])))
    result = _run_on("apply.yml", ordered, _extravars_for(deployment, list(ordered)), options.on_event, tuple(secrets))
    for action in changing:
        outcomes.append(_outcome(action, result))
    return actions, outcomes


def _common_vars(deployment: DeploymentDoc, options: ApplyOptions) -> dict[str, Any]:
    """The apply variables every host of the deployment shares (all strings reach Ansible unsafe)."""
    spec = deployment.spec
    written, document = spec.engine.image_archive, deployment.document
    archive = archive_path(written, document.path, document.root) if written else None
    source = str(spec.model.source)
    return {
        "servespec_deployment": deployment.name,
        "servespec_image_archive": str(archive) if archive else "",
        "servespec_image_archive_bytes": archive.stat().st_size if archive else 0,
        "servespec_model_paths": [source] if resolve.is_local_path(source) else [],
        "servespec_driver_min": _driver_min(deployment),
        "servespec_smoke_test": bool(spec.rollout.smoke_test),
        "servespec_standin_image": options.standin_image or "",
        "servespec_run": _run_info(),
        "servespec_engine": spec.engine.name,
        "servespec_model_source": source,
    }


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


NOT_REACHED = "not reached (rollout stopped)"
"""The result of a host the rollout stopped before (an earlier batch failed): left as it was."""


def _outcome(action: Action, result: RunResult) -> HostOutcome:
    host = result.hosts.get(action.host)
    if host is None or not host.touched:
        return HostOutcome(action.deployment, action.host, action.kind, action.current, action.current, NOT_REACHED)
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


class StoppedAfterChangesError(RolloutError):
    """A RolloutError met after earlier deployments of the run had changed hosts.

    ``outcomes`` are the rows of the deployments handled before it; ``changed`` names those
    whose hosts were touched, so the report never claims that nothing was changed.
    """

    def __init__(self, cause: RolloutError, outcomes: list[HostOutcome]) -> None:
        super().__init__(str(cause))
        self.outcomes = outcomes
        self.changed = changed_deployments(outcomes)


def changed_deployments(outcomes: list[HostOutcome]) -> list[str]:
    """The deployments with a host that apply created or updated (or tried to: rolled back, failed)."""
    touched = (o for o in outcomes if o.action in ("create", "update") and o.result != NOT_REACHED)
    return sorted({o.deployment for o in touched})


def check_inventories(fleet: Fleet) -> None:
    """Refuse (RolloutError) a host of any deployment that ssh would not read as plain names."""
    for deployment in fleet.deployments:
        inventory_for({view.name: (view, {}) for view in resolve.placed_hosts(deployment)})


def check_inputs(fleet: Fleet, rendered: Rendered, options: ApplyOptions) -> None:
    """Check every deployment's controller-side inputs before any host is touched.

    The inventory (host names, addresses, users, key path), the image archive and every
    host's secrets are what apply reads on the controller; each raises RolloutError when it
    cannot be used, so a run that would stop on them stops before its first change.
    """
    check_inventories(fleet)
    for deployment in fleet.deployments:
        written, document = deployment.spec.engine.image_archive, deployment.document
        if written:
            archive_path(written, document.path, document.root)
        allowed = secrets_dir(deployment, options)
        for (name, _), container in rendered.containers.items():
            if name == deployment.name and container["secret_environment"]:
                resolve_secrets(container["secret_environment"], allowed)


def apply(fleet: Fleet, options: ApplyOptions, workdir: Path) -> tuple[list[Action], list[HostOutcome]]:
    """Apply every deployment of the fleet, one after another; stops at the first that fails.

    Controller-side inputs are checked for every deployment first (:func:`check_inputs`). A
    RolloutError that still comes later (a secret file removed meanwhile) is raised as
    :class:`StoppedAfterChangesError`, carrying the outcomes so far.
    """
    rendered = render_fleet(fleet)
    if not options.check_only:
        check_inputs(fleet, rendered, options)
    all_actions: list[Action] = []
    all_outcomes: list[HostOutcome] = []
    for deployment in fleet.deployments:
        try:
            actions, outcomes = apply_deployment(deployment, rendered, options, workdir)
        except RolloutError as err:
            if changed_deployments(all_outcomes):
                raise StoppedAfterChangesError(err, all_outcomes) from err
            raise
        all_actions += actions
        all_outcomes += outcomes
        if any(o.result not in ("ok", "unchanged") for o in outcomes):
            break
    return all_actions, all_outcomes


@dataclass
class FleetPlan:
    """The plan of every deployment, and the hosts it could not be made for (with why)."""

    actions: list[Action]
    unread: list[HostOutcome] = field(default_factory=list)


def plan_fleet(fleet: Fleet) -> FleetPlan:
    """The plan for every deployment, from live host state (read-only).

    Hosts that did not answer, or answered with a report servespec does not trust, have no
    action: they are listed in ``unread`` (the plan is incomplete, never "nothing to do").
    """
    rendered = render_fleet(fleet)
    out = FleetPlan([])
    for deployment in fleet.deployments:
        observed, results = gather(deployment)
        actions, unread = _plan_reachable(deployment, rendered, observed, results)
        out.actions += actions
        out.unread += _unread(deployment, unread, results)
    return out


def rollback(fleet: Fleet, to: int | None, options: ApplyOptions) -> list[HostOutcome]:
    """Restore revision ``to`` (default: the last good one before the current) on every host.

    A host whose state could not be read (unreachable, or a report that failed its checks)
    is reported as such, never as unchanged.
    """
    check_inventories(fleet)
    outcomes = []
    for deployment in fleet.deployments:
        observed, results = gather(deployment, on_event=options.on_event)
        views = {view.name: view for view in resolve.placed_hosts(deployment)}
        hosts: dict[str, tuple[HostView, dict[str, Any]]] = {}
        run = _run_info()
        # A host whose state could not be read has nothing known to restore: it failed, never "unchanged".
        unread = {name for name, result in results.items() if not result.ok}
        outcomes += _unread(deployment, unread, results, "rollback")
        for seen in (o for o in observed if o.host not in unread):
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
                verdict = "ok" if ok else "unreachable" if host is not None and host.unreachable else "failed"
                outcomes.append(
                    HostOutcome(
                        deployment.name,
                        name,
                        "rollback",
                        None,
                        extra["servespec_existing_revision"],
                        verdict,
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
    check_inventories(fleet)
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


MAX_OUTPUT_CHARS = 8 << 20
"""Largest command output kept from a host (lspci -vvv of a large server is about a megabyte)."""


def discover(inventory: InventoryDoc, destination: Path, *, on_event: EventHandler | None = None) -> dict[str, str]:
    """Collect every inventory host's outputs over Ansible and write ``<host>.json`` facts files.

    Only the file names :data:`servespec.discover.facts.OUTPUT_FILES` documents are kept, as
    text of at most :data:`MAX_OUTPUT_CHARS` each; whatever else a host sends (other names,
    ``../`` or absolute paths, other types) is dropped. Returns the hosts that could not be
    read, with why.
    """
    import tempfile

    from servespec.discover.facts import OUTPUT_FILES, write_facts

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
            for file_name in OUTPUT_FILES:  # fixed names: the host chooses none of the paths written
                text = outputs.get(file_name) if isinstance(outputs, dict) else None
                if isinstance(text, str) and len(text) <= MAX_OUTPUT_CHARS:
                    (folder / file_name).write_text(text, encoding="utf-8", errors="replace")
        write_facts(Path(tmp), destination)
    return failed
