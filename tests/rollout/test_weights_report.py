"""A host's weights report is type-checked like every other report (issue 20 item 4).

The progress handler formatted a host's ``weights_staged`` report as it came: a byte count sent
as a string raised a TypeError inside ansible-runner's event handler, mid-batch, and the other
hosts of the batch were left mid-change with their locks held. Now the report is checked
(:func:`servespec.rollout.reported.checked_weights`) where the controller reads it and where the
role does: a bad one fails its own host, with the field named, and nothing else.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from servespec.rollout.inventory import inventory_for
from servespec.rollout.runner import RESULT_KEY, HostResult, Report, _collect, playbook_root, run_playbook
from servespec.rollout.staging import weights_progress
from servespec.spec.fleet import HostView, InventoryDoc
from servespec.spec.models import Host, Inventory

COMMIT = "0123456789abcdef0123456789abcdef01234567"
GOOD = {
    "kind": Report.WEIGHTS,
    "repo": "acme/tiny",
    "commit": COMMIT,
    "files": 3,
    "cached_files": 1,
    "cached_bytes": 1 << 30,
    "download_bytes": 3 << 30,
    "partial_bytes": 0,
    "downloaded_bytes": 0,
    "action": "fetch",
}
ARCHIVE = {
    "kind": Report.WEIGHTS,
    "repo": "acme/tiny",
    "commit": COMMIT,
    "archive": "tiny.tar",
    "archive_bytes": 10,
    "present": False,
    "unpacked_bytes": 10,
    "action": "unpack",
}
BAD = {
    "string byte count": GOOD | {"cached_bytes": "1073741824"},
    "negative": GOOD | {"download_bytes": -1},
    "huge": GOOD | {"partial_bytes": 10**30},
    "NaN": GOOD | {"cached_bytes": float("nan")},
    "float": GOOD | {"files": 3.0},
    "bool": GOOD | {"cached_files": True},
    "missing key": {k: v for k, v in GOOD.items() if k != "download_bytes"},
    "list": GOOD | {"downloaded_bytes": [1]},
    "archive string count": ARCHIVE | {"unpacked_bytes": "10"},
    "archive missing present": {k: v for k, v in ARCHIVE.items() if k != "present"},
    "repo not a string": GOOD | {"repo": {"x": 1}},
}


def _ok(host: str, report: dict[str, Any]) -> dict[str, Any]:
    return {"event": "runner_on_ok", "event_data": {"host": host, "task": "Stage", "res": {RESULT_KEY: report}}}


@pytest.mark.parametrize("report", BAD.values(), ids=list(BAD))
def test_a_bad_weights_report_fails_its_host_only(report: dict[str, Any]) -> None:
    seen: list[dict[str, Any]] = []
    handle = weights_progress(seen.append)
    assert handle is not None
    hosts: dict[str, HostResult] = {}
    for event in (_ok("bad", report), _ok("good", GOOD), _ok("archive", ARCHIVE)):
        _collect(hosts, event)
        handle(event)  # raised TypeError mid-batch before
    assert not hosts["bad"].ok and hosts["bad"].stage == "Stage"
    assert hosts["bad"].error.startswith("weights report from the host is not what servespec writes: ")
    assert Report.WEIGHTS not in hosts["bad"].reports
    assert hosts["good"].ok and hosts["good"].reports[Report.WEIGHTS] == GOOD
    assert hosts["archive"].ok and hosts["archive"].reports[Report.WEIGHTS] == ARCHIVE
    lines = {(e["event"], e["event_data"]["host"]) for e in seen if "res" not in e["event_data"]}
    assert lines == {("runner_on_failed", "bad"), ("runner_on_ok", "good"), ("runner_on_ok", "archive")}
    failed = next(e for e in seen if e["event"] == "runner_on_failed")
    assert failed["event_data"]["task"] == hosts["bad"].error


def test_the_roles_check_agrees_with_the_controllers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The role's own check (vars/main.yml, run by ansible.builtin.assert) fails each bad report and passes the good."""
    pytest.importorskip("ansible_runner")
    monkeypatch.chdir(tmp_path)
    cases = {"good": GOOD, "archive": ARCHIVE, **{k.replace(" ", "_"): v for k, v in BAD.items() if k != "NaN"}}
    role_vars = playbook_root() / "roles" / "servespec" / "vars" / "main.yml"
    task = {
        "name": "Check",
        "ansible.builtin.assert": {"that": "not servespec_report_bad", "quiet": True},
        # As JSON: Ansible 2.19 loads an extra var's `!unsafe "10"` as the integer 10, a registered result keeps "10".
        "vars": {"servespec_report": "{{ (servespec_reports | from_json)[item] }}"},
        "loop": sorted(cases),
        "ignore_errors": True,
        "register": "servespec_checks",
    }
    record = {
        "name": "Record",
        "ansible.builtin.copy": {
            "content": "{{ servespec_checks.results | items2dict(key_name='item', value_name='failed') | to_json }}",
            "dest": str(tmp_path / "verdicts.json"),
            "mode": "0600",
        },
    }
    play = [{"hosts": "servespec_targets", "gather_facts": False, "tasks": [task, record]}]
    play[0]["vars_files"] = [str(role_vars)]
    (tmp_path / "play.yml").write_text(json.dumps(play))
    local = Host(connection="local")
    inventory = Inventory(apiVersion="servespec/v1", kind="Inventory", hosts={"local": local})
    view = HostView(name="local", spec=local, inventory=InventoryDoc(spec=inventory, document=None), hardware=None)
    result = run_playbook(
        str(tmp_path / "play.yml"), inventory_for({"local": (view, {})}), {"servespec_reports": json.dumps(cases)}
    )
    assert result.hosts["local"].touched
    verdicts = json.loads((tmp_path / "verdicts.json").read_text())
    assert verdicts == {name: name not in ("good", "archive") for name in cases}
