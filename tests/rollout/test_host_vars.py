"""The variables the controller passes to the role are the ones its argument specs declare.

:class:`servespec.rollout.inventory.HostVars` is the one definition of the ``main`` entry
point's variables on the controller side; a renamed, retyped or newly required option in
``meta/argument_specs.yml`` must fail here, not on a host in the middle of a rollout.
"""

from __future__ import annotations

import dataclasses
import json
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from servespec import rollout
from servespec.rollout.inventory import HostVars
from servespec.rollout.runner import playbook_root
from servespec.rollout.verify import verify
from tests.rollout.test_outcomes import FakeHosts, _fleet, _report, _write, fake

__all__ = ["fake"]  # the fixture, imported for the tests below

ROLE = playbook_root() / "roles" / "servespec"
SPEC_TYPES: dict[str, Any] = {"str": str, "path": str, "int": int, "bool": bool, "dict": Mapping[str, str | int]}


def _entry_points() -> dict[str, dict[str, dict[str, Any]]]:
    loaded = YAML(typ="safe").load((ROLE / "meta" / "argument_specs.yml").read_text())
    return {name: entry.get("options") or {} for name, entry in loaded["argument_specs"].items()}


def _spec_type(option: dict[str, Any]) -> Any:
    if option["type"] == "list":
        element = SPEC_TYPES[option["elements"]]
        return tuple[element, ...]
    if "choices" in option:
        return typing.Literal[tuple(option["choices"])]
    return SPEC_TYPES[option["type"]]


def test_host_vars_are_the_main_entry_points_options() -> None:
    options = _entry_points()["main"]
    hints = typing.get_type_hints(HostVars)
    fields = {f"servespec_{item.name}": item for item in dataclasses.fields(HostVars)}
    assert sorted(fields) == sorted(set(options) - set(HostVars.ROLE_ONLY))
    for name, item in fields.items():
        option = options[name]
        assert hints[item.name] == _spec_type(option), name
        required = item.default is dataclasses.MISSING and item.default_factory is dataclasses.MISSING
        assert required == bool(option.get("required")), name
        if not required:
            default = list(item.default) if isinstance(item.default, tuple) else item.default
            assert default == option["default"], name


def test_the_roles_defaults_are_the_specs() -> None:
    options = _entry_points()["main"]
    defaults = YAML(typ="safe").load((ROLE / "defaults" / "main.yml").read_text())
    assert defaults == {name: option["default"] for name, option in options.items() if "default" in option}


def test_host_vars_are_frozen_and_plain() -> None:
    host = HostVars(deployment="d", run={"run_id": "0123456789ab"}, model_paths=("/m",))
    with pytest.raises(dataclasses.FrozenInstanceError):
        host.image = "x"  # type: ignore[misc]
    values = host.to_vars()
    assert values["servespec_model_paths"] == ["/m"]
    assert values["servespec_run"] == {"run_id": "0123456789ab"}
    assert set(values) == {f"servespec_{item.name}" for item in dataclasses.fields(HostVars)}


ENTRY_POINT = {
    "apply.yml": "main",
    "rollback.yml": "main",
    "status.yml": "status",
    "destroy.yml": "destroy",
    "verify.yml": "bench",
}


def test_every_run_passes_only_its_entry_points_options(tmp_path: Path, fake: FakeHosts) -> None:
    paths = _write(tmp_path, {"d": (["h1", "h2"], "")})
    rollout.apply(_fleet(paths), rollout.ApplyOptions(), tmp_path / "work")
    fake.reports = {"h1": _report(2, (1, 2)), "h2": _report(2, (1, 2))}
    rollout.rollback(_fleet(paths), None, rollout.ApplyOptions())
    rollout.destroy(_fleet(paths), rollout.ApplyOptions())
    with_slo = paths[0].read_text() + "slo: {workload: {prompt_tokens: 8, output_tokens: 4, concurrency: 1}, "
    paths[0].write_text(with_slo + "targets: {error_rate: 0}}\n")
    verify(_fleet(paths))
    rollout.apply(_fleet(paths), rollout.ApplyOptions(verify=True), tmp_path / "work2")
    applied = [hosts for playbook, hosts in fake.passed if playbook == "apply.yml"]
    assert "servespec_verify" not in applied[0]["h1"] or not applied[0]["h1"]["servespec_verify"]
    assert json.loads(applied[-1]["h1"]["servespec_verify"])["targets"] == {"error_rate": 0}
    benched = [hosts for playbook, hosts in fake.passed if playbook == "verify.yml"]
    assert [sorted(hosts) for hosts in benched] == [["h1", "h2"]]
    options = _entry_points()
    seen = set()
    for playbook, hosts in fake.passed:
        declared = options[ENTRY_POINT[playbook]]
        required = {name for name, option in declared.items() if option.get("required")}
        for variables in hosts.values():
            assert set(variables) <= set(declared), playbook
            assert required <= set(variables), playbook
        seen.add(playbook)
    assert seen == set(ENTRY_POINT)
