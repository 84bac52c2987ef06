"""MEM006, PAR005 and HW006 read the facts file's ``runtime`` part, from saved outputs to findings.

The case files (cases/MEM006.yaml, PAR005.yaml, HW006.yaml) cover each rule's passing and
failing specs; these tests follow the facts from the host's outputs (tests/data/facts/runtime/)
through ``deploy discover --from-outputs`` and the loader into the rules.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest
from tests.conftest import REPO
from tests.modules import load_file

from servespec.discover.facts import facts_from_outputs, write_facts
from servespec.discover.parsers import gpu_processes, parse_docker_ps, parse_pid_containers
from servespec.findings import Finding
from servespec.rules.runner import check_fleet
from servespec.spec.fleet import load_fleet

OUTPUTS = REPO / "tests" / "data" / "facts" / "runtime"
"""Saved outputs of one 8-GPU host: GPU 0 runs servespec-qwen-chat, GPU 5 another process (made for these tests)."""
OWN = "servespec-qwen-chat"

SPEC = """\
apiVersion: servespec/v1
kind: Deployment
metadata: {{name: {name}}}
inventory: hosts.yaml
model: {{source: {source}, max_model_len: 8192{model_extra}}}
engine: {{name: vllm, version: "0.11.0"}}
resources: {{gpu_ids: {gpu_ids}}}
placement: {{hosts: [gpu-01]}}
{extra}"""

INVENTORY = "apiVersion: servespec/v1\nkind: Inventory\nhosts:\n  gpu-01: {facts: facts/gpu-01.json}\n"


def _fleet(
    tmp_path: Path,
    facts: dict[str, object],
    *,
    name: str = "qwen-chat",
    source: str = "Qwen/Qwen2.5-7B-Instruct",
    gpu_ids: str = "[0]",
    extra: str = "",
    model_extra: str = "",
) -> list[Finding]:
    (tmp_path / "facts").mkdir(exist_ok=True)
    (tmp_path / "facts" / "gpu-01.json").write_text(json.dumps(facts))
    (tmp_path / "hosts.yaml").write_text(INVENTORY)
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC.format(name=name, source=source, gpu_ids=gpu_ids, extra=extra, model_extra=model_extra))
    return check_fleet(load_fleet([spec]))


def _rules(findings: list[Finding], *rules: str) -> list[Finding]:
    return [f for f in findings if f.rule in rules]


# ---- discover: the outputs become runtime facts


def test_outputs_give_every_runtime_fact() -> None:
    runtime = facts_from_outputs(OUTPUTS / "gpu-01", "gpu-01")["runtime"]
    assert runtime == {
        "docker_version": "28.1.1",
        "nvidia_runtime": True,
        "cdi": True,
        "model_cache_free_gib": 62.3,
        "busy_gpus": [0, 5],
        "gpu_processes": [{"gpu": 0, "container": OWN}, {"gpu": 5, "container": None}],
    }


def test_a_process_in_another_container_or_none_is_foreign() -> None:
    gpus = "index, pci.bus_id\n0, 00000000:18:00.0\n1, 00000000:2A:00.0\n"
    apps = "gpu_bus_id, pid, used_memory [MiB]\n00000000:18:00.0, 10, 1 MiB\n00000000:2A:00.0, 11, 1 MiB\n"
    ours, theirs = "a" * 64, "b" * 64
    ps = f"{ours} servespec-qwen-chat\n{theirs} jupyter\n"
    assert gpu_processes(apps, gpus, f"10 {ours}\n11 {theirs}\n", ps) == [
        {"gpu": 0, "container": OWN},
        {"gpu": 1, "container": None},
    ]
    assert gpu_processes(apps, gpus, "10 -\n11 -\n", ps) == [
        {"gpu": 0, "container": None},
        {"gpu": 1, "container": None},
    ]


def test_listings_hold_only_what_they_should() -> None:
    ident = "c" * 64
    assert parse_docker_ps(f"{ident} servespec-a,legacy-link\nshort name\n{ident} two words here\n") == {
        ident: "servespec-a"
    }
    assert parse_pid_containers(f"12 {ident}\n13 -\nx {ident}\n14 {ident[:60]}\n") == {"12": ident}


def test_without_both_container_listings_only_busy_gpus_are_recorded(tmp_path: Path) -> None:
    host = tmp_path / "gpu-01"
    shutil.copytree(OUTPUTS / "gpu-01", host)
    (host / "docker-ps.txt").unlink()
    runtime = facts_from_outputs(host, "gpu-01")["runtime"]
    assert runtime["busy_gpus"] == [0, 5] and "gpu_processes" not in runtime


def test_an_empty_docker_ps_is_an_answer(tmp_path: Path) -> None:
    host = tmp_path / "gpu-01"
    shutil.copytree(OUTPUTS / "gpu-01", host)
    (host / "docker-ps.txt").write_text("")
    assert facts_from_outputs(host, "gpu-01")["runtime"]["gpu_processes"] == [
        {"gpu": 0, "container": None},
        {"gpu": 5, "container": None},
    ]


ROLE = REPO / "playbooks" / "roles" / "servespec"


def _collect_module(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """The host module, with the role's module_utils importable as Ansible ships them to the host."""
    for utility in sorted((ROLE / "module_utils").glob("*.py")):
        name = f"ansible.module_utils.{utility.stem}"
        monkeypatch.setitem(sys.modules, name, load_file(utility, name))
    return load_file(ROLE / "library" / "servespec_collect.py", "servespec_collect")


def test_the_host_module_reads_each_process_container_from_its_cgroup(monkeypatch: pytest.MonkeyPatch) -> None:
    module = _collect_module(monkeypatch)
    ident = "d" * 64
    cgroups = {
        "/proc/10/cgroup": f"0::/system.slice/docker-{ident}.scope\n",  # cgroup v2, systemd driver
        "/proc/11/cgroup": "0::/user.slice/user-1000.slice/session-3.scope\n",
    }
    monkeypatch.setattr(module, "_read", cgroups.get)
    apps = "gpu_bus_id, pid, used_gpu_memory [MiB]\n00000000:18:00.0, 10, 1 MiB\n00000000:18:00.0, 11, 1 MiB\nbad\n"
    assert module._pid_containers(apps) == f"10 {ident}\n11 -\n"
    assert module._pid_containers("gpu_bus_id, used_gpu_memory [MiB]\n") is None
    assert module._pid_containers("gpu_bus_id, pid, used_gpu_memory [MiB]\n") == ""


def test_discover_output_loads_into_the_host_view(tmp_path: Path) -> None:
    outputs = tmp_path / "outputs"
    shutil.copytree(OUTPUTS, outputs)
    write_facts(outputs, tmp_path / "facts")
    (tmp_path / "hosts.yaml").write_text(INVENTORY)
    host = load_fleet([tmp_path / "hosts.yaml"]).inventories[0].hosts["gpu-01"]
    assert host.runtime is not None
    assert host.runtime.model_cache_free_gib == 62.3 and host.runtime.nvidia_runtime is True
    assert [(p.gpu, p.container) for p in host.runtime.gpu_processes or []] == [(0, OWN), (5, None)]


# ---- PAR005


def _discovered(tmp_path: Path) -> dict[str, object]:
    return facts_from_outputs(OUTPUTS / "gpu-01", "gpu-01") | {"host": "gpu-01"}


def test_own_engine_on_its_gpu_is_not_busy(tmp_path: Path) -> None:
    assert _rules(_fleet(tmp_path, _discovered(tmp_path), gpu_ids="[0]"), "PAR005") == []


def test_the_same_gpu_is_busy_for_another_deployment(tmp_path: Path) -> None:
    found = _rules(_fleet(tmp_path, _discovered(tmp_path), name="llama-chat", gpu_ids="[0]"), "PAR005")
    assert len(found) == 1
    assert "container servespec-qwen-chat" in found[0].message and found[0].severity.value == "warning"
    assert found[0].hint.startswith("use free GPUs: gpu_ids: [1]")


def test_a_foreign_process_is_reported_at_gpu_ids(tmp_path: Path) -> None:
    found = _rules(_fleet(tmp_path, _discovered(tmp_path), gpu_ids="[4, 5]"), "PAR005")
    assert [(f.file.endswith("spec.yaml"), f.line, f.path) for f in found] == [(True, 7, "resources.gpu_ids")]
    assert "GPU(s) [5] on gpu-01 ran another process" in found[0].message


def test_busy_gpus_can_be_suppressed_in_the_deployment(tmp_path: Path) -> None:
    extra = 'suppress:\n  - {rule: PAR005, reason: "the notebook on GPU 5 is stopped before apply"}\n'
    findings = _fleet(tmp_path, _discovered(tmp_path), gpu_ids="[4, 5]", extra=extra)
    assert _rules(findings, "PAR005", "SS005") == []


def test_a_cpu_only_host_has_no_busy_gpus(tmp_path: Path) -> None:
    facts = {"version": 1, "host": "gpu-01", "hardware": {"gpus": {"count": 0}}, "runtime": {"busy_gpus": [0]}}
    assert _rules(_fleet(tmp_path, facts), "PAR005", "HW006") == []


# ---- MEM006


def _cache(free: float) -> dict[str, object]:
    return {
        "version": 1,
        "host": "gpu-01",
        "hardware": {"gpus": {"model": "NVIDIA H100 80GB HBM3", "count": 8}},
        "runtime": {"model_cache_free_gib": free},
    }


def test_weights_are_compared_with_the_free_cache_space(tmp_path: Path) -> None:
    assert _rules(_fleet(tmp_path, _cache(15.0)), "MEM006") == []
    found = _rules(_fleet(tmp_path, _cache(10.0)), "MEM006")
    assert len(found) == 1 and found[0].path == "model.source" and found[0].severity.value == "warning"
    assert "at least 14.2 GiB" in found[0].message and "10.0 GiB free" in found[0].message


def test_quantized_weights_take_less_room(tmp_path: Path) -> None:
    source = "meta-llama/Llama-3.1-70B-Instruct"  # 131 GiB in bfloat16, 66 GiB as FP8
    assert _rules(_fleet(tmp_path, _cache(100.0), source=source), "MEM006")
    assert _rules(_fleet(tmp_path, _cache(100.0), source=source, model_extra=", quantization: fp8"), "MEM006") == []


def test_a_local_model_is_mounted_not_downloaded(tmp_path: Path) -> None:
    inline = ", architecture: {params_b: 70, layers: 80, hidden_size: 8192, attention_heads: 64}"
    findings = _fleet(tmp_path, _cache(1.0), source="/srv/models/llama-70b", model_extra=inline)
    assert _rules(findings, "MEM006") == []
    findings = _fleet(tmp_path, _cache(1.0), source="my-org/private-70b", model_extra=inline)
    assert [f.rule for f in _rules(findings, "MEM006")] == ["MEM006"]  # inline facts size a hub model too


def test_a_facts_file_without_runtime_is_not_judged(tmp_path: Path) -> None:
    facts = {"version": 1, "host": "gpu-01", "hardware": {"gpus": {"model": "NVIDIA H100 80GB HBM3", "count": 8}}}
    assert (
        _rules(_fleet(tmp_path, facts, source="meta-llama/Llama-3.1-70B-Instruct"), "MEM006", "PAR005", "HW006") == []
    )


# ---- HW006


def test_no_gpu_runtime_is_an_error_at_the_host(tmp_path: Path) -> None:
    facts = _cache(500.0) | {"runtime": {"docker_version": "28.1.1", "nvidia_runtime": False, "cdi": False}}
    found = _rules(_fleet(tmp_path, facts), "HW006")
    assert [(f.path, f.severity.value) for f in found] == [("placement.hosts[0]", "error")]
    assert "no NVIDIA runtime and no CDI" in found[0].message


def test_unknown_runtime_facts_are_not_judged(tmp_path: Path) -> None:
    facts = _cache(500.0) | {"runtime": {"docker_version": "28.1.1", "cdi": False}}
    assert _rules(_fleet(tmp_path, facts), "HW006") == []
