"""Excluded-module names matched to the modules a model is built of, as vLLM matches them (Nemotron-H).

vLLM renames Nemotron-H's checkpoint prefixes before it tests a ModelOpt ``exclude_modules`` list against a layer
(nemotron_h.py ``hf_to_vllm_mapper``: ``backbone`` -> ``model``, ``mtp`` dropped; modelopt.py ``apply_vllm_mapper``
splits ModelOpt's ``path*`` into ``path`` and ``path.*``; ``is_layer_excluded``: exact, substring or fnmatch, v0.33.0).
Every block's module is its ``mixer``: a Mamba-2 mixer (in_proj, out_proj), attention (q, k, v, o), an MLP (up,
down) or an MoE (experts, shared_experts, gate).

The config is the catalogued nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16 (verbatim). The quantization configs are
STAND-INS written here in the shape NVIDIA's ModelOpt exports (hf_quant_config.json ``quantization``: ``quant_algo``,
``group_size``, ``exclude_modules``); the NVFP4 checkpoint's own list was not at hand, so no test claims its size.
The expected bytes are worked out below from the config by the modelling code's shapes, not by servespec.
"""

from __future__ import annotations

from typing import Any

import pytest

from servespec.knowledge import models
from servespec.knowledge.memory import EstimateInput, weight_bytes

NANO = "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"


def _config() -> dict[str, Any]:
    config: dict[str, Any] = dict(models._catalog()[NANO.lower()]["config"])
    return config


def _nvfp4(excluded: list[str]) -> dict[str, Any]:
    return {
        "producer": {"name": "modelopt"},
        "quantization": {"quant_algo": "NVFP4", "group_size": 16, "exclude_modules": excluded},
    }


def _bytes(facts: models.ModelFacts) -> float:
    return weight_bytes(EstimateInput(engine="vllm", release=None, model=facts, gpu=None))


# Nemotron-3-Nano's shapes (config above): hidden 2688; Mamba-2 64 heads x 64, 8 groups of state 128, kernel 4;
# attention 32 heads, 2 KV heads of 128; 128 routed experts and one shared expert, 1856 and 3712 wide (relu2: up and
# down only); vocabulary 131072, untied.
H, VOCAB = 2688, 131072
WIDTH, GROUPS, STATE, HEADS, KERNEL = 64 * 64, 8, 128, 64, 4
IN_PROJ = H * (2 * WIDTH + 2 * GROUPS * STATE + HEADS)
OUT_PROJ = WIDTH * H
MAMBA_REST = (WIDTH + 2 * GROUPS * STATE) * (KERNEL + 1) + 3 * HEADS + WIDTH  # conv1d (biased), A, D, dt_bias, norm
ATTENTION = 2 * H * 32 * 128 + 2 * H * 2 * 128
EXPERTS = 128 * 2 * H * 1856
SHARED = 2 * H * 3712
GATE = 128 * H + 128


def _counts() -> dict[str, int]:
    pattern = _config()["hybrid_override_pattern"]
    return {kind: pattern.count(kind) for kind in "M*E-"}


def test_part_sizes_follow_each_block() -> None:
    """The attention part is the 23 Mamba-2 and 6 attention mixers, the experts the 23 MoE blocks' routed experts
    (before: every one of the 52 blocks counted as an attention block and as an MoE block, beyond the total)."""
    facts = models.catalogued(NANO)
    assert facts is not None
    n = _counts()
    sizes = models.part_params(facts)
    assert sizes["attention"] == n["M"] * (IN_PROJ + OUT_PROJ + MAMBA_REST) + n["*"] * ATTENTION
    assert sizes["experts"] == n["E"] * EXPERTS
    assert sum(sizes.values()) + 2 * VOCAB * H == facts.params


def test_backbone_mixer_names_keep_those_mixers_in_bf16() -> None:
    """``backbone.layers.<i>.mixer*`` for every Mamba-2 and attention block, and lm_head: those mixers stay bf16,
    the experts, shared experts take NVFP4 (4 bits and an FP8 scale per 16); the conv1d, the routers and the norms are
    built without the quantization config (bf16). Before: the names were not recognised and the parts mis-sized
    (54.6 GiB, more than NVFP4 of anything in the model)."""
    config = _config()
    excluded = [
        f"backbone.layers.{i}.mixer*" for i, kind in enumerate(config["hybrid_override_pattern"]) if kind in "M*"
    ]
    facts = models.facts_from_config(config, "nano-nvfp4", _nvfp4([*excluded, "lm_head"]))
    n = _counts()
    bf16 = (
        2 * VOCAB * H
        + n["M"] * (IN_PROJ + OUT_PROJ + MAMBA_REST)
        + n["*"] * ATTENTION
        + n["E"] * GATE
        + len(config["hybrid_override_pattern"]) * H
        + H
    )
    nvfp4 = n["E"] * (EXPERTS + SHARED)
    assert _bytes(facts) == pytest.approx(bf16 * 2 + nvfp4 * 4.5 / 8, rel=1e-9)


def test_one_projection_and_names_the_model_does_not_have() -> None:
    """An exact name excludes that module of that layer only; ``mtp.*`` (dropped by the mapper) and a Llama-style
    ``model.layers.0.self_attn.q_proj`` name nothing in Nemotron-H and change nothing."""
    config = _config()
    plain = models.facts_from_config(config, "n", _nvfp4([]))
    in_proj = models.facts_from_config(config, "n", _nvfp4(["backbone.layers.0.mixer.in_proj"]))
    assert _bytes(in_proj) - _bytes(plain) == pytest.approx(IN_PROJ * (2 - 4.5 / 8), rel=1e-9)
    unrelated = models.facts_from_config(
        config, "n", _nvfp4(["mtp.layers.0.mixer*", "model.layers.0.self_attn.q_proj"])
    )
    assert _bytes(unrelated) == pytest.approx(_bytes(plain), rel=1e-12)


def test_wildcards_and_substrings_as_vllm_matches_them() -> None:
    """``*mixer.o_proj`` (fnmatch) covers the six attention blocks' o_proj; ``mixer.shared_experts`` (a substring of
    the module's name) the shared experts of every MoE block."""
    config = _config()
    plain = models.facts_from_config(config, "n", _nvfp4([]))
    n = _counts()
    o_proj = models.facts_from_config(config, "n", _nvfp4(["*mixer.o_proj"]))
    assert _bytes(o_proj) - _bytes(plain) == pytest.approx(n["*"] * 32 * 128 * H * (2 - 4.5 / 8), rel=1e-9)
    shared = models.facts_from_config(config, "n", _nvfp4(["mixer.shared_experts"]))
    assert _bytes(shared) - _bytes(plain) == pytest.approx(n["E"] * SHARED * (2 - 4.5 / 8), rel=1e-9)


def test_mixed_precision_per_expert_names_name_the_fused_experts() -> None:
    """MIXED_PRECISION (the shape Nemotron-3.5 exports: Mamba projections FP8, experts W4A16_NVFP4 named one expert
    projection at a time): vLLM resolves the fused ``mixer.experts`` from entries under ``prefix.``
    (modelopt.py ``ModelOptMixedPrecisionConfig._resolve_quant_algo``); modules the map does not name stay bf16."""
    config = _config()
    pattern = config["hybrid_override_pattern"]
    layers: dict[str, Any] = {}
    for i, kind in enumerate(pattern):
        if kind == "M":
            layers[f"backbone.layers.{i}.mixer.in_proj"] = {"quant_algo": "FP8"}
            layers[f"backbone.layers.{i}.mixer.out_proj"] = {"quant_algo": "FP8"}
        if kind == "E":
            for e in range(128):
                for proj in ("up_proj", "down_proj"):
                    layers[f"backbone.layers.{i}.mixer.experts.{e}.{proj}"] = {"quant_algo": "NVFP4", "group_size": 16}
    quant = {"quant_method": "modelopt", "quant_algo": "MIXED_PRECISION", "quantized_layers": layers}
    facts = models.facts_from_config({**config, "quantization_config": quant}, "n")
    n = _counts()
    fp8 = n["M"] * (IN_PROJ + OUT_PROJ)
    nvfp4 = n["E"] * EXPERTS
    rest = facts.params - fp8 - nvfp4
    assert _bytes(facts) == pytest.approx(fp8 + nvfp4 * 4.5 / 8 + rest * 2, rel=1e-9)
