"""The real playbooks, against a real test host, with template payloads in every string they can reach (issue 9).

Each payload would create ``/tmp/pwned-<field>`` if Ansible (or Jinja, or a shell) ever
evaluated it, on the controller or on the host. The fleet is loaded from benign files and
then given its payloads directly (model_copy, no validation), bypassing the loader's
grammars: the rollout layer must be safe by itself. The hostile host plants a state.json and
a lock holder whose values are payloads too. The engine is the STAND-IN image (it starts in
a second); nothing here says anything about inference.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
from pathlib import Path
from typing import Any

import pytest

from servespec import rollout
from servespec.spec.fleet import Fleet, load_fleet
from tests.conftest import run_cli
from tests.rollout.conftest import RemoteHost, images
from tests.rollout.helpers import in_checkout, standin_spec

pytestmark = pytest.mark.slow
NAME = "hostile"


def payload(field: str) -> str:
    """``{{ }}`` payload for ``field``; it reaches /tmp without a '/' so that it can sit in a file name."""
    return "{{ lookup('pipe', 'cd; cd ..; cd tmp; touch pwned-" + field + "') }}"


def block(field: str) -> str:
    """The ``{% %}`` statement form of :func:`payload`."""
    return "{% set x = lookup('pipe', 'cd; cd ..; cd tmp; touch pwned-" + field + "') %}x"


def markers(host: RemoteHost) -> list[str]:
    """Marker files on the controller and on the host."""
    here = [p.name for p in Path("/tmp").glob("pwned-*")]
    there = host.sh("ls /tmp | grep '^pwned-' || true", check=False).split()
    return sorted(here + [f"host:{name}" for name in there])


def clear_markers(host: RemoteHost) -> None:
    for path in Path("/tmp").glob("pwned-*"):
        path.unlink()
    host.sh("rm -f /tmp/pwned-*", check=False)


def put_file(host: RemoteHost, path: str, text: str) -> None:
    """Write ``text`` to ``path`` on the host without a shell (the name holds quotes and braces)."""
    code = (
        "import os, sys; os.makedirs(os.path.dirname(sys.argv[1]), exist_ok=True); "
        "open(sys.argv[1], 'w').write(sys.argv[2])"
    )
    subprocess.run(["docker", "exec", host.container, "python3", "-c", code, path, text], check=True)


def hostile_fleet(fleet: Fleet, key: Path, archive: str) -> None:
    """Payloads in the inventory's and the spec's string fields, past every load-time check."""
    inventory = fleet.inventories[0]
    defaults = inventory.spec.defaults.model_copy(update={"ssh_key": str(key)})
    inventory.spec = inventory.spec.model_copy(update={"defaults": defaults})
    doc = fleet.deployments[0]
    spec = doc.spec
    engine = spec.engine.model_copy(
        update={
            "image": "standin/" + payload("image"),
            "image_archive": archive,
            "env": {"PAYLOAD": payload("env"), "BLOCK": block("env-block")},
            "extra_args": ["--alias", payload("extra-args")],
        }
    )
    model = spec.model.model_copy(update={"source": "/srv/models/" + payload("model-source") + ".gguf"})
    metadata = spec.metadata.model_copy(update={"labels": {"team": payload("label"), "x": block("label-block")}})
    doc.spec = spec.model_copy(update={"engine": engine, "model": model, "metadata": metadata})


def hostile_state(host: RemoteHost) -> None:
    """A compromised host: state.json and the lock holder carry payloads where numbers and ids belong."""
    state = {
        "version": 1,
        "deployment": NAME,
        "current": payload("state-current"),
        "good": 1,
        "revisions": [{"number": payload("state-number"), "digest": block("state-digest"), "status": "good"}],
    }
    lock = {"controller": socket.gethostname(), "pid": 2**22 + 4321, "run_id": payload("lock-run-id")}
    put_file(host, f"/var/lib/servespec/{NAME}/state.json", json.dumps(state))
    put_file(host, f"/var/lib/servespec/{NAME}/lock/holder.json", json.dumps(lock))


@pytest.fixture
def setup(tmp_path: Path, clean_hosts: list[RemoteHost], ssh_key: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    images.standin_image()
    host = clean_hosts[0]
    clear_markers(host)
    host.sh("mkdir -p /srv/models")
    (tmp_path / "inventory.yaml").write_text(
        "apiVersion: servespec/v1\nkind: Inventory\n"
        f"defaults: {{ssh_user: root, ssh_key: {ssh_key}, become: false}}\n"
        f"hosts:\n  {host.name}:\n    address: {host.address}\n"
        "    hardware: {gpus: {count: 0}, cpus: 2, memory_gib: 8}\n"
    )
    spec = standin_spec(tmp_path / "spec.yaml", NAME, [host.name], images.archive("servespec-standin:latest"))
    key = tmp_path / ("key" + payload("ssh-key"))
    shutil.copyfile(ssh_key, key)
    key.chmod(0o600)
    archive = tmp_path / ("standin" + payload("archive") + ".tar")
    os.link(tmp_path / in_checkout(images.archive("servespec-standin:latest"), tmp_path), archive)
    monkeypatch.setenv("E2E_KEY", "hostile-secret-value")
    monkeypatch.chdir(tmp_path)
    yield host, spec, key, archive.name
    clear_markers(host)


def test_no_payload_runs_anywhere(setup: Any, tmp_path: Path, ssh_key: Path) -> None:
    host, spec, hostile_key, archive = setup
    put_file(host, "/srv/models/" + payload("model-source") + ".gguf", "stand-in")

    # A key path that is a payload fails the key path grammar where the inventory is written:
    # refused before ssh or Ansible sees it (tests/security checks the writer tags it unsafe anyway).
    fleet = load_fleet([spec])
    hostile_fleet(fleet, hostile_key, archive)
    for run in (rollout.status, rollout.plan_fleet, lambda f: rollout.apply(f, rollout.ApplyOptions(), tmp_path)):
        with pytest.raises(rollout.RolloutError, match="ssh_key"):
            run(fleet)
    assert markers(host) == []
    key = ssh_key

    # A compromised host: status, plan and apply name the problem and use none of its values.
    hostile_state(host)
    fleet = load_fleet([spec])
    hostile_fleet(fleet, key, archive)
    rows = rollout.status(fleet)
    assert rows[0].error.startswith("state.json"), rows[0]
    planned = rollout.plan_fleet(fleet)
    assert planned.actions == [] and planned.unread[0].error.startswith("state.json")
    _, outcomes = rollout.apply(fleet, rollout.ApplyOptions(standin_image="servespec-standin:latest"), tmp_path)
    assert [o.result for o in outcomes] == ["failed"] and "state.json" in outcomes[0].error
    for command in ("status", "plan"):
        result = run_cli(command, str(spec))
        assert result.exit_code == 1 and "state.json" in result.output, result.output
    assert markers(host) == []

    # A clean host, a spec and inventory full of payloads: the apply succeeds and runs none of them.
    host.sh(f"rm -rf /var/lib/servespec/{NAME}")
    fleet = load_fleet([spec])
    hostile_fleet(fleet, key, archive)
    _, outcomes = rollout.apply(fleet, rollout.ApplyOptions(standin_image="servespec-standin:latest"), tmp_path)
    assert [o.result for o in outcomes] == ["ok"], outcomes
    container = json.loads(host.sh(f"cat /etc/servespec/{NAME}/.servespec/container.json"))
    assert container["image"] == "standin/" + payload("image")  # the value arrived as written
    assert rollout.status(fleet)[0].healthy
    # The lock of a dead run of this controller whose id is a payload: the report is refused, the lock kept.
    hostile_lock = {"controller": socket.gethostname(), "pid": 2**22 + 4321, "run_id": payload("lock-run-id")}
    put_file(host, f"/var/lib/servespec/{NAME}/lock/holder.json", json.dumps(hostile_lock))
    doc = fleet.deployments[0]
    doc.spec = doc.spec.model_copy(
        update={"engine": doc.spec.engine.model_copy(update={"env": {"PAYLOAD": block("env-2")}})}
    )
    _, outcomes = rollout.apply(fleet, rollout.ApplyOptions(standin_image="servespec-standin:latest"), tmp_path)
    assert [o.result for o in outcomes] == ["failed"] and outcomes[0].error.startswith("lock holder.json"), outcomes
    host.sh(f"rm -rf /var/lib/servespec/{NAME}/lock")
    assert rollout.status(fleet)[0].revision == 1  # the host was left as it was

    # discover through the same hostile inventory.
    failed = rollout.discover(fleet.inventories[0], tmp_path / "facts")
    assert failed == {}
    assert markers(host) == []
