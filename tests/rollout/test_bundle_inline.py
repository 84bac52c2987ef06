"""The rendered files reach the host inside the allocate module's arguments (issue 13 item 4).

preflight.yml used to upload the bundle with ansible.builtin.copy (a remote stat module run,
a temporary folder, an sftp transfer and a copy module run: five SSH sessions and two module
runs per host) before servespec_state unpacked it. Now the controller's bundle is read with
the file lookup and sent with servespec_state itself. These tests run the role's own task on
a local connection: the texts arrive byte for byte, template characters included (a chat
template is Jinja), and the result does not echo them back.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from servespec.rollout.inventory import inventory_for
from servespec.rollout.runner import Report, playbook_root, run_playbook
from servespec.spec.fleet import HostView, InventoryDoc
from servespec.spec.models import Host, Inventory
from tests.modules import role_module

PREFLIGHT = playbook_root() / "roles" / "servespec" / "tasks" / "preflight.yml"
HOSTILE = {
    "args.json": json.dumps(["llama-server", "--alias", "{{ 7 * 6 }}", "{% raw %}"]),
    "chat_template.jinja": "{{ lookup('ansible.builtin.pipe', 'touch PWNED') }}"
    "{% for m in messages %}{{ m }}{% endfor %}{#",
    "Modelfile": 'FROM x\nSYSTEM """trailing   \n\n"""\n\n',
    "nested/config.yaml": "port: 8080\n",
}


def _allocate_task() -> dict[str, Any]:
    tasks = yaml.safe_load(PREFLIGHT.read_text())
    found = [t for t in tasks if "servespec_state" in t and t["servespec_state"].get("action") == "allocate"]
    assert len(found) == 1, "preflight.yml allocates once"
    return found[0]


def test_preflight_uploads_nothing_before_allocating() -> None:
    tasks = yaml.safe_load(PREFLIGHT.read_text())
    bundle_copies = [t for t in tasks if "ansible.builtin.copy" in t and "servespec_staging" in str(t)]
    assert bundle_copies == []
    assert "servespec_staging" in _allocate_task()["servespec_state"]["bundle_content"]


def _run_allocate(tmp_path: Path, bundle_text: str) -> Any:
    root = tmp_path / "state"
    root.mkdir()
    staging = tmp_path / "bundle.json"
    staging.write_text(bundle_text)
    playbook = tmp_path / "allocate.yml"
    play = {"hosts": "servespec_targets", "gather_facts": False, "tasks": [_allocate_task()]}
    playbook.write_text(yaml.safe_dump([play]))
    local = Host(connection="local")
    inventory = Inventory(apiVersion="servespec/v1", kind="Inventory", hosts={"local": local})
    view = HostView(name="local", spec=local, inventory=InventoryDoc(spec=inventory, document=None), hardware=None)
    extravars = {
        "servespec_deployment": "demo",
        "servespec_digest": "abc",
        "servespec_staging": str(staging),
        "servespec_state_root": str(root),
        "servespec_existing_revision": 0,
    }
    return run_playbook(str(playbook), inventory_for({"local": (view, {})}), extravars).hosts["local"]


def test_the_role_task_unpacks_the_bundle_byte_for_byte(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("ansible_runner")
    monkeypatch.chdir(tmp_path)
    host = _run_allocate(tmp_path, json.dumps(HOSTILE))
    assert host.ok, host.error
    assert host.reports[Report.ALLOCATED]["number"] == 1
    folder = tmp_path / "state" / "demo" / "revisions" / "1"
    assert {name: (folder / name).read_text() for name in HOSTILE} == HOSTILE
    assert not (tmp_path / "PWNED").exists()
    echoed = json.dumps(list(host.results.values()))
    assert "touch PWNED" not in echoed


def test_a_bundle_that_is_not_json_fails_the_host_with_a_message(tmp_path: Path) -> None:
    pytest.importorskip("ansible_runner")
    host = _run_allocate(tmp_path, "not json {")
    assert not host.ok
    assert host.error.startswith("bad bundle:"), host.error
    assert "Traceback" not in host.error


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("not json", "Expecting value"),
        (json.dumps({"../escape": "x"}), "refusing file name"),
        ("[1, 2]", "not a mapping"),
        (json.dumps({"a": 1}), "not a mapping"),
    ],
)
def test_a_bad_bundle_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, content: str, problem: str) -> None:
    module = role_module(monkeypatch, "servespec_state", "servespec_state_under_test")
    params = {"deployment": "demo", "digest": "abc", "bundle": None, "bundle_content": content}
    with pytest.raises(ValueError, match=problem):
        module._unpack(module._bundle_files(params), str(tmp_path))
