"""AMD Quark checkpoints (``quant_method: quark``): weights sized from the quantization_config as vLLM reads it."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from servespec.knowledge.memory import GIB, EstimateInput, weight_bytes
from servespec.knowledge.models import _catalog, catalogued, facts_from_config, part_params

MX = {"dtype": "fp4", "qscheme": "per_group", "group_size": 32, "scale_format": "e8m0", "is_dynamic": False}


def _glm(quant: dict[str, Any]) -> Any:
    config = copy.deepcopy(_catalog()["zai-org/glm-5.1"]["config"])
    config["quantization_config"] = {"quant_method": "quark", "export": {"kv_cache_group": []}, **quant}
    return facts_from_config(config, "quark-test")


def _gib(facts: Any) -> float:
    return weight_bytes(EstimateInput(engine="sglang", release=None, model=facts, gpu=None)) / GIB


def test_global_mxfp4_with_excluded_attention() -> None:
    """MXFP4 everywhere (4 bits and an e8m0 scale per 32) but the attention, the router and the LM head."""
    facts = _glm({"global_quant_config": {"weight": MX, "input_tensors": MX}, "layer_quant_config": {},
                  "exclude": ["lm_head", "*self_attn*", "*mlp.gate"]})  # fmt: skip
    assert (facts.quant_method, facts.quant_bits) == ("quark", 4.25)
    assert dict((part, bits) for part, _, bits in facts.quant_parts) == {"attention": None, "lm_head": None}
    glm = catalogued("zai-org/GLM-5.1")
    assert glm is not None
    parts = part_params(glm)
    embed = 2 * glm.vocab_size * glm.hidden_size  # input embedding and LM head, untied, in bfloat16
    expected = (parts["experts"] + parts["mlp"]) * 4.25 / 8 + parts["attention"] * 2 + embed * 2
    assert _gib(facts) == pytest.approx(expected / GIB, rel=1e-6)


def test_layer_patterns_take_their_own_width() -> None:
    """A layer_quant_config pattern overrides the global spec: FP8 attention beside MXFP4 elsewhere is smaller
    than bfloat16 attention and larger than no exclusion at all."""
    fp8 = {"dtype": "fp8_e4m3", "qscheme": "per_channel"}
    both = {"global_quant_config": {"weight": MX}, "exclude": ["lm_head"]}
    fp8_attention = _glm({**both, "layer_quant_config": {"*self_attn*": {"weight": fp8}}})
    bf16_attention = _glm({**both, "exclude": ["lm_head", "*self_attn*"]})
    all_mx = _glm(both)
    assert ("attention", 1.0, 8.0) in fp8_attention.quant_parts
    assert _gib(all_mx) < _gib(fp8_attention) < _gib(bf16_attention)


def test_an_unread_weight_dtype_leaves_the_width_unknown() -> None:
    facts = _glm({"global_quant_config": {"weight": {"dtype": "nf3"}}})
    assert (facts.quant_method, facts.quant_bits) == ("quark", None)
