"""ModelOpt checkpoints sized from their own quantization config, in every shape vLLM reads.

The files under tests/data/modelopt/ are published config.json / hf_quant_config.json contents
(no weights); the checkpoint's tensors are not read, so the size follows from the config alone.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from servespec.knowledge import models, sources
from servespec.knowledge.memory import GIB, EstimateInput, weight_bytes
from servespec.rules.runner import check_fleet
from servespec.spec.fleet import load_fleet

DATA = Path(__file__).resolve().parent.parent / "data" / "modelopt"
LLAMA_FP8 = DATA / "nvidia--Llama-3.1-70B-Instruct-FP8"
QWEN_NVFP4 = DATA / "nvidia--Qwen3-235B-A22B-NVFP4"


def _json(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def _gib(facts: models.ModelFacts) -> float:
    return weight_bytes(EstimateInput(engine="vllm", release=None, model=facts, gpu=None)) / GIB


def _bf16_gib(folder: Path) -> float:
    return _gib(models.facts_from_config(_json(folder / "config.json"), "bf16"))


@pytest.mark.parametrize("how", ["separate file", "stored as quantization_config"])
def test_fp8_hf_quant_config_in_either_place(how: str) -> None:
    """vLLM reads hf_quant_config.json as the quantization_config (transformers_utils/config.py)."""
    config, quant = _json(LLAMA_FP8 / "config.json"), _json(LLAMA_FP8 / "hf_quant_config.json")
    facts = (
        models.facts_from_config(config, "llama", quant)
        if how == "separate file"
        else models.facts_from_config({**config, "quantization_config": quant}, "llama")
    )
    assert (facts.quant_method, facts.quant_bits) == ("modelopt", 8.0)
    # FP8 linear layers, bf16 embeddings and (excluded) lm_head: about half the bf16 size.
    assert _gib(facts) == pytest.approx(_bf16_gib(LLAMA_FP8) / 2 + 128256 * 8192 * 2 / GIB, rel=0.01)


def test_nvfp4_is_four_bits_and_an_fp8_scale_per_16_with_excluded_modules_in_bf16() -> None:
    config, quant = _json(QWEN_NVFP4 / "config.json"), _json(QWEN_NVFP4 / "hf_quant_config.json")
    facts = models.facts_from_config({**config, "quantization_config": quant}, "qwen")
    assert (facts.quant_method, facts.quant_bits) == ("nvfp4", 4.5)
    assert ("lm_head", 1.0, None) in facts.quant_parts  # exclude_modules: lm_head stays bf16
    full = _bf16_gib(QWEN_NVFP4)
    embeddings = 2 * 151936 * 4096 * 2 / GIB
    assert _gib(facts) == pytest.approx((full - embeddings) * 4.5 / 16 + embeddings, rel=0.01)


def test_config_json_quantization_config_of_newer_modelopt() -> None:
    """ModelOpt 0.31+ writes ``quant_method: modelopt`` with quant_algo, group_size and ``ignore``."""
    config = _json(QWEN_NVFP4 / "config.json")
    quant = {"quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 16, "ignore": ["lm_head", "*self_attn*"]}
    facts = models.facts_from_config({**config, "quantization_config": quant}, "qwen")
    assert facts.quant_method == "nvfp4"
    parts = {part: (share, bits) for part, share, bits in facts.quant_parts}
    assert parts["attention"] == (1.0, None)  # every layer's attention left in bf16
    sizes = models.part_params(facts)
    assert _gib(facts) > _gib(models.facts_from_config({**config, "quantization_config": {**quant, "ignore": []}}, "q"))
    assert sizes["experts"] > 10 * sizes["attention"]


def test_mixed_precision_sizes_each_part_by_its_algorithm() -> None:
    """MIXED_PRECISION names each layer's algorithm in quantized_layers; unnamed ones stay unquantized."""
    config = _json(QWEN_NVFP4 / "config.json")
    layers: dict[str, Any] = {}
    for i in range(94):
        for proj in ("q_proj", "k_proj", "v_proj", "o_proj"):
            layers[f"model.layers.{i}.self_attn.{proj}"] = {"quant_algo": "FP8"}
        layers[f"model.layers.{i}.mlp.experts"] = {"quant_algo": "NVFP4", "group_size": 16}
    quant = {"quant_method": "modelopt", "quant_algo": "MIXED_PRECISION", "quantized_layers": layers}
    facts = models.facts_from_config({**config, "quantization_config": quant}, "qwen")
    sizes = models.part_params(facts)
    embeddings = 2 * 151936 * 4096 * 2
    expected = sizes["attention"] + sizes["experts"] * 4.5 / 8 + sizes["mlp"] * 2 + embeddings
    assert facts.quant_method == "modelopt_mixed"
    assert _gib(facts) == pytest.approx(expected / GIB, rel=0.001)


def test_catalogued_modelopt_repo_reads_its_hf_quant_config() -> None:
    facts = models.catalogued("nvidia/Llama-3.1-70B-Instruct-FP8")
    assert facts is not None and facts.quant_method == "modelopt"
    assert _gib(facts) < 0.55 * _bf16_gib(LLAMA_FP8)


def _fleet(tmp_path: Path, gpu: str, model: Path) -> list[Any]:
    (tmp_path / ".git").mkdir()
    (tmp_path / "hosts.yaml").write_text(
        "apiVersion: servespec/v1\nkind: Inventory\n"
        f"defaults: {{model_roots: [{tmp_path / 'models'}]}}\n"
        f"hosts:\n  gpu-01:\n    connection: local\n    hardware: {{gpus: {{model: {gpu}, count: 1}}}}\n"
    )
    folder = tmp_path / "models" / model.name
    shutil.copytree(model, folder)
    spec = tmp_path / "app.yaml"
    spec.write_text(
        "apiVersion: servespec/v1\nkind: Deployment\nmetadata: {name: app}\ninventory: hosts.yaml\n"
        f"model: {{source: {folder}, max_model_len: 8192}}\n"
        'engine: {name: vllm, version: "0.11.0"}\nplacement: {hosts: [gpu-01]}\n'
    )
    fleet = load_fleet([spec])
    assert sources.find(fleet.deployments[0]).facts is not None
    return [f.rule for f in check_fleet(fleet)]


def test_fp8_model_directory_fits_one_h200(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Was MEM001 "131.4 GiB of weights": the directory's hf_quant_config.json was not read."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    rules = _fleet(tmp_path, "NVIDIA H200", LLAMA_FP8)
    assert "MEM001" not in rules and "MEM002" not in rules


def test_modelopt_fp8_checkpoint_needs_the_release_minimum_capability(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """vLLM 0.11 loads a ModelOpt FP8 checkpoint with method modelopt, which needs 8.9 (ModelOptFp8Config
    get_min_capability 89, vllm/model_executor/layers/quantization/modelopt.py at v0.11.0): an A100 is refused."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert "HW002" in _fleet(tmp_path, "NVIDIA A100-SXM4-80GB", LLAMA_FP8)


def test_excluded_projections_count_by_their_own_size() -> None:
    """DeepSeek-V3.1-NVFP4 keeps the MLA down/up projections (q_a, q_b, kv_a, kv_b) in bf16 but not o_proj."""
    folder = DATA / "nvidia--DeepSeek-V3.1-NVFP4"
    facts = models.facts_from_config(_json(folder / "config.json"), "ds", _json(folder / "hf_quant_config.json"))
    assert (facts.quant_method, facts.quant_bits) == ("nvfp4", 4.5)
    parts = {part: share for part, share, _ in facts.quant_parts}
    h, heads = 7168, 128
    excluded = h * 1536 + 1536 * heads * 192 + h * (512 + 64) + 512 * heads * 256
    assert parts["attention"] == pytest.approx(excluded / (excluded + heads * 128 * h))
    assert parts["lm_head"] == 1.0 and "experts" not in parts  # the MTP layer 61 is not a decoder layer here


def test_mixed_precision_leaves_the_vision_tower_and_routers_in_bf16() -> None:
    """nvidia/Qwen3.6-35B-A3B-NVFP4 (MIXED_PRECISION): quantized_layers names the decoder's projections, the routed
    and shared experts and lm_head only, so vLLM loads the vision tower and the MoE routers unquantized
    (modelopt.py ModelOptMixedPrecisionConfig.get_quant_method, v0.24.0: UnquantizedLinearMethod for a layer the map
    does not name). Was 0.6 GiB low: the tower counted with the shared experts at 4.5 bits."""
    facts = models.catalogued("nvidia/Qwen3.6-35B-A3B-NVFP4")
    assert facts is not None and facts.quant_method == "modelopt_mixed" and facts.vision_params > 4e8
    without_tower = replace(facts, vision_params=0.0)
    assert (_gib(facts) - _gib(without_tower)) * GIB == pytest.approx(facts.vision_params * 2, rel=1e-9)
    # By hand from the config: bf16 embedding, NVFP4 lm_head, experts and shared experts (4 bits + an FP8 scale per
    # 16), FP8 attention (10 full layers with the output gate; 30 Gated DeltaNet layers' qkv, z and out), bf16 tower,
    # routers, the DeltaNet's a/b projections and conv1d.
    h, vocab, layers = 2048, 248320, 40
    full = 10 * (h * 16 * 256 * 2 + 2 * h * 2 * 256 + 16 * 256 * h)
    linear = 30 * (h * 8192 + h * 4096 + 4096 * h)
    small = 30 * (2 * h * 32 + 8192 * 4) + layers * 256 * h
    nvfp4 = layers * 256 * 3 * h * 512 + layers * 3 * h * 512 + vocab * h
    expected = vocab * h * 2 + nvfp4 * 4.5 / 8 + full + linear + (small + facts.vision_params) * 2
    assert _gib(facts) == pytest.approx(expected / GIB, rel=0.005)
