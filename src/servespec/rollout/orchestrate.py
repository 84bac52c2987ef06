"""Apply, plan, rollback and destroy: the controller's runs of the role over a fleet.

The controller renders, reads every host's state (``status.yml``, :mod:`servespec.rollout.state`),
computes the plan (:func:`servespec.plan.plan`, a pure function), then executes exactly that
plan with ``apply.yml`` in batches of ``rollout.max_unavailable`` replicas.
"""

from __future__ import annotations

import os
import socket
import tempfile
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import servespec.rollout.inventory as inventory
import servespec.rollout.state as state
import servespec.rollout.surge as surge
from servespec import engines, hostpaths
from servespec.knowledge import resolve
from servespec.knowledge.served import served_names
from servespec.plan import Action
from servespec.render import Rendered, render_fleet
from servespec.rollout.errors import RolloutError
from servespec.rollout.inventory import Hosts, HostVars
from servespec.rollout.local_files import archive_path, link_into, resolve_secrets, secret_values, write_secrets
from servespec.rollout.runner import EventHandler, Report, RunResult
from servespec.rollout.staging import (
    beside_vars,
    secrets_folder,
    stage,
    weights_plan,
    weights_progress,
    weights_vars,
)
from servespec.rollout.state import HostOutcome
from servespec.rollout.verify import slo_payload
from servespec.rules.rollout import replica_count, unavailable
from servespec.spec.fleet import DeploymentDoc, Fleet


def _run_info() -> dict[str, Any]:
    return {"controller": socket.gethostname(), "pid": os.getpid(), "run_id": uuid.uuid4().hex[:12]}


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
    verify: bool = False
    """``apply --verify``: benchmark each new revision against the spec's slo after health; a miss restores it."""


def secrets_dir(deployment: DeploymentDoc, options: ApplyOptions) -> Path | None:
    """The folder from_file secrets must stay inside: ``--secrets-dir``, else the inventory's (relative to it)."""
    return secrets_folder(deployment, options.secrets_dir)


def _extravars_for(deployment: DeploymentDoc, hosts: list[str]) -> dict[str, Any]:
    replicas = replica_count(deployment)
    group = deployment.spec.placement.hosts_per_replica
    if deployment.spec.rollout.strategy == "recreate":
        return {"servespec_serial": len(hosts)}
    return {"servespec_serial": max(1, min(unavailable(deployment, replicas), replicas)) * group}


def apply_deployment(
    deployment: DeploymentDoc, rendered: Rendered, options: ApplyOptions, workdir: Path
) -> tuple[list[Action], list[HostOutcome]]:
    """Plan and execute one deployment's rollout; returns the plan and the per-host outcome."""
    workdir = workdir.resolve()  # the role compares each controller path with it, string for string
    observed, results = state.gather(deployment, on_event=options.on_event)
    actions, unreachable = state.plan_reachable(deployment, rendered, observed, results)
    changing = [a for a in actions if a.kind in ("create", "update")]
    outcomes = [
        HostOutcome(a.deployment, a.host, a.kind, a.current, a.current, "unchanged")
        for a in actions
        if a.kind == "unchanged"
    ]
    outcomes += state.unread(deployment, unreachable, results)
    if not changing or not options.confirm(actions):
        return actions, outcomes
    locks = {
        o.host: state.stale_lock(state.host_report(results, o.host, deployment.name).get("lock")) for o in observed
    }
    common = _common_vars(deployment, options)
    views = {view.name: view for view in resolve.resolved(deployment).hosts}
    hosts: Hosts = {}
    secrets: list[str] = []
    allowed = secrets_dir(deployment, options)
    for action in changing:
        staging, env_text = stage(rendered, deployment, action.host, workdir, allowed)
        env_file = write_secrets(workdir, deployment.name, action.host, env_text) if env_text else None
        secrets += secret_values(env_text)
        container = rendered.containers[(deployment.name, action.host)]
        host_vars = replace(
            common,
            digest=action.digest or "",
            staging=str(staging),
            secrets=str(env_file) if env_file else "",
            image=container.image,
            break_lock=locks.get(action.host, ""),
            role=container.role,
            model_roots=tuple(views[action.host].inventory.spec.defaults.model_roots),
            **weights_vars(weights_plan(deployment, container, standin=bool(options.standin_image)), deployment),
            **beside_vars(deployment, container, standin=bool(options.standin_image)),
            adapter_models=tuple(container.smoke_adapters) if "modelfile" in common.after_start else (),
            **surge.proxy_vars(deployment, action.strategy),
        )
        hosts[action.host] = (views[action.host], _archives_linked(host_vars, workdir).to_vars())
    ordered = dict(sorted(hosts.items(), key=lambda item: _order(rendered, deployment.name, item[0])))
    result = inventory.run_on(
        "apply.yml",
        ordered,
        {**_extravars_for(deployment, list(ordered)), inventory.WORK: str(workdir)},
        weights_progress(options.on_event),
        tuple(secrets),
    )
    for action in changing:
        outcomes.append(_outcome(action, result))
    return actions, outcomes


def _archives_linked(host_vars: HostVars, workdir: Path) -> HostVars:
    """``host_vars`` with each archive read through a link in the run's work folder (:func:`link_into`)."""

    def linked(path: str) -> str:
        return str(link_into(workdir, Path(path))) if path else ""

    return replace(
        host_vars,
        image_archive=linked(host_vars.image_archive),
        weights_archive=linked(host_vars.weights_archive),
        proxy_image_archive=linked(host_vars.proxy_image_archive),
    )


def _common_vars(deployment: DeploymentDoc, options: ApplyOptions) -> HostVars:
    """The apply variables every host of the deployment shares (all strings reach Ansible unsafe)."""
    spec = deployment.spec
    written, document = spec.engine.image_archive, deployment.document
    archive = archive_path(written, document.path, document.root) if written else None
    source = str(spec.model.source)
    return HostVars(
        deployment=deployment.name,
        run=_run_info(),
        image_archive=str(archive) if archive else "",
        image_archive_bytes=archive.stat().st_size if archive else 0,
        model_paths=(source,) if hostpaths.is_local_path(source) else (),
        driver_min=_driver_min(deployment),
        smoke_test=bool(spec.rollout.smoke_test),
        standin_image=options.standin_image or "",
        engine=spec.engine.name,
        model_source=source,
        served_names=tuple(served_names(deployment)),
        after_start=engines.get(spec.engine.name).profile.after_start,
        verify=slo_payload(deployment) if options.verify else "",
    )


def _driver_min(deployment: DeploymentDoc) -> str:
    """The lowest driver the official image's CUDA version runs on ('' for custom images): HW005's answer."""
    from servespec.engines.images import image_policy

    known, engine = resolve.resolved(deployment), deployment.spec.engine
    return image_policy(known.engine, engine.version, engine.image, known.release).min_driver_text


def _order(rendered: Rendered, deployment: str, host: str) -> tuple[int, int]:
    container = rendered.containers[(deployment, host)]
    return container.replica, container.rank


NOT_REACHED = "not reached (rollout stopped)"
"""The result of a host the rollout stopped before (an earlier batch failed): left as it was."""


def _outcome(action: Action, result: RunResult) -> HostOutcome:
    host = result.hosts.get(action.host)
    if host is None or not host.touched:
        return HostOutcome(action.deployment, action.host, action.kind, action.current, action.current, NOT_REACHED)
    number = host.reports.get(Report.ALLOCATED, {}).get("number")
    new = number if isinstance(number, int) and not isinstance(number, bool) else None
    if host.ok and Report.GOOD not in host.reports:
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
    whose hosts were touched (by default: :func:`changed_deployments` of the outcomes), so the
    report never claims that nothing was changed.
    """

    def __init__(self, cause: RolloutError, outcomes: list[HostOutcome], changed: list[str] | None = None) -> None:
        super().__init__(str(cause))
        self.outcomes = outcomes
        self.changed = changed_deployments(outcomes) if changed is None else changed


def changed_deployments(outcomes: list[HostOutcome]) -> list[str]:
    """The deployments with a host that apply created or updated (or tried to: rolled back, failed)."""
    touched = (o for o in outcomes if o.action in ("create", "update") and o.result != NOT_REACHED)
    return sorted({o.deployment for o in touched})


def check_inputs(fleet: Fleet, rendered: Rendered, options: ApplyOptions) -> None:
    """Check every deployment's controller-side inputs before any host is touched.

    The inventory (host names, addresses, users, key path), the image archive and every
    host's secrets are what apply reads on the controller; each raises RolloutError when it
    cannot be used, so a run that would stop on them stops before its first change.
    """
    inventory.check_inventories(fleet)
    for deployment in fleet.deployments:
        written, document = deployment.spec.engine.image_archive, deployment.document
        if written:
            archive_path(written, document.path, document.root)
        surge.proxy_archive(deployment)
        allowed = secrets_dir(deployment, options)
        for (name, _), container in rendered.containers.items():
            if name == deployment.name and deployment.spec.model.archive is not None:
                weights_vars(weights_plan(deployment, container, standin=bool(options.standin_image)), deployment)
            if name == deployment.name and container.secret_environment:
                resolve_secrets(container.to_json()["secret_environment"], allowed)


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
        observed, results = state.gather(deployment)
        actions, unusable = state.plan_reachable(deployment, rendered, observed, results)
        out.actions += actions
        out.unread += state.unread(deployment, unusable, results)
    return out


def _each(fleet: Fleet, run: Callable[[DeploymentDoc], tuple[list[HostOutcome], bool]]) -> list[HostOutcome]:
    """``run`` on every deployment in turn: its rows, and whether it ran a playbook that changes hosts.

    A RolloutError after a deployment changed hosts is raised as :class:`StoppedAfterChangesError`
    naming those deployments, so no report claims that nothing was changed.
    """
    outcomes: list[HostOutcome] = []
    changed: list[str] = []
    for deployment in fleet.deployments:
        try:
            rows, ran = run(deployment)
        except RolloutError as err:
            if changed:
                raise StoppedAfterChangesError(err, outcomes, changed) from err
            raise
        outcomes += rows
        if ran:
            changed.append(deployment.name)
    return outcomes


def rollback(fleet: Fleet, to: int | None, options: ApplyOptions) -> list[HostOutcome]:
    """Restore revision ``to`` (default: the last good one before the current) on every host.

    A host whose state could not be read (unreachable, or a report that failed its checks)
    is reported as such, never as unchanged.
    """
    inventory.check_inventories(fleet)
    with tempfile.TemporaryDirectory(prefix="servespec-rollback-") as folder:
        workdir = Path(folder).resolve()  # the role reads controller files only from here (the proxy's archive)
        return _each(fleet, lambda deployment: _rollback_deployment(deployment, to, options, workdir))


def _rollback_deployment(
    deployment: DeploymentDoc, to: int | None, options: ApplyOptions, workdir: Path
) -> tuple[list[HostOutcome], bool]:
    observed, results = state.gather(deployment, on_event=options.on_event)
    views = {view.name: view for view in resolve.resolved(deployment).hosts}
    hosts: Hosts = {}
    run = _run_info()
    # A host whose state could not be read has nothing known to restore: it failed, never "unchanged".
    unusable = {name for name, result in results.items() if not result.ok}
    outcomes = state.unread(deployment, unusable, results, "rollback")
    for seen in (o for o in observed if o.host not in unusable):
        host_state = state.host_report(results, seen.host, deployment.name).get("state") or {}
        target = to if to is not None else state.previous_good(host_state)
        if target is None or seen.current == target:
            outcomes.append(
                HostOutcome(deployment.name, seen.host, "rollback", seen.current, seen.current, "unchanged")
            )
            continue
        if not any(r.get("number") == target for r in host_state.get("revisions", [])):
            missing = f"revision {target} does not exist on {seen.host}"
            outcomes.append(
                HostOutcome(deployment.name, seen.host, "rollback", seen.current, target, "failed", missing)
            )
            continue
        restore = HostVars(
            deployment=deployment.name,
            run=run,
            existing_revision=target,
            smoke_test=bool(deployment.spec.rollout.smoke_test),
            **surge.proxy_vars(deployment, surge.rollback_strategy(deployment)),
        )
        hosts[seen.host] = (views[seen.host], _archives_linked(restore, workdir).to_vars())
    if not hosts or not options.confirm([]):
        return outcomes, False
    extravars = {**_extravars_for(deployment, list(hosts)), inventory.WORK: str(workdir)}
    result = inventory.run_on("rollback.yml", hosts, extravars, options.on_event)
    for name, (_, extra) in hosts.items():
        host = result.hosts.get(name)
        ok = host is not None and host.ok and host.touched
        verdict = "ok" if ok else "unreachable" if host is not None and host.unreachable else "failed"
        error = host.error if host else "not reached"
        outcomes.append(
            HostOutcome(deployment.name, name, "rollback", None, extra["servespec_existing_revision"], verdict, error)
        )
    return outcomes, True


def destroy(fleet: Fleet, options: ApplyOptions) -> list[HostOutcome]:
    """Stop and remove every deployment of the fleet from its hosts."""
    inventory.check_inventories(fleet)
    return _each(fleet, lambda deployment: _destroy_deployment(deployment, options))


def _destroy_deployment(deployment: DeploymentDoc, options: ApplyOptions) -> tuple[list[HostOutcome], bool]:
    hosts = {
        view.name: (view, {"servespec_deployment": deployment.name, "servespec_run": _run_info()})
        for view in resolve.resolved(deployment).hosts
    }
    if not hosts or not options.confirm([]):
        return [], False
    result = inventory.run_on("destroy.yml", hosts, {}, options.on_event)
    outcomes = []
    for name in hosts:
        host = result.hosts.get(name)
        verdict = "ok" if host is not None and host.ok else "failed"
        outcomes.append(HostOutcome(deployment.name, name, "destroy", None, None, verdict, host.error if host else ""))
    return outcomes, True
