"""Roll rendered deployments out to hosts with Ansible: status, plan, apply, rollback, destroy, discover.

The controller renders, reads every host's state (``status.yml``), computes the plan
(:func:`servespec.plan.plan`, a pure function), then executes exactly that plan with
``apply.yml`` in batches of ``rollout.max_unavailable`` replicas. Secrets are resolved here,
on the controller, only while applying; they reach hosts in a mode-0600 env file copied with
``no_log`` and appear in no plan, event or log.

Nothing read from a checkout or a host is ever evaluated: every string reaches Ansible
marked unsafe (:mod:`servespec.rollout.ansible_vars`), connection values that ssh would
read as options are refused (:mod:`servespec.rollout.inventory`), and host reports are
type-checked (:mod:`servespec.rollout.reported`) before any of their values is reused.

The modules, by concern:

- :mod:`~servespec.rollout.inventory`: each host's connection variables, the inventory, ``run_on``;
- :mod:`~servespec.rollout.state`: host reports, the observed state, status rows;
- :mod:`~servespec.rollout.staging`: a new revision's bundle of files and its secrets;
- :mod:`~servespec.rollout.orchestrate`: apply, plan, rollback and destroy;
- :mod:`~servespec.rollout.collect`: discover;
- :mod:`~servespec.rollout.runner`: ansible-runner and the per-host results it reports.

This package re-exports the names the CLI and the tests use.
"""

from __future__ import annotations

from servespec.rollout import inventory as inventory
from servespec.rollout import state as state
from servespec.rollout.collect import MAX_OUTPUT_CHARS as MAX_OUTPUT_CHARS
from servespec.rollout.collect import discover as discover
from servespec.rollout.errors import RolloutError as RolloutError
from servespec.rollout.inventory import HostVars as HostVars
from servespec.rollout.inventory import check_inventories as check_inventories
from servespec.rollout.inventory import inventory_for as inventory_for
from servespec.rollout.local_files import archive_path as archive_path
from servespec.rollout.local_files import resolve_secrets as resolve_secrets
from servespec.rollout.orchestrate import NOT_REACHED as NOT_REACHED
from servespec.rollout.orchestrate import ApplyOptions as ApplyOptions
from servespec.rollout.orchestrate import FleetPlan as FleetPlan
from servespec.rollout.orchestrate import StoppedAfterChangesError as StoppedAfterChangesError
from servespec.rollout.orchestrate import apply as apply
from servespec.rollout.orchestrate import apply_deployment as apply_deployment
from servespec.rollout.orchestrate import changed_deployments as changed_deployments
from servespec.rollout.orchestrate import check_inputs as check_inputs
from servespec.rollout.orchestrate import destroy as destroy
from servespec.rollout.orchestrate import plan_fleet as plan_fleet
from servespec.rollout.orchestrate import rollback as rollback
from servespec.rollout.orchestrate import secrets_dir as secrets_dir
from servespec.rollout.state import HostOutcome as HostOutcome
from servespec.rollout.state import Status as Status
from servespec.rollout.state import desired_state as desired_state
from servespec.rollout.state import gather as gather
from servespec.rollout.state import host_report as host_report
from servespec.rollout.state import status as status
