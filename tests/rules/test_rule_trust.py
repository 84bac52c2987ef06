"""Issue 22's false-error and noise classes: each fails on b6452bd and passes after.

SEC001 on token-named numbers, HW003 on Ollama's local GGUF, XInference's default model UID,
ROL002 on servespec's own default, ENG001 on partial catalogs, ``numa: false``, TOPO002's level.
"""

from __future__ import annotations

import json
from pathlib import Path

from servespec.findings import Finding, Severity
from servespec.knowledge.resolve import resolved
from servespec.render import render_fleet
from servespec.rules.runner import check_fleet
from servespec.spec.fleet import Fleet, load_fleet

INVENTORY = """\
apiVersion: servespec/v1
kind: Inventory
defaults: {ssh_user: deploy}
hosts:
  h100:
    address: 10.0.0.1
    hardware:
      gpus: {model: NVIDIA H100 80GB HBM3, count: 8}
      interconnect: nvswitch
      gpu_numa_nodes: [0, 0, 0, 0, 1, 1, 1, 1]
      numa_cpus: {0: "0-47", 1: "48-95"}
      pcie_acs: disabled
      driver_version: "570.124.06"
      memory_gib: 2048
  l4:
    address: 10.0.0.4
    hardware:
      gpus: {model: NVIDIA L4, count: 1}
      interconnect: pcie
      gpu_numa_nodes: [0]
      driver_version: "570.124.06"
      memory_gib: 128
"""


def _fleet(tmp_path: Path, body: str) -> Fleet:
    (tmp_path / "inventory.yaml").write_text(INVENTORY)
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "apiVersion: servespec/v1\nkind: Deployment\nmetadata: {name: d}\ninventory: inventory.yaml\n" + body
    )
    return load_fleet([spec])


def _findings(fleet: Fleet, rule: str) -> list[Finding]:
    return [f for f in check_fleet(fleet) if f.rule == rule]


def test_token_named_numbers_are_not_secrets(tmp_path: Path) -> None:
    fleet = _fleet(
        tmp_path,
        "model: {source: Qwen/Qwen2.5-7B-Instruct, revision: a09a35458c702b33eeacc393d103063234e8bc28}\n"
        "engine:\n  name: vllm\n  version: '0.11.0'\n"
        "  options: {long_prefill_token_threshold: 2048}\n"
        "  env: {KT_GPU_PREFILL_TOKEN_THRESHOLD: 2048, MAX_TOKENS_PER_STEP: '4096'}\n"
        "  extra_args: [--long-prefill-token-threshold, '2048']\n"
        "placement: {hosts: [l4]}\n",
    )
    assert _findings(fleet, "SEC001") == []


def test_a_name_pattern_warns_and_a_known_secret_errors(tmp_path: Path) -> None:
    fleet = _fleet(
        tmp_path,
        "model: {source: Qwen/Qwen2.5-7B-Instruct, revision: a09a35458c702b33eeacc393d103063234e8bc28}\n"
        "engine:\n  name: vllm\n  version: '0.11.0'\n"
        "  env: {MY_SERVICE_TOKEN: plain-words, HF_TOKEN: plain-words}\n"
        "placement: {hosts: [l4]}\n",
    )
    by_path = {f.path: f.severity for f in _findings(fleet, "SEC001")}
    assert by_path == {"engine.env.MY_SERVICE_TOKEN": Severity.WARNING, "engine.env.HF_TOKEN": Severity.ERROR}


def test_ollama_builds_from_a_local_gguf(tmp_path: Path) -> None:
    fleet = _fleet(
        tmp_path,
        "model: {source: /srv/models/Qwen2.5-7B-Instruct-Q4_K_M.gguf, quantization: gguf, gguf_type: Q4_K_M,"
        " max_model_len: 4096}\n"
        "engine: {name: ollama, version: '0.32.15'}\nplacement: {hosts: [l4]}\n",
    )
    assert not [f for f in check_fleet(fleet) if f.severity is Severity.ERROR]
    files = render_fleet(fleet).host_files("d", "l4")
    assert "FROM /srv/models/Qwen2.5-7B-Instruct-Q4_K_M.gguf" in files["Modelfile"]
    # ollama create needs a name: the file's stem, a valid Ollama name (types/model/name.go)
    assert resolved(fleet.deployments[0]).engine.default_served_name(resolved(fleet.deployments[0])) == (
        "qwen2.5-7b-instruct-q4_k_m"
    )


def test_xinference_serves_the_registry_name_by_default(tmp_path: Path) -> None:
    fleet = _fleet(
        tmp_path,
        "model: {source: Qwen/Qwen3-8B, revision: 0123456789abcdef0123456789abcdef01234567, max_model_len: 8192}\n"
        "engine: {name: xinference, version: '1.17.1', options: {model_engine: SGLang}}\n"
        "placement: {hosts: [l4]}\n",
    )
    launch = json.loads(render_fleet(fleet).host_files("d", "l4")["launch.json"])
    # supervisor.py launch_builtin_model: model_uid defaults to model_name (v1.1.0-v3.2.1)
    assert launch["model_name"] == "qwen3" and launch["model_uid"] == "qwen3"


def test_default_health_timeout_follows_the_load_estimate(tmp_path: Path) -> None:
    body = (
        "model: {source: meta-llama/Llama-3.1-405B-Instruct, max_model_len: 8192}\n"
        "engine: {name: tensorrt-llm, version: '1.2.1'}\n"
        "resources: {tensor_parallel: 8}\nplacement: {hosts: [h100]}\n"
    )
    fleet = _fleet(tmp_path, body)
    assert _findings(fleet, "ROL002") == []  # b6452bd warned on its own default
    known = resolved(fleet.deployments[0])
    assert known.load_seconds is not None and known.load_seconds > 900  # 15m is not enough
    assert known.health_timeout_s >= known.load_seconds and known.health_timeout_s % 60 == 0
    set_short = _fleet(tmp_path, body + "rollout: {health_timeout: 15m}\n")
    assert [f.severity for f in _findings(set_short, "ROL002")] == [Severity.WARNING]
    assert resolved(set_short.deployments[0]).health_timeout_s == 900


def test_a_partial_catalog_does_not_call_an_option_unknown(tmp_path: Path) -> None:
    fleet = _fleet(
        tmp_path,
        "model: {source: meta-llama/Llama-3.1-8B-Instruct, max_model_len: 8192}\n"
        "engine: {name: tensorrt-llm, version: '1.2.1', options: {not_in_the_catalog_yet: 1}}\n"
        "placement: {hosts: [h100]}\n",
    )
    (found,) = _findings(fleet, "ENG001")
    assert found.severity is Severity.INFO
    assert "has no option" not in found.message and "partial catalog" in found.message


def test_numa_false_is_off_not_node_zero(tmp_path: Path) -> None:
    fleet = _fleet(
        tmp_path,
        "model: {source: Qwen/Qwen2.5-7B-Instruct, revision: a09a35458c702b33eeacc393d103063234e8bc28}\n"
        "engine: {name: vllm, version: '0.11.0'}\nresources: {gpu_ids: [4], numa: false}\n"
        "placement: {hosts: [h100]}\n",
    )
    assert fleet.deployments[0].spec.resources.numa == "off"
    assert not _findings(fleet, "TOPO001")  # node 0 holds none of GPU 4: that was the false finding
    (container,) = render_fleet(fleet).containers.values()
    assert container.cpuset_mems is None and container.cpuset_cpus is None
    true = _fleet(tmp_path, "model: {source: Qwen/Qwen2.5-7B-Instruct}\nengine: {name: vllm, version: '0.11.0'}\n"
                  "resources: {numa: true}\nplacement: {hosts: [h100]}\n")  # fmt: skip
    assert [f.rule for f in true.findings] == ["SS003"]


def test_acs_is_a_warning_not_a_proof(tmp_path: Path) -> None:
    from servespec.rules import RULES_BY_ID

    assert RULES_BY_ID["TOPO002"].severity is Severity.WARNING


def test_the_role_pulls_no_local_gguf() -> None:
    """`ollama pull /srv/models/x.gguf` fails: a local file is imported by `ollama create` FROM the file."""
    import jinja2
    from ruamel.yaml import YAML
    from tests.conftest import REPO

    tasks = YAML(typ="safe").load((REPO / "playbooks/roles/servespec/tasks/model.yml").read_text())
    (pull,) = [t for t in tasks if "pull" in t.get("servespec_container", {}).get("command", [])]
    when = jinja2.Environment().compile_expression(pull["when"])
    known = {"servespec_after_start": ["modelfile"], "servespec_standin_image": ""}
    assert when(**known, servespec_model_source="qwen2.5:7b")
    assert when(**known, servespec_model_source="hf.co/Qwen/Qwen2.5-7B-Instruct-GGUF")
    assert not when(**known, servespec_model_source="/srv/models/qwen.gguf")


def test_an_unknown_ollama_variable_is_ignored_not_refused(tmp_path: Path) -> None:
    """Ollama reads OLLAMA_* variables (envconfig); one it does not know is ignored: no refusal to cite."""
    fleet = _fleet(
        tmp_path,
        "model: {source: 'qwen2.5:7b', max_model_len: 4096}\n"
        "engine: {name: ollama, version: '0.32.15', options: {no_such_setting: 1}}\nplacement: {hosts: [l4]}\n",
    )
    assert [f.severity for f in _findings(fleet, "ENG001")] == [Severity.WARNING]
