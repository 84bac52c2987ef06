"""SGLang releases before --config (0.4.0 to 0.5.2) and before --pp-size (before 0.4.6.post2).

``srt/server_args.py`` of those releases defines neither option: the render puts every
option on the command line, and a pipeline of one stage (the spec's default) renders no
``--pp-size`` and is no ENG001 error.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from servespec.findings import Severity
from servespec.render import render_fleet
from servespec.rules.runner import check_fleet
from servespec.spec.fleet import Fleet, load_fleet

INVENTORY = """apiVersion: servespec/v1
kind: Inventory
hosts:
  h100x8:
    address: 10.0.0.11
    hardware: {gpus: {model: NVIDIA H100 80GB HBM3, count: 8}, interconnect: nvswitch, driver_version: "570.86.15"}
"""


def _fleet(tmp_path: Path, version: str, resources: str = "{tensor_parallel: 2}") -> Fleet:
    (tmp_path / "inventory.yaml").write_text(INVENTORY)
    (tmp_path / "spec.yaml").write_text(
        "apiVersion: servespec/v1\nkind: Deployment\nmetadata: {name: d}\ninventory: inventory.yaml\n"
        "model: {source: meta-llama/Llama-3.1-8B-Instruct, max_model_len: 8192}\n"
        f"engine: {{name: sglang, version: '{version}', options: {{mem_fraction_static: 0.8}}}}\n"
        f"resources: {resources}\nplacement: {{hosts: [h100x8]}}\n"
    )
    return load_fleet([tmp_path / "spec.yaml"])


@pytest.mark.parametrize("version", ["0.4.0", "0.5.2"])
def test_a_release_without_config_gets_every_option_on_the_command_line(tmp_path: Path, version: str) -> None:
    fleet = _fleet(tmp_path, version)
    assert not [f for f in check_fleet(fleet) if f.severity is Severity.ERROR]
    rendered = render_fleet(fleet)
    (container,) = rendered.containers.values()
    argv = list(container.command)
    assert "--config" not in argv and not any(name.endswith("config.yaml") for name in rendered.files)
    tp = "--tensor-parallel-size" if "--tensor-parallel-size" in argv else "--tp-size"  # the release's own flag
    assert argv[argv.index(tp) + 1] == "2" and argv[argv.index("--mem-fraction-static") + 1] == "0.8"
    assert argv[argv.index("--context-length") + 1] == "8192"
    assert "--pp-size" not in argv or version == "0.5.2"


def test_a_release_with_config_keeps_the_config_file(tmp_path: Path) -> None:
    rendered = render_fleet(_fleet(tmp_path, "0.5.23"))
    (container,) = rendered.containers.values()
    assert "--config" in container.command and any(name.endswith("config.yaml") for name in rendered.files)


def test_two_pipeline_stages_on_a_release_without_pp_size_are_eng001(tmp_path: Path) -> None:
    fleet = _fleet(tmp_path, "0.4.0", "{tensor_parallel: 2, pipeline_parallel: 2}")
    found = [f for f in check_fleet(fleet) if f.rule == "ENG001" and "pp_size" in f.message]
    assert found and found[0].severity is Severity.ERROR
