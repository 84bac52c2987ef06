"""A host cannot rename the controller files the role reads for it (issue 20 item 1).

A module's result may carry ``ansible_facts``. With fact injection on, Ansible made each of them
a variable that outranks the inventory's, so a compromised host could answer its first module
run with ``servespec_staging: ~/.ssh/id_ed25519`` and the controller's ``lookup('file')`` (or
``copy src:``) read that file and sent it to the host. Now fact injection is off for every run,
the controller files travel as one extra var (which outranks everything a host can reach), the
role binds their names to it, and checks each path lies in the run's work folder before reading.

The role's own preflight tasks run here on a local connection, after a stand-in module that
answers as a compromised host would.
"""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from servespec.rollout import RolloutError, inventory, runner
from servespec.rollout.inventory import HostVars
from servespec.spec.fleet import HostView, InventoryDoc
from servespec.spec.models import Host, Inventory

PLAYBOOKS = ("apply.yml", "rollback.yml", "status.yml", "destroy.yml", "discover.yml")

HOSTILE_MODULE = """#!/usr/bin/python
import json
from ansible.module_utils.basic import AnsibleModule

def main():
    module = AnsibleModule(argument_spec={"facts": {"type": "str", "required": True}})
    module.exit_json(changed=False, ansible_facts=json.loads(module.params["facts"]))

main()
"""


@pytest.fixture
def captured(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """ansible_runner.run replaced by a recorder of what the controller asks for."""
    seen: dict[str, Any] = {}

    def run(**kwargs: Any) -> Any:
        seen.update(kwargs)
        extravars = Path(kwargs["private_data_dir"]) / "env" / "extravars"
        seen["extravars_text"] = extravars.read_text() if extravars.exists() else ""
        seen["inventory_text"] = Path(kwargs["inventory"]).read_text()
        return types.SimpleNamespace(status="successful")

    monkeypatch.setitem(sys.modules, "ansible_runner", types.SimpleNamespace(run=run))
    return seen


def _local() -> HostView:
    local = Host(connection="local")
    spec = Inventory(apiVersion="servespec/v1", kind="Inventory", hosts={"local": local})
    return HostView(name="local", spec=local, inventory=InventoryDoc(spec=spec, document=None), hardware=None)


@pytest.mark.parametrize("playbook", PLAYBOOKS)
def test_every_run_turns_fact_injection_off(captured: dict[str, Any], playbook: str) -> None:
    inventory.run_on(playbook, {"local": (_local(), {"servespec_deployment": "d"})}, {}, None)
    assert captured["envvars"]["ANSIBLE_INJECT_FACT_VARS"] == "False"


def test_controller_paths_travel_as_extra_vars_only(captured: dict[str, Any], tmp_path: Path) -> None:
    work = tmp_path / "work"
    paths = {key: str(work / key / "local.json") for key in inventory.CONTROLLER_FILES}
    variables = HostVars(deployment="d", run={"run_id": "0123456789ab"}, **paths).to_vars()  # type: ignore[arg-type]
    inventory.run_on("apply.yml", {"local": (_local(), variables)}, {inventory.WORK: str(work)}, None)
    for key, path in paths.items():
        assert f"servespec_{key}:" not in captured["inventory_text"]
        assert path in captured["extravars_text"]
    assert f"{inventory.FILES}:\n  local:\n" in captured["extravars_text"]


@pytest.mark.parametrize("path", ["/etc/shadow", "{work}/../key", "{work}/./x", "{work}//x", "{work}", "{work}x/y"])
def test_a_controller_path_outside_the_work_folder_is_refused(
    captured: dict[str, Any], tmp_path: Path, path: str
) -> None:
    work = str(tmp_path / "work")
    variables = HostVars(deployment="d", run={}, staging=path.format(work=work)).to_vars()
    with pytest.raises(RolloutError, match="servespec_staging is not inside the run's work folder"):
        inventory.run_on("apply.yml", {"local": (_local(), variables)}, {inventory.WORK: work}, None)
    assert captured == {}


def _compromised_run(tmp_path: Path, host_vars: HostVars, facts: dict[str, Any]) -> runner.HostResult:
    """The role's preflight tasks on a local host whose first module answers with ``facts``."""
    folder = tmp_path / "play"
    (folder / "library").mkdir(parents=True)
    (folder / "library" / "servespec_hostile_facts.py").write_text(HOSTILE_MODULE)
    tasks = [
        {"name": "Answer as a compromised host", "servespec_hostile_facts": {"facts": json.dumps(facts)}},
        {"name": "Preflight", "ansible.builtin.import_role": {"name": "servespec", "tasks_from": "preflight.yml"}},
    ]
    play = [{"hosts": "servespec_targets", "gather_facts": False, "tasks": tasks}]
    (folder / "play.yml").write_text(json.dumps(play))
    extravars = {"servespec_work": str(tmp_path / "work"), "servespec_state_root": str(tmp_path / "state")}
    result = inventory.run_on(str(folder / "play.yml"), {"local": (_local(), host_vars.to_vars())}, extravars, None)
    return result.hosts["local"]


def _written(root: Path) -> str:
    return "".join(path.read_text(errors="replace") for path in sorted(root.rglob("*")) if path.is_file())


@pytest.mark.parametrize("inject", ["False", "True"])
def test_a_host_that_renames_controller_files_in_its_facts_reads_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, inject: str
) -> None:
    """Each layer holds alone: with fact injection forced back on, the extra var and the role's binding still do."""
    ansible_runner = pytest.importorskip("ansible_runner")
    real = ansible_runner.run

    def run(**kwargs: Any) -> Any:
        return real(**{**kwargs, "envvars": {**kwargs["envvars"], "ANSIBLE_INJECT_FACT_VARS": inject}})

    monkeypatch.setattr(ansible_runner, "run", run)
    monkeypatch.chdir(tmp_path)
    work = tmp_path / "work"
    (work / "staging").mkdir(parents=True)
    (work / "staging" / "local.json").write_text(json.dumps({"ours.txt": "rendered"}))
    (work / "secrets").mkdir()
    (work / "secrets" / "d-local.env").write_text("KEY=ours\n")
    # Stand-ins for the fleet's SSH key: controller files outside the work folder (a bundle, to be unpacked).
    stolen = tmp_path / "controller"
    stolen.mkdir()
    (stolen / "id_ed25519").write_text(json.dumps({"stolen.txt": "CANARY-KEY"}))
    (stolen / "secret").write_text("CANARY-SECRET\n")
    facts = {
        "servespec_staging": str(stolen / "id_ed25519"),
        "servespec_secrets": str(stolen / "secret"),
        "servespec_files": {"staging": str(stolen / "id_ed25519"), "secrets": str(stolen / "secret")},
        "servespec_controller_files": {"local": {"staging": str(stolen / "id_ed25519")}},
        "servespec_work": "/",
        "servespec_existing_revision": 0,
    }
    holder = {"run_id": "0123456789ab"}
    apply = HostVars(
        deployment="demo",
        run=holder,
        digest="ab",
        staging=str(work / "staging" / "local.json"),
        secrets=str(work / "secrets" / "d-local.env"),
    )
    _compromised_run(tmp_path, apply, facts)
    revision = tmp_path / "state" / "demo" / "revisions" / "1"
    assert json.loads(json.dumps({p.name: p.read_text() for p in revision.iterdir() if p.is_file()})) == {
        "ours.txt": "rendered",
        "secrets.env": "KEY=ours\n",
    }

    # A rollback reads no controller file: a host claiming servespec_existing_revision 0 gets no bundle.
    (tmp_path / "play").rename(tmp_path / "play-apply")
    _compromised_run(tmp_path, HostVars(deployment="demo", run=holder, existing_revision=1), facts)
    assert not (tmp_path / "state" / "demo" / "revisions" / "2").exists()
    assert "CANARY" not in _written(tmp_path / "state")
