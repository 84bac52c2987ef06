"""Run servespec's playbooks through ansible-runner and collect per-host results.

The playbooks and the role's modules live in ``playbooks/`` at the top of the repository; the
wheel carries them as ``servespec/rollout/playbooks`` (pyproject's force-include), which
:func:`playbook_root` prefers (tests/rollout/test_packaging.py applies from an installed wheel).
The inventory and the extra vars are written as YAML files in which every string that could be a
template is tagged ``!unsafe`` and every other one is quoted (:mod:`servespec.rollout.ansible_vars`),
so no spec, inventory or host value is ever templated or retyped. Fact injection is off for every run
(``ANSIBLE_INJECT_FACT_VARS``): what a module returns under ``ansible_facts`` never becomes a
variable, so no host can rename what the role reads on the controller. Failure messages and log tails coming back
from hosts are scrubbed of the run's secret values and of token-shaped strings before they
are kept.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from servespec.redact import scrub
from servespec.rollout.ansible_vars import write_inputs
from servespec.rollout.reported import ReportError, checked_weights

PLAYBOOKS = Path(__file__).resolve().parents[3] / "playbooks"


def playbook_root() -> Path:
    """Where the playbooks are: in the package when installed, else the repository's playbooks/."""
    packaged = Path(__file__).resolve().parent / "playbooks"
    return packaged if packaged.is_dir() else PLAYBOOKS


@dataclass
class HostResult:
    """How one host fared in one playbook run."""

    host: str
    ok: bool = True
    unreachable: bool = False
    error: str = ""
    stage: str = ""
    logs: list[str] = field(default_factory=list)
    results: dict[str, Any] = field(default_factory=dict)
    """Every task's module result by task name (for playbooks of one's own; the controller reads ``reports``)."""
    reports: dict[str, dict[str, Any]] = field(default_factory=dict)
    """What servespec's own modules reported under :data:`RESULT_KEY`, by the ``kind`` each names."""
    touched: bool = False
    """Whether any task ran on the host (a host in a batch after a failure is never touched)."""


@dataclass
class RunResult:
    """The outcome of one playbook run."""

    status: str
    hosts: dict[str, HostResult]


EventHandler = Callable[[dict[str, Any]], None]

RESULT_KEY = "servespec_result"
"""The key under which the role's modules return what the controller reads: ``{"kind": KIND, ...}``.

The controller finds a result by its kind, never by the human name of the task that ran the
module; the kinds are those of :class:`Report` (the modules spell them in module_utils/servespec_common.py).
"""


class Report:
    """The kinds of :data:`RESULT_KEY` results the controller reads."""

    ALLOCATED = "revision_allocated"
    """servespec_state allocate: ``number``, the new revision."""
    GOOD = "revision_good"
    """servespec_state mark good: ``number``; the host finished its rollout."""
    STATUS = "deployments_status"
    """servespec_status: ``deployments``, one report per deployment name."""
    OUTPUTS = "host_outputs"
    """servespec_collect: ``outputs``, command outputs by file name."""
    WEIGHTS = "weights_staged"
    """servespec_weights: ``repo``, ``commit``, ``cached_bytes``, ``download_bytes``, ``downloaded_bytes``."""
    CAPACITY = "host_capacity"
    """servespec_capacity: ``gpus`` (index, total_mib, used_mib), ``mem_available_mib``, ``proxies`` (rollout auto)."""
    VERIFIED = "slo_verified"
    """servespec_bench: ``number``, ``model``, ``figures``, ``checks`` (or ``skipped``): the run against slo."""


def _report(result: HostResult, res: dict[str, Any], task: str) -> None:
    """Keep ``res``'s servespec result under its kind (anything else under the key is ignored).

    A weights report is type-checked here (:func:`~servespec.rollout.reported.checked_weights`): one
    that fails fails its host, with the field it got wrong, and is not kept.
    """
    report = res.get(RESULT_KEY)
    if not isinstance(report, dict) or not isinstance(report.get("kind"), str):
        return
    if report["kind"] == Report.WEIGHTS:
        problem = weights_problem(report)
        if problem:
            result.ok, result.error, result.stage = False, problem, task
            return
    result.reports[report["kind"]] = report


def weights_problem(report: dict[str, Any]) -> str:
    """Why a host's weights report cannot be used ('' when it checks): what the controller says for that host."""
    try:
        checked_weights(report)
    except ReportError as err:
        return f"weights report from the host is not what servespec writes: {err}"
    return ""


def _failure(result: HostResult, res: dict[str, Any], task: str, secrets: tuple[str, ...]) -> None:
    result.ok = False
    message = str(res.get("msg", "failed"))
    try:
        detail = json.loads(message)
    except ValueError:
        detail = None
    if isinstance(detail, dict) and "error" in detail:
        result.error = scrub(str(detail["error"]), secrets)
        result.stage = str(detail.get("stage", task))
        logs = detail.get("logs")
        # The host scrubs its log tail too; this covers a host that does not (or cannot).
        result.logs = [scrub(str(line), secrets) for line in logs][-20:] if isinstance(logs, list) else []
    elif not result.error:
        result.error = scrub(message, secrets)
        result.stage = task


def _collect(hosts: dict[str, HostResult], event: dict[str, Any], secrets: tuple[str, ...] = ()) -> None:
    data = event.get("event_data") or {}
    name = data.get("host")
    if not name:
        return
    result = hosts.setdefault(name, HostResult(host=name))
    kind = event.get("event", "")
    task = str(data.get("task", ""))
    res = data.get("res") or {}
    if kind == "runner_on_ok":
        result.touched = True
        result.results[task] = res
        _report(result, res, task)
    elif kind == "runner_on_failed" and not data.get("ignore_errors"):
        result.touched = True
        _failure(result, res, task, secrets)
    elif kind == "runner_on_unreachable":
        result.touched = True
        result.ok = False
        result.unreachable = True
        result.error = scrub(str(res.get("msg", "unreachable")), secrets)
        result.stage = "connect"


PERSIST = "-o ControlMaster=auto -o ControlPersist=60s"
"""One SSH connection per host for a whole apply: the status run's master serves the apply run too."""


def ssh_args(user: str | None) -> str:
    """ANSIBLE_SSH_ARGS: the user's own (a jump host, ...) first, then connection sharing.

    ssh keeps the first value it reads for an option, so an option the user sets wins; before,
    any ANSIBLE_SSH_ARGS of the user's replaced ControlMaster/ControlPersist, and every module run
    opened its own connection. Ansible adds ControlPath itself when the arguments name ControlPersist.
    """
    return f"{user.strip()} {PERSIST}" if user and user.strip() else PERSIST


def forks_for(forks: int, hosts: int, serial: object) -> int:
    """One fork per host of a batch (``servespec_serial``), never more than the run's hosts.

    Ansible starts min(forks, batch) workers for a batch anyway; this says so where the run is set up.
    """
    batch = serial if isinstance(serial, int) and not isinstance(serial, bool) and serial > 0 else hosts
    return max(1, min(forks, batch, hosts or forks))


def _host_count(inventory: dict[str, Any]) -> int:
    groups = inventory.get("all", {}).get("children", {})
    return sum(len(group.get("hosts") or {}) for group in groups.values() if isinstance(group, dict))


def run_playbook(
    playbook: str,
    inventory: dict[str, Any],
    extravars: dict[str, Any],
    *,
    on_event: EventHandler | None = None,
    forks: int = 10,
    secrets: tuple[str, ...] = (),
) -> RunResult:
    """Run ``playbooks/<playbook>`` over ``inventory`` and return per-host results.

    Every string of ``inventory`` and ``extravars`` reaches Ansible marked unsafe; ``secrets``
    are the values to mask in what hosts send back.
    """
    import ansible_runner

    root = playbook_root()
    hosts: dict[str, HostResult] = {}

    def handle(event: dict[str, Any]) -> bool:
        _collect(hosts, event, secrets)
        if on_event is not None:
            on_event(event)
        return True

    env = {
        "ANSIBLE_ROLES_PATH": str(root / "roles"),
        "ANSIBLE_LIBRARY": str(root / "roles" / "servespec" / "library"),
        "ANSIBLE_MODULE_UTILS": str(root / "roles" / "servespec" / "module_utils"),
        "ANSIBLE_HOST_KEY_CHECKING": os.environ.get("ANSIBLE_HOST_KEY_CHECKING", "True"),
        "ANSIBLE_RETRY_FILES_ENABLED": "False",
        "ANSIBLE_PIPELINING": "True",
        # A module result's ansible_facts stay under ansible_facts: injected as top-level variables they
        # would outrank the inventory's, and a host could rename a controller file the role reads.
        "ANSIBLE_INJECT_FACT_VARS": "False",
        "ANSIBLE_SSH_ARGS": ssh_args(os.environ.get("ANSIBLE_SSH_ARGS")),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    with tempfile.TemporaryDirectory(prefix="servespec-runner-") as private:
        hosts_file = write_inputs(Path(private), inventory, extravars)
        runner = ansible_runner.run(
            private_data_dir=private,
            playbook=str(root / playbook),
            inventory=str(hosts_file),
            envvars=env,
            forks=forks_for(forks, _host_count(inventory), extravars.get("servespec_serial")),
            quiet=True,
            event_handler=handle,
        )
        status = str(runner.status)
    return RunResult(status=status, hosts=hosts)
