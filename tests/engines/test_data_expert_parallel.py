"""Data and expert parallelism: GPUs per replica, memory per GPU, rendering, and the refusals engines raise.

Each layout is written both ways a user writes it: the spec's ``resources.data_parallel`` /
``expert_parallel`` (contract §6) and the engine's own options (vLLM ``--data-parallel-size
--enable-expert-parallel``, SGLang ``--dp-size --enable-dp-attention``), which must mean the same.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from servespec.findings import Severity
from servespec.knowledge import resolve
from servespec.plan.footprint import footprints
from servespec.render import render_fleet
from servespec.rules.runner import check_fleet
from servespec.spec.fleet import load_fleet

HOSTS = """\
apiVersion: servespec/v1
kind: Inventory
hosts:
  h200x8:
    address: 10.0.1.21
    hardware:
      gpus: {model: NVIDIA H200, count: 8}
      interconnect: nvswitch
"""


def _fleet(tmp_path: Path, engine: str, version: str, model: str, resources: str, options: str = "{}") -> Any:
    (tmp_path / "hosts.yaml").write_text(HOSTS)
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "apiVersion: servespec/v1\nkind: Deployment\nmetadata: {name: moe}\ninventory: hosts.yaml\n"
        f"model: {{source: {model}, max_model_len: 8192}}\n"
        f"engine: {{name: {engine}, version: '{version}', options: {options}}}\n"
        f"resources: {resources}\nplacement: {{hosts: [h200x8]}}\n"
    )
    return load_fleet([spec])


def _errors(fleet: Any) -> list[str]:
    assert not fleet.findings, [f.to_text() for f in fleet.findings]
    return [f.to_text() for f in check_fleet(fleet) if f.severity is Severity.ERROR]


def _launch(fleet: Any) -> tuple[dict[str, Any], str]:
    """The rendered container and the text of every file rendered beside it (one host)."""
    files = render_fleet(fleet).files
    container = next(YAML(typ="safe").load(text) for name, text in files.items() if name.endswith("container.yaml"))
    beside = "\n".join(text for name, text in files.items() if name.endswith(("config.yaml", "options.yaml")))
    return container, beside


VLLM_DP_EP = [
    pytest.param("{data_parallel: 8, expert_parallel: true}", "{}", id="spec-fields"),
    pytest.param("{}", "{data_parallel_size: 8, enable_expert_parallel: true}", id="vllm-options"),
]


@pytest.mark.parametrize(("resources", "options"), VLLM_DP_EP)
def test_vllm_dp8_ep_deepseek_v3_fits_eight_h200(tmp_path: Path, resources: str, options: str) -> None:
    """The layout vLLM's docs serve DeepSeek-V3 with: experts over 8 GPUs, not one GPU holding 640 GiB."""
    fleet = _fleet(tmp_path, "vllm", "0.11.0", "deepseek-ai/DeepSeek-V3", resources, options)
    assert _errors(fleet) == []
    known = resolve.resolved(fleet.deployments[0])
    assert known.gpu_ids == list(range(8))
    plan = known.estimates["h200x8"]
    assert plan is not None and 80 < plan.weights_gib < 100, plan  # ~16 GiB dense part + 1/8 of the experts
    footprint = footprints(fleet)[("moe", "h200x8")]
    assert [gpu.index for gpu in footprint.gpus] == list(range(8))  # what deploy plan counts per GPU
    container, config = _launch(fleet)
    assert container["gpus"]["device_ids"] == [str(i) for i in range(8)]
    assert "data-parallel-size: 8" in config and "tensor-parallel-size: 1" in config
    words = [*container["command"], config]
    assert sum("enable-expert-parallel" in w for w in words) == 1, words  # once, however it was asked


def test_vllm_data_parallel_disagreeing_option_is_eng003(tmp_path: Path) -> None:
    model = "deepseek-ai/DeepSeek-V3"
    fleet = _fleet(tmp_path, "vllm", "0.11.0", model, "{data_parallel: 8}", "{data_parallel_size: 4}")
    assert any("ENG003" in e and "data_parallel" in e for e in _errors(fleet))


def test_vllm_expert_group_other_than_tp_x_dp_is_par003(tmp_path: Path) -> None:
    fleet = _fleet(tmp_path, "vllm", "0.11.0", "deepseek-ai/DeepSeek-V3", "{tensor_parallel: 8, expert_parallel: 4}")
    assert any("PAR003" in e and "expert" in e for e in _errors(fleet))


def test_release_without_data_parallel_is_par003(tmp_path: Path) -> None:
    """vLLM 0.7.3's catalog has no --data-parallel-size (it appears in 0.8.3)."""
    fleet = _fleet(tmp_path, "vllm", "0.7.3", "Qwen/Qwen3-30B-A3B", "{data_parallel: 2}")
    assert any("PAR003" in e and "vLLM 0.7.3 has no data parallelism" in e for e in _errors(fleet))


def test_engine_without_data_parallel_is_par003(tmp_path: Path) -> None:
    fleet = _fleet(tmp_path, "tgi", "3.3.7", "Qwen/Qwen3-30B-A3B", "{data_parallel: 2}")
    assert any("PAR003" in e and "no data parallelism" in e for e in _errors(fleet))


SGLANG_DP_ATTENTION = [
    pytest.param("{data_parallel: 8}", "{enable_dp_attention: true}", id="spec-fields"),
    pytest.param("{tensor_parallel: 8}", "{dp_size: 8, enable_dp_attention: true}", id="sglang-options"),
]


@pytest.mark.parametrize(("resources", "options"), SGLANG_DP_ATTENTION)
def test_sglang_dp_attention_deepseek_v3(tmp_path: Path, resources: str, options: str) -> None:
    """``--tp 8 --dp 8 --enable-dp-attention``: 8 GPUs, attention per rank, experts over all 8."""
    fleet = _fleet(tmp_path, "sglang", "0.5.23", "deepseek-ai/DeepSeek-V3", resources, options)
    assert _errors(fleet) == []
    known = resolve.resolved(fleet.deployments[0])
    layout = known.layout
    assert (layout.gpus, layout.tensor, layout.data, layout.moe_group) == (8, 1, 8, 8)
    container, config = _launch(fleet)
    assert "tp-size: 8" in config and "dp-size: 8" in config
    # 0.5.23 deprecates the flag and its config reader refuses it: it goes on the command line
    assert "--enable-dp-attention" in container["command"] and "enable-dp-attention" not in config


def test_sglang_dp_without_dp_attention_is_whole_copies(tmp_path: Path) -> None:
    """``--dp-size 2`` alone runs two copies of ``--tp-size 4``: eight GPUs, experts over four."""
    fleet = _fleet(tmp_path, "sglang", "0.5.23", "Qwen/Qwen3-235B-A22B-FP8", "{tensor_parallel: 4, data_parallel: 2}")
    known = resolve.resolved(fleet.deployments[0])
    assert (known.layout.gpus, known.layout.moe_group) == (8, 4)
    assert known.gpu_ids == list(range(8))
    _, config = _launch(fleet)
    assert "tp-size: 4" in config and "dp-size: 2" in config


def test_trtllm_attention_dp_and_ep_render_once(tmp_path: Path) -> None:
    fleet = _fleet(
        tmp_path, "tensorrt-llm", "1.2.1", "deepseek-ai/DeepSeek-V3", "{data_parallel: 8, expert_parallel: true}"
    )
    assert _errors(fleet) == []
    container, extra = _launch(fleet)
    text = " ".join(container["command"]) + "\n" + extra
    assert "enable_attention_dp: true" in text
    assert len(re.findall(r"moe_expert_parallel_size:? 8", text)) == 1, text
    assert len(re.findall(r"tensor_parallel_size:? 8", text)) == 1, text
    assert resolve.resolved(fleet.deployments[0]).gpu_ids == list(range(8))


def test_attention_dp_keeps_whole_kv_heads(tmp_path: Path) -> None:
    """TensorRT-LLM's attention DP runs attention on one GPU per rank: no replicated KV heads (PAR004)."""
    options = "{enable_attention_dp: true, moe_expert_parallel_size: 8}"
    fleet = _fleet(tmp_path, "tensorrt-llm", "1.2.1", "Qwen/Qwen3-235B-A22B-FP8", "{tensor_parallel: 8}", options)
    rules = {f.rule for f in check_fleet(fleet)}
    assert "PAR004" not in rules
    assert resolve.resolved(fleet.deployments[0]).layout.tensor == 1


BLOCK_FP8 = [
    pytest.param("0.11.0", "Qwen/Qwen3-235B-A22B-FP8", "{tensor_parallel: 8}", 192, id="235B-tp8"),
    pytest.param("0.8.5", "Qwen/Qwen3-30B-A3B-FP8", "{tensor_parallel: 8}", 96, id="30B-tp8"),
    pytest.param("0.33.0", "Qwen/Qwen3-30B-A3B-FP8", "{tensor_parallel: 4, data_parallel: 2}", None, id="30B-refined"),
    pytest.param("0.11.0", "Qwen/Qwen3-235B-A22B-FP8", "{tensor_parallel: 8, expert_parallel: true}", None, id="ep"),
    pytest.param("0.11.0", "Qwen/Qwen3-235B-A22B-FP8", "{tensor_parallel: 4}", None, id="235B-tp4"),
]


@pytest.mark.parametrize(("version", "model", "resources", "per_rank"), BLOCK_FP8)
def test_block_fp8_experts_vllm_refuses(
    tmp_path: Path, version: str, model: str, resources: str, per_rank: int | None
) -> None:
    """vLLM refuses a per-rank expert width that is not a multiple of block_n = 128 (the release's line cited)."""
    fleet = _fleet(tmp_path, "vllm", version, model, resources)
    found = [e for e in _errors(fleet) if "block_n = 128" in e]
    if per_rank is None:
        assert found == []
    else:
        assert len(found) == 1, found
        assert f"weight = {per_rank} is not divisible" in found[0]
        assert f"https://github.com/vllm-project/vllm/blob/v{version}/" in found[0]


SGLANG_BLOCK_FP8 = [
    pytest.param("0.5.23", "{tensor_parallel: 8}", 192, id="tp8"),
    pytest.param("0.4.6", "{tensor_parallel: 8}", 192, id="tp8-0.4.6"),
    pytest.param("0.5.23", "{tensor_parallel: 8, expert_parallel: true}", None, id="ep8"),
    pytest.param("0.5.23", "{tensor_parallel: 4}", None, id="tp4"),
]


@pytest.mark.parametrize(("version", "resources", "per_rank"), SGLANG_BLOCK_FP8)
def test_block_fp8_experts_sglang_refuses(tmp_path: Path, version: str, resources: str, per_rank: int | None) -> None:
    """SGLang refuses the same shard (Fp8MoEMethod.create_weights), with no refinement of the block scales."""
    fleet = _fleet(tmp_path, "sglang", version, "Qwen/Qwen3-235B-A22B-FP8", resources)
    found = [e for e in _errors(fleet) if "block_n = 128" in e]
    if per_rank is None:
        assert found == []
    else:
        assert len(found) == 1 and f"weight = {per_rank} is not divisible" in found[0], found
        assert (
            f"https://github.com/sgl-project/sglang/blob/v{version}/python/sglang/srt/layers/quantization/" in found[0]
        )


@pytest.mark.parametrize(
    ("version", "flag"),
    [
        pytest.param("0.4.6", ("--enable-ep-moe", "enable-ep-moe: true"), id="enable-ep-moe-era"),
        pytest.param("0.5.23", ("--ep-size 8", "ep-size: 8"), id="ep-size"),
        pytest.param("0.5.3", ("--expert-parallel-size 8", "expert-parallel-size: 8"), id="enable-ep-moe-deprecated"),
    ],
)
def test_sglang_expert_parallel_renders_the_releases_own_option(
    tmp_path: Path, version: str, flag: tuple[str, str]
) -> None:
    fleet = _fleet(
        tmp_path, "sglang", version, "deepseek-ai/DeepSeek-V3", "{tensor_parallel: 8, expert_parallel: true}"
    )
    assert not [e for e in _errors(fleet) if "ENG00" in e or "PAR003" in e]
    container, config = _launch(fleet)
    on_command_line, in_config = flag
    assert on_command_line in " ".join(container["command"]) or in_config in config
    if "size" in in_config:  # 0.5.x's --enable-ep-moe raises ValueError (DeprecatedAction): never rendered
        assert "enable-ep-moe" not in " ".join(container["command"]) + config
    assert resolve.resolved(fleet.deployments[0]).layout.expert == 8


def test_sglang_spec_and_option_saying_the_same_render_once(tmp_path: Path) -> None:
    """0.4.x keys --dp-size as data_parallel_size: the spec's value and the option are one flag."""
    options = "{enable_dp_attention: true, dp_size: 4}"
    fleet = _fleet(
        tmp_path, "sglang", "0.4.6", "deepseek-ai/DeepSeek-V3", "{tensor_parallel: 2, data_parallel: 4}", options
    )
    assert not [e for e in _errors(fleet) if "ENG003" in e]
    container, _ = _launch(fleet)
    words = container["command"]
    assert sum(w in ("--dp-size", "--data-parallel-size") for w in words) == 1, words
    assert words[words.index("--tensor-parallel-size") + 1] == "8", words
