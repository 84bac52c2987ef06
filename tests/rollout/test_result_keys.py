"""The controller reads the role's modules' results by the kind they return, never by task name.

A renamed task once made `apply` report revisions as "- -> -" while the host had allocated
one. Now each module the controller reads returns ``servespec_result: {"kind": ...}`` and
the runner files it under that kind, whatever the task that ran it is called.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

from servespec.rollout import state
from servespec.rollout.inventory import inventory_for
from servespec.rollout.runner import RESULT_KEY, Report, playbook_root, run_playbook
from servespec.spec.fleet import HostView, InventoryDoc
from servespec.spec.models import Host, Inventory

COMMON = playbook_root() / "roles" / "servespec" / "module_utils" / "servespec_common.py"


def _common() -> ModuleType:
    spec = importlib.util.spec_from_file_location("servespec_common_for_test", COMMON)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_modules_and_the_controller_name_the_same_kinds() -> None:
    common = _common()
    assert common.RESULT_KEY == RESULT_KEY
    kinds = {name: value for name, value in vars(Report).items() if name.isupper()}
    assert kinds == {name: getattr(common, name) for name in kinds}


# Task names that match none of the role's: the controller must not care what a task is called.
PLAYBOOK = """
- hosts: servespec_targets
  gather_facts: false
  tasks:
    - name: Step one
      servespec_state: {{deployment: demo, action: allocate, digest: abc, state_root: "{root}"}}
    - name: Step two
      servespec_state: {{deployment: demo, action: mark, number: 1, status: good, state_root: "{root}"}}
    - name: Step three
      servespec_status: {{deployments: [demo], state_root: "{root}"}}
    - name: Step four
      servespec_collect: {{model_cache: "{root}"}}
"""


def test_results_are_found_by_kind_whatever_the_tasks_are_called(tmp_path: Path) -> None:
    pytest.importorskip("ansible_runner")
    root = tmp_path / "state"
    root.mkdir()
    playbook = tmp_path / "renamed.yml"
    playbook.write_text(PLAYBOOK.format(root=root))
    local = Host(connection="local")
    inventory = Inventory(apiVersion="servespec/v1", kind="Inventory", hosts={"local": local})
    view = HostView(name="local", spec=local, inventory=InventoryDoc(spec=inventory, document=None), hardware=None)
    result = run_playbook(str(playbook), inventory_for({"local": (view, {})}), {})
    host = result.hosts["local"]
    assert host.ok, host.error
    assert host.reports[Report.ALLOCATED]["number"] == 1
    assert host.reports[Report.GOOD]["number"] == 1
    report = state.host_report(result.hosts, "local", "demo")
    assert report["state"]["good"] == 1
    assert report["state"]["revisions"][0]["status"] == "good"
    assert "nproc.txt" in host.reports[Report.OUTPUTS]["outputs"]
