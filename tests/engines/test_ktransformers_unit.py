"""The KTransformers unit: rendering, its own checks, the CPU/GPU expert memory split, switching to SGLang."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from servespec.engines.ktransformers.render import PYTHON
from servespec.engines.sglang.render import KEY_LAUNCHER
from servespec.findings import Finding
from servespec.knowledge import resolve
from servespec.rules.runner import check_fleet
from servespec.spec.fleet import load_fleet
from tests.conftest import run_cli

INVENTORY = """\
apiVersion: servespec/v1
kind: Inventory
hosts:
  kt1:
    address: 10.0.1.1
    hardware:
      gpus: {{model: NVIDIA GeForce RTX 4090, count: 1}}
      interconnect: pcie
      gpu_numa_nodes: [0]
      cpus: 128
      memory_gib: {ram}
      numa_cpus: {{0: "0-31,64-95", 1: "32-63,96-127"}}
"""
KT_OPTIONS = {
    "kt_weight_path": "/srv/models/DeepSeek-V3-AMXINT4",
    "kt_method": "AMXINT4",
    "kt_num_gpu_experts": 2,
    "kt_cpuinfer": 112,
    "kt_threadpool_count": 2,
    "mem_fraction_static": 0.94,
}


def _spec(tmp_path: Path, options: dict[str, Any], *, engine: str = "ktransformers", version: str = "0.7.2",
          source: str = "deepseek-ai/DeepSeek-V3", ram: int = 512, extra: str = "") -> Path:  # fmt: skip
    (tmp_path / "hosts.yaml").write_text(INVENTORY.format(ram=ram))
    lines = "".join(f"    {key}: {value}\n" for key, value in options.items())
    path = tmp_path / "spec.yaml"
    path.write_text(
        "apiVersion: servespec/v1\nkind: Deployment\nmetadata: {name: kt}\ninventory: hosts.yaml\n"
        f"model: {{source: {source}, max_model_len: 8192}}\n"
        f"engine:\n  name: {engine}\n  version: '{version}'\n"
        + (f"  options:\n{lines}" if options else "")
        + "resources: {gpu_ids: [0], numa: 'off'}\nplacement: {hosts: [kt1]}\n"
        + extra
    )
    return path


def _findings(path: Path, rule: str | None = None) -> list[Finding]:
    return [f for f in check_fleet(load_fleet([path])) if rule is None or f.rule == rule]


def _container(tmp_path: Path, path: Path) -> dict[str, Any]:
    out = tmp_path / "rendered"
    result = run_cli("render", str(path), "-o", str(out))
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = YAML(typ="safe").load((out / "kt" / "kt1" / "container.yaml").read_text())
    data["config"] = YAML(typ="safe").load((out / "kt" / "kt1" / "config.yaml").read_text())
    return data


def test_renders_the_serve_environment_and_mounts_the_expert_weights(tmp_path: Path) -> None:
    container = _container(tmp_path, _spec(tmp_path, KT_OPTIONS))
    assert container["image"] == "kvcache/ktransformers:v0.7.2-cu128"
    assert container["command"][:3] == [PYTHON, "-m", "sglang.launch_server"]
    assert {"host": KT_OPTIONS["kt_weight_path"], "container": KT_OPTIONS["kt_weight_path"], "mode": "ro"} in (
        container["volumes"]
    )
    config = container["config"]
    assert config["kt-weight-path"] == KT_OPTIONS["kt_weight_path"]
    assert (config["kt-method"], config["kt-cpuinfer"], config["kt-num-gpu-experts"]) == ("AMXINT4", 112, 2)
    assert config["port"] == container["healthcheck"]["port"] == container["ports"][0]["container_port"]


def test_the_key_launcher_runs_with_the_serve_python(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    extra = "serving: {api_key: {from_env: KT_KEY}}\n"
    container = _container(tmp_path, _spec(tmp_path, KT_OPTIONS, extra=extra))
    assert container["entrypoint"] == [PYTHON, "-c", KEY_LAUNCHER]
    assert "SERVESPEC_API_KEY" in container["secret_environment"]


@pytest.mark.parametrize(
    ("options", "says"),
    [
        ({"kt_cpuinfer": 32, "kt_num_gpu_experts": 4}, "without kt_weight_path do nothing"),
        ({"kt_weight_path": "/srv/models/w", "kt_cpuinfer": 32}, "Either kt_num_gpu_experts or kt_gpu_experts_ratio"),
        ({"kt_weight_path": "/srv/models/w", "kt_num_gpu_experts": 0}, "kt_cpuinfer is not set"),
        ({**KT_OPTIONS, "kt_numa_nodes": "[0, 1, 2]"}, "kt_numa_nodes lists 3 node(s) for kt_threadpool_count 2"),
        ({**KT_OPTIONS, "kt_weight_path": "/etc/kt"}, "kt_weight_path: /etc/kt"),
        ({"kt_expert_lora_path": "/srv/models/lora"}, "kt_expert_lora_path needs kt_weight_path"),
    ],
)
def test_eng003_on_what_sglang_kt_would_ignore_or_refuse(tmp_path: Path, options: dict[str, Any], says: str) -> None:
    found = [f.message for f in _findings(_spec(tmp_path, options), "ENG003")]
    assert any(says in message for message in found), found


def test_eng003_for_a_dense_model(tmp_path: Path) -> None:
    found = [f.message for f in _findings(_spec(tmp_path, KT_OPTIONS, source="Qwen/Qwen3-14B"), "ENG003")]
    assert any("has no routed experts" in message for message in found), found


def test_a_complete_split_has_no_engine_findings(tmp_path: Path) -> None:
    found = [f for f in _findings(_spec(tmp_path, KT_OPTIONS)) if f.rule.startswith(("ENG", "MEM0", "TOPO"))]
    assert [f for f in found if f.severity.value != "info"] == []


def _estimate(path: Path) -> Any:
    fleet = load_fleet([path])
    deployment = fleet.deployments[0]
    return resolve.resolved(deployment).estimate_on(resolve.resolved(deployment).hosts[0])


def test_routed_experts_off_the_gpu_go_to_host_ram(tmp_path: Path) -> None:
    plan = _estimate(_spec(tmp_path, KT_OPTIONS))
    # DeepSeek-V3: 58 MoE layers of 256 routed experts, 3 x 7168 x 2048 weights each; AMXINT4 = 4 bits
    expert_bytes = 3 * 7168 * 2048 * 4 / 8
    assert plan.offload is not None
    assert (plan.offload.gpu_layers, plan.offload.layers, plan.offload.unit) == (2, 256, "routed experts per MoE layer")
    # kt-kernel allocates every routed expert in host RAM, the 2 on the GPU too (moe_base.hpp init)
    assert plan.offload.host_gib == pytest.approx(58 * 256 * expert_bytes / 1024**3, abs=0.01)
    assert plan.offload.host_total_gib == 512
    # the GPU holds attention, dense layers, the shared expert (FP8, ~16 GiB) and 2 routed experts per layer
    assert 15 < plan.weights_gib < 22 and plan.kv_cache_gib > 0
    more = _estimate(_spec(tmp_path, {**KT_OPTIONS, "kt_num_gpu_experts": 8}))
    assert more.weights_gib > plan.weights_gib and more.offload.host_gib == plan.offload.host_gib
    dynamic = _estimate(_spec(tmp_path, {**KT_OPTIONS, "kt_enable_dynamic_expert_update": "true"}))
    assert dynamic.offload.host_gib == pytest.approx(58 * 256 * expert_bytes / 1024**3, abs=0.01)


def test_no_estimate_when_the_expert_width_is_unknown(tmp_path: Path) -> None:
    # model.architecture has no moe_intermediate_size: the CPU/GPU split cannot be sized, so no
    # estimate (before: every routed expert counted on the one GPU, a false MEM001 of ~1.3 TiB)
    architecture = (
        "architecture: {params_b: 671, layers: 61, hidden_size: 7168, intermediate_size: 18432, attention_heads: 128,"
        " kv_heads: 128, head_dim: 128, vocab_size: 129280, experts: 256, active_experts: 8}"
    )
    path = _spec(tmp_path, KT_OPTIONS, source="/srv/models/DeepSeek-V3-local")
    path.write_text(path.read_text().replace("max_model_len: 8192}", f"max_model_len: 8192, {architecture}}}"))
    assert _estimate(path) is None
    assert _findings(path, "MEM001") == []
    assert _estimate(_spec(tmp_path, KT_OPTIONS)) is not None  # the catalogued config has the width


def test_without_the_split_it_is_sglangs_estimate(tmp_path: Path) -> None:
    plan = _estimate(_spec(tmp_path, {"mem_fraction_static": 0.94}))
    assert plan.offload is None and plan.weights_gib > 600  # every expert on the one GPU
    assert any(f.rule == "MEM001" for f in _findings(_spec(tmp_path, {"mem_fraction_static": 0.94})))


def test_mem001_when_the_cpu_experts_do_not_fit_host_ram(tmp_path: Path) -> None:
    found = [f.message for f in _findings(_spec(tmp_path, KT_OPTIONS, ram=256), "MEM001")]
    assert found and "routed experts per MoE layer stay in kt1's host memory" in found[0]
    assert "CPU expert weights" in found[0] and "256 GiB of RAM" in found[0]
    result = run_cli("estimate", str(_spec(tmp_path, KT_OPTIONS)), "--format", "json")
    assert '"unit": "routed experts per MoE layer"' in result.output and '"host_gib"' in result.output


def test_switching_engine_name_between_ktransformers_and_sglang(tmp_path: Path) -> None:
    # no --kt-* options: the same spec is valid on both (SGLang's options, SGLang's rendering)
    plain = {"mem_fraction_static": 0.9, "chunked_prefill_size": 4096}
    for engine, version in (("ktransformers", "0.7.2"), ("sglang", "0.5.23")):
        path = _spec(tmp_path, plain, engine=engine, version=version, source="Qwen/Qwen2.5-7B-Instruct")
        errors = [f for f in _findings(path) if f.severity.value == "error"]
        assert errors == [], (engine, [f.message for f in errors])
    # with sglang-kt's own options, SGLang says why not: upstream SGLang 0.5.23 has only some --kt-* options
    # (kt_weight_path, kt_method, kt_cpuinfer, kt_threadpool_count, kt_num_gpu_experts, ...), not these (ENG001)
    own = {**KT_OPTIONS, "kt_numa_nodes": "[0, 1]", "kt_expert_placement_strategy": "frequency"}
    assert not [f for f in _findings(_spec(tmp_path, own)) if f.rule == "ENG001"]
    messages = [f.message for f in _findings(_spec(tmp_path, own, engine="sglang", version="0.5.23"), "ENG001")]
    assert any("kt_numa_nodes" in m for m in messages) and any("kt_expert_placement_strategy" in m for m in messages)
    assert not any("kt_cpuinfer" in m for m in messages), messages


def test_upstream_sglang_with_a_kt_weight_path_splits_the_experts_too() -> None:
    """Upstream SGLang 0.5.8 on has --kt-weight-path and --kt-num-gpu-experts (kt_ep_wrapper.py
    create_kt_config_from_server_args: the split is on with a weight path): its plan is the split's, as sglang-kt's."""
    from servespec import engines
    from servespec.knowledge import gpus, models
    from servespec.knowledge.memory import EstimateInput

    model = models.catalogued("Qwen/Qwen3-30B-A3B")
    card = gpus.resolve("NVIDIA GeForce RTX 4090")
    assert model is not None and card is not None
    split = {"kt_weight_path": "/models/q3-amxint4", "kt_method": "AMXINT4", "kt_num_gpu_experts": 8}
    plans = {}
    for engine, version in (("sglang", "0.5.23"), ("ktransformers", "0.7.2")):
        unit = engines.get(engine)
        for name, options in (("plain", {}), ("split", split)):
            inp = EstimateInput(
                engine=engine,
                release=unit.select(version).release,
                model=model,
                gpu=card,
                max_model_len=8192,
                engine_version=version,
                options={"mem_fraction_static": 0.85, **options},
            )
            plans[engine, name] = unit.estimate(inp)
    for engine in ("sglang", "ktransformers"):
        plain, cut = plans[engine, "plain"], plans[engine, "split"]
        assert plain is not None and cut is not None and plain.offload is None and cut.offload is not None
        assert cut.weights_gib < plain.weights_gib and cut.offload.gpu_layers == 8
    assert plans["sglang", "split"].offload.host_gib == plans["ktransformers", "split"].offload.host_gib  # type: ignore[union-attr]
