"""vLLM's memory per GPU under data + expert parallelism, against tensor parallelism, worked by hand.

A small Qwen3-MoE config (8 experts, 4 KV heads) on two GPUs, laid out as vLLM lays it
(engines/vllm/parallel.py ``vllm_layout``; fused_moe/config.py ``FusedMoEParallelConfig.make``, v0.10.1 L273-L306):

- ``--tensor-parallel-size 2``: everything sharded over the two GPUs, each expert too; each GPU holds
  2 of the 4 KV heads;
- ``--data-parallel-size 2 --enable-expert-parallel``: each GPU is its own engine rank with the whole attention,
  embeddings and LM head and all 4 KV heads, and 4 of the 8 experts whole;
- ``--data-parallel-size 2`` alone: the same, but each expert tensor-sharded over both GPUs (the MoE group is
  tensor × data either way).
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from servespec.engines import get
from servespec.engines.vllm.memory import mxfp4_padding_gib, redundant_experts_gib
from servespec.engines.vllm.parallel import vllm_layout
from servespec.knowledge import gpus, models
from servespec.knowledge.memory import (
    GIB,
    EstimateInput,
    kv_bytes_per_token,
    routed_expert_bytes,
    weight_bytes,
    weights_per_gpu,
)
from tests.engines.test_vllm_mxfp4 import _log

VLLM = get("vllm")
HIDDEN, LAYERS, HEADS, KV_HEADS, HEAD_DIM, EXPERTS, MOE_I, VOCAB = 1024, 4, 8, 4, 128, 8, 512, 32000
CONFIG = {
    "architectures": ["Qwen3MoeForCausalLM"],
    "model_type": "qwen3_moe",
    "hidden_size": HIDDEN,
    "intermediate_size": 2048,
    "num_hidden_layers": LAYERS,
    "num_attention_heads": HEADS,
    "num_key_value_heads": KV_HEADS,
    "head_dim": HEAD_DIM,
    "vocab_size": VOCAB,
    "max_position_embeddings": 8192,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "num_experts": EXPERTS,
    "num_experts_per_tok": 2,
    "moe_intermediate_size": MOE_I,
    "decoder_sparse_step": 1,
    "mlp_only_layers": [],
}
EXPERT_PARAMS = LAYERS * EXPERTS * 3 * HIDDEN * MOE_I
"""gate, up and down projections of every routed expert of every layer."""
EMBED_PARAMS = 2 * VOCAB * HIDDEN
"""Input embedding and (untied) LM head."""


def _input(tensor: int, data: int, expert_parallel: bool, quantization: str | None = None) -> EstimateInput:
    placed = vllm_layout(tensor, 1, data, expert_parallel)
    return EstimateInput(
        engine="vllm",
        release=VLLM.select("0.10.1").release,
        model=models.facts_from_config(CONFIG, "tiny/qwen3-moe"),
        gpu=gpus.resolve("NVIDIA H100 80GB HBM3"),
        tensor_parallel=placed.tensor,
        data_parallel=placed.data,
        moe_group=placed.moe_group,
        quantization=quantization,
        max_model_len=8192,
        options={"enable_expert_parallel": True} if expert_parallel else {},
    )


def test_layouts() -> None:
    """The MoE group spans tensor × data with or without expert parallelism; only EP splits by expert."""
    assert (vllm_layout(2, 1, 1, False).moe_group, vllm_layout(2, 1, 1, False).moe_tensor) == (2, 2)
    assert (vllm_layout(1, 1, 2, True).moe_group, vllm_layout(1, 1, 2, True).moe_tensor) == (2, 1)
    assert (vllm_layout(1, 1, 2, False).moe_group, vllm_layout(1, 1, 2, False).moe_tensor) == (2, 2)
    assert vllm_layout(1, 1, 1, True).expert == 1  # one GPU: nothing to split


@pytest.mark.parametrize(("quantization", "bits"), [(None, 16), ("fp8", 8)])
def test_weights_per_rank_dp2_ep_against_tp2(quantization: str | None, bits: int) -> None:
    """TP2 halves every weight; DP2 + EP halves only the routed experts (by expert) and keeps the rest whole.

    With FP8 quantization the experts are 8-bit linear layers beside 16-bit embeddings: their bytes are their
    parameters at 8 bits, not their share of the parameters times all bytes (which would hand them part of the
    16-bit embeddings)."""
    tp2, dp2 = _input(2, 1, False, quantization), _input(1, 2, True, quantization)
    facts = tp2.model
    whole = weight_bytes(tp2)
    experts = EXPERT_PARAMS * bits / 8
    assert routed_expert_bytes(dp2) == pytest.approx(experts)
    assert whole == pytest.approx((facts.params - EMBED_PARAMS) * bits / 8 + EMBED_PARAMS * 2)
    assert weights_per_gpu(tp2) == pytest.approx(whole / 2 / GIB)
    assert weights_per_gpu(dp2) == pytest.approx((whole - experts + experts / 2) / GIB)
    # DP2 without EP: each expert tensor-sharded over both GPUs, the same bytes per GPU as EP
    assert weights_per_gpu(_input(1, 2, False, quantization)) == pytest.approx(weights_per_gpu(dp2))


def test_kv_cache_per_rank_dp2_against_tp2() -> None:
    """Each DP rank caches all 4 KV heads of its own requests; TP2 caches 2 per GPU."""
    tp2, dp2 = _input(2, 1, False), _input(1, 2, True)
    per_token_dp = LAYERS * 2 * KV_HEADS * HEAD_DIM * 2
    assert kv_bytes_per_token(dp2.model, 2.0, dp2.tensor_parallel, 1) == per_token_dp
    assert kv_bytes_per_token(tp2.model, 2.0, tp2.tensor_parallel, 1) == per_token_dp // 2
    tp_plan, dp_plan = VLLM.estimate(tp2), VLLM.estimate(dp2)
    assert tp_plan is not None and dp_plan is not None
    assert dp_plan.kv_bytes_per_token == 2 * tp_plan.kv_bytes_per_token
    # the DP rank's tokens are its own cache: its KV memory over its bytes per token
    assert dp_plan.kv_tokens == pytest.approx(dp_plan.kv_cache_gib * GIB / per_token_dp, rel=0.01)
    assert any("data-parallel rank" in note for note in dp_plan.notes)


def test_estimate_moves_with_the_layout() -> None:
    """The whole plan: the DP rank holds more weights than a TP2 GPU (whole attention and embeddings) and the
    estimate says so; moving from DP2 to DP4 with EP takes the experts' bytes from every rank, nothing else."""
    dp2, dp4 = _input(1, 2, True), _input(1, 4, True)
    tp2 = _input(2, 1, False)
    plans = [VLLM.estimate(inp) for inp in (tp2, dp2, dp4)]
    assert all(plan is not None for plan in plans)
    tp_plan, dp2_plan, dp4_plan = plans
    assert tp_plan is not None and dp2_plan is not None and dp4_plan is not None
    assert dp2_plan.weights_gib > tp_plan.weights_gib
    assert any("see all 2 data-parallel ranks' tokens" in note for note in dp2_plan.notes)
    assert not any("data-parallel ranks' tokens" in note for note in tp_plan.notes)
    experts_gib = EXPERT_PARAMS * 2 / GIB
    assert dp2_plan.weights_gib - dp4_plan.weights_gib == pytest.approx(experts_gib / 2 - experts_gib / 4, abs=0.01)
    assert replace(dp4, data_parallel=2, moe_group=2) == dp2


def test_mxfp4_padding_follows_the_layouts_expert_split() -> None:
    """gpt-oss-120b (MXFP4 experts) at DP2: whole experts per GPU under expert parallelism whether the layout says
    so (``resources.expert_parallel``, which renders the flag: ``EstimateInput.expert_parallel``) or the option
    does; each expert's intermediate size halved over the two GPUs without it."""
    _data, one = _log("151")  # 0.14.1 on an H100: the Triton backend
    by_layout = replace(one, data_parallel=2, moe_group=2, expert_parallel=2)
    by_option = replace(one, data_parallel=2, moe_group=2, options={**one.options, "enable_expert_parallel": True})
    sharded = replace(one, data_parallel=2, moe_group=2)
    assert mxfp4_padding_gib(by_layout) == mxfp4_padding_gib(by_option)
    assert mxfp4_padding_gib(by_layout)[1] != mxfp4_padding_gib(sharded)[1]
    assert "intermediate 2880 per rank" in mxfp4_padding_gib(by_layout)[1][0]
    assert "intermediate 2880 per rank" not in mxfp4_padding_gib(sharded)[1][0]


@pytest.mark.parametrize(
    "options",
    [
        {"enable_eplb": True, "num_redundant_experts": 2},
        {"enable_eplb": True, "eplb_config": {"num_redundant_experts": 2}},
    ],
)
def test_eplb_redundant_experts_add_to_each_rank(options: dict[str, object]) -> None:
    """DP2 + EP with 2 redundant experts: vLLM builds 8 + 2 physical experts per layer, 5 per GPU instead of 4 (one
    expert of every layer more: 4 layers x 3 x 1024 x 512 x 2 bytes); without EPLB vLLM refuses the option, and
    nothing is added."""
    dp2 = _input(1, 2, True)
    base = VLLM.estimate(dp2)
    with_eplb = VLLM.estimate(replace(dp2, options={**dp2.options, **options}))
    assert base is not None and with_eplb is not None
    one_expert_per_layer = LAYERS * 3 * HIDDEN * MOE_I * 2 / GIB
    assert redundant_experts_gib(replace(dp2, options={**dp2.options, **options}))[0] == pytest.approx(
        one_expert_per_layer, rel=1e-9
    )
    assert with_eplb.weights_gib - base.weights_gib == pytest.approx(one_expert_per_layer, abs=0.011)  # two roundings
    assert any("EPLB: 2 redundant experts" in note for note in with_eplb.notes)
    off = {key: value for key, value in options.items() if key != "enable_eplb"}
    without = VLLM.estimate(replace(dp2, options={**dp2.options, **off}))
    assert without is not None and without.weights_gib == base.weights_gib
