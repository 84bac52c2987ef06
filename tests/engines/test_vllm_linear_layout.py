"""vLLM's KV layout for hybrid linear-attention models (Gated DeltaNet, KDA), per release (issue 23, item 1).

The arithmetic is the release's (scripts/catalog/vllm.py reads it into ``hybrid_kv_cache``): the attention block
grows until one page holds a linear layer's state, in multiples of the release's alignment; every group's page
is then that size; a request takes ``ceil(max_model_len / block)`` blocks per full-attention group and one (two
under prefix caching's ``align`` mode, 0.15+) per state group; from 0.20.1 the release reports
``num_blocks / blocks per request × max_model_len`` tokens. The two club-3090 logs of Qwen3.6-35B-A3B-NVFP4 on
vLLM 0.24.0 (tests/data/vllm_logs 002 and 155) give the KV budget they were laid out in, which fixes every
other input: the token figures they print are reproduced from the budget alone.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import pytest

from servespec.engines import get
from servespec.engines.vllm.memory import kv_tokens, linear_state_page
from servespec.knowledge.memory import GIB, EstimateInput
from servespec.knowledge.models import ModelFacts, catalogued

QWEN3_6 = "nvidia/Qwen3.6-35B-A3B-NVFP4"
CONTEXT = 131072
# the two logs' settings (non-default args): fp8 KV cache, prefix caching on, one sequence, 8192 batched tokens
LOGGED = {"kv_cache_dtype": "fp8", "enable_prefix_caching": True, "max_num_batched_tokens": 8192, "max_num_seqs": 1}


def _model() -> ModelFacts:
    model = catalogued(QWEN3_6)
    assert model is not None
    return model


def _input(version: str, options: dict[str, Any], model: ModelFacts | None = None) -> EstimateInput:
    return EstimateInput(
        engine="vllm",
        release=get("vllm").select(version).release,
        model=model or _model(),
        gpu=None,
        max_model_len=CONTEXT,
        options=options,
        engine_version=version,
        kv_cache_dtype_option="kv_cache_dtype",
    )


def test_the_config_reads_what_the_state_needs() -> None:
    model = _model()
    assert model.architecture == "Qwen3_5MoeForConditionalGeneration"
    assert model.linear_ssm_dtype == "float32"
    assert (model.layers, model.linear_layers, model.kv_heads, model.head_dim) == (40, 30, 2, 256)


def test_qwen3_5_state_is_float32_from_0_17() -> None:
    """The conv state (8192 channels x 3) in bf16, the recurrent state (32 x 128 x 128) in the config's float32
    from 0.17.0 (Qwen3_5ForConditionalGenerationConfig); before, both in the model's dtype."""
    conv, recurrent = 8192 * 3, 32 * 128 * 128
    assert linear_state_page(_input("0.24.0", {}), _fact("0.24.0")) == conv * 2 + recurrent * 4
    assert linear_state_page(_input("0.16.0", {}), _fact("0.16.0")) == (conv + recurrent) * 2
    asked = _input("0.24.0", {"mamba_ssm_cache_dtype": "float16"})
    assert linear_state_page(asked, _fact("0.24.0")) == (conv + recurrent) * 2


def _fact(version: str) -> Any:
    fact = get("vllm").select(version).release.facts.hybrid_kv_cache
    assert fact is not None
    return fact


@pytest.mark.parametrize(("log", "gib", "tokens"), [("002", 5.98, 567_978), ("155", 6.01, 569_878)])
def test_the_logged_token_figures_follow_from_the_logged_budget(log: str, gib: float, tokens: int) -> None:
    """fp8 attention: 2 x 2 x 256 = 1024 bytes per token and layer; the state, 2,146,304 bytes, sets the block to
    16 x cdiv(2,146,304, 16 x 1024) = 2096 tokens; 4 groups of 10 layers; a request takes 63 attention blocks and
    2 per state group (align mode): 69. The budget holds floor(gib / (2096 x 1024 x 10)) blocks."""
    blocks = int(gib * GIB // (2096 * 1024 * 10))
    assert int(blocks / (math.ceil(CONTEXT / 2096) + 3 * 2) * CONTEXT) == tokens  # the arithmetic above, by hand
    assert kv_tokens(_input("0.24.0", LOGGED), gib, 8192) == tokens, log


def test_without_prefix_caching_a_state_group_takes_one_block() -> None:
    off = kv_tokens(_input("0.24.0", {**LOGGED, "enable_prefix_caching": False}), 6.01, 8192)
    assert off == int(300 / (63 + 3) * CONTEXT)
    # 0.24.0 leaves prefix caching off for hybrid models by default (default_prefix_caching ... not is_hybrid)
    unset = {k: v for k, v in LOGGED.items() if k != "enable_prefix_caching"}
    assert kv_tokens(_input("0.24.0", unset), 6.01, 8192) == off


def test_before_0_17_the_state_is_sized_in_the_model_dtype() -> None:
    """0.16.0: bf16 state (1,097,728 bytes): 16 x cdiv(1,097,728, 16 x 1024) = 1072-token blocks; blocks per group
    reported (num_blocks // 4 groups x block)."""
    blocks = int(6.01 * GIB // (1072 * 1024 * 10))
    assert kv_tokens(_input("0.16.0", LOGGED), 6.01, 8192) == blocks // 4 * 1072


def test_a_larger_block_size_scales_the_alignment_from_0_20() -> None:
    """0.20+: kernel_block_alignment_size = max(16, block_size): block 64 makes the state's block 64 x cdiv(...)."""
    found = kv_tokens(_input("0.24.0", {**LOGGED, "block_size": 64}), 6.01, 8192)
    block = 64 * math.ceil(2_146_304 / (64 * 1024))  # 2112
    blocks = int(6.01 * GIB // (block * 1024 * 10))
    assert found == int(blocks / (math.ceil(CONTEXT / block) + 6) * CONTEXT)


@pytest.mark.parametrize(
    ("version", "options", "reason"),
    [
        ("0.14.0", {"enable_prefix_caching": True}, "chunk size"),
        ("0.33.0", {}, None),  # prefix caching on by default from 0.28; on Hopper, prefill checkpoints modelled
        ("0.24.0", {"enable_prefix_caching": True}, None),
        ("0.33.0", {"enable_prefix_caching": False}, None),
    ],
)
def test_layouts_not_modelled_are_hedged(version: str, options: dict[str, Any], reason: str | None) -> None:
    from servespec.knowledge import gpus

    inp = replace(_input(version, options), gpu=gpus.resolve("H100-SXM5-80GB"))
    plan = get("vllm").estimate(inp)
    assert plan is not None
    if reason is None:
        assert plan.one_sequence_floor_gib is None and "hybrid KV-cache layout (per-type layer groups)" in plan.notes
    else:
        assert plan.one_sequence_floor_gib is not None
        assert any(reason in note for note in plan.notes), plan.notes


def test_speculative_blocks_join_a_state_group_from_0_15() -> None:
    """``MambaSpec`` counts ``num_speculative_tokens`` more state blocks per request from 0.15.0 (its
    ``num_speculative_blocks``; the release's ``speculative_memory.linear_state_speculative_blocks``); an MTP draft
    without ``num_tokens`` proposes as many tokens as it has layers (vLLM's default ``n_predict``: 1 here)."""
    from servespec.engines.vllm.memory import linear_state_rule

    inp = replace(_input("0.24.0", LOGGED), speculative="mtp")
    assert linear_state_rule(replace(inp, speculative=None), _fact("0.24.0")) == (16, 2)
    assert linear_state_rule(inp, _fact("0.24.0")) == (16, 3)
    assert linear_state_rule(replace(inp, speculative_tokens=3), _fact("0.24.0")) == (16, 5)
    assert linear_state_rule(replace(inp, speculative="ngram", speculative_tokens=4), _fact("0.24.0")) == (16, 6)
    unknown = linear_state_rule(replace(inp, speculative="eagle"), _fact("0.24.0"))
    assert isinstance(unknown, str) and "count is not given" in unknown
    older = replace(_input("0.14.0", {"kv_cache_dtype": "fp8"}), speculative="mtp", speculative_tokens=3)
    assert linear_state_rule(older, _fact("0.14.0"))[1] == 1  # 0.14: the state page only


def test_mtp_layers_join_the_full_attention_groups() -> None:
    """An MTP draft's decoder layer is a full-attention layer in the same pool (``get_kv_cache_spec`` lists the
    drafter's layers): Qwen3.6-35B-A3B's 10 full-attention and 30 Gated DeltaNet layers become 11 and 30, grouped by
    11 (30 >= 11 x 1.5): one full group and three state groups, each request taking ``ceil(L / block)`` blocks in the
    first and 2 + 3 in each of the others under prefix caching with three speculative tokens."""
    from servespec.engines.vllm.memory import hybrid_layout, linear_state_rule

    base = _input("0.24.0", LOGGED)
    inp = replace(base, speculative="mtp", speculative_tokens=3)
    block, _ = linear_state_rule(inp, _fact("0.24.0"))
    assert isinstance(block, int)
    page_block = block * math.ceil(linear_state_page(inp, _fact("0.24.0")) / (block * 2 * 2 * 256))
    drafted = hybrid_layout(inp, 6.0, 16, 8192)
    plain = hybrid_layout(base, 6.0, 16, 8192)
    assert drafted is not None and plain is not None
    per_layer = page_block * 2 * 2 * 256  # fp8: K and V, 2 heads of 256
    per_request = math.ceil(CONTEXT / page_block) + 3 * (2 + 3)
    assert drafted.one_sequence_bytes == per_request * per_layer * 11
    assert drafted.growing_bytes_per_token == 11 * 2 * 2 * 256
    assert plain.growing_bytes_per_token == 10 * 2 * 2 * 256
    assert drafted.tokens < plain.tokens


@pytest.mark.parametrize(
    ("version", "gpu", "options", "block"),
    [
        ("0.14.0", "H100-SXM5-80GB", {}, 1072),  # 16 x cdiv(1,097,728, 16 x 1024): bf16 state before 0.17
        ("0.14.0", "B200", {}, 1088),  # FlashInfer's head-256 case on Blackwell: 32 x cdiv(...)
        ("0.14.0", "B300", {}, 1088),  # is_device_capability_family(100) from 0.13: 10.3 too
        ("0.11.1", "B300", {}, 1072),  # is_device_capability(100): 10.0 only
        ("0.11.1", "B200", {}, 1088),
        ("0.14.0", "B200", {"attention_backend": "FLASH_ATTN"}, 1072),  # another backend chosen
        ("0.17.1", "B200", {}, 2112),  # float32 recurrent state from 0.17: 32 x cdiv(2,146,304, 32 x 1024)
        ("0.18.0", "B200", {}, 2096),  # the case is gone from 0.18: 16 x cdiv(...)
    ],
)
def test_blackwell_head_256_aligns_to_32_where_the_release_says(
    version: str, gpu: str, options: dict[str, Any], block: int
) -> None:
    from servespec.engines.vllm.memory import state_block
    from servespec.knowledge import gpus

    inp = replace(_input(version, {"kv_cache_dtype": "fp8", **options}), gpu=gpus.resolve(gpu))
    assert state_block(inp, _fact(version), 16) == (block, 1)


@pytest.mark.parametrize(
    ("gpu", "options", "rule"),
    [
        ("H100-SXM5-80GB", {}, (64, 3)),  # FlashInfer's GDN prefill on 9.0: lcm(16, 64), 2 + 1 checkpoint block
        ("B200", {}, (64, 3)),  # 10.x with head_k_dim 128 and the wheel's CUDA 13 runtime
        ("RTX-4090", {}, (16, 2)),  # 8.9: Triton's prefill, no checkpoints
        ("H100-SXM5-80GB", {"gdn_prefill_backend": "triton"}, (16, 2)),
        ("H100-SXM5-80GB", {"enable_prefix_caching": False}, (16, 1)),
        (None, {}, None),  # the GPU decides the prefill kernel: not known without one
    ],
)
def test_0_33_prefill_checkpoints_follow_the_gdn_prefill_kernel(
    gpu: str | None, options: dict[str, Any], rule: tuple[int, int] | None
) -> None:
    from servespec.engines.vllm.memory import linear_state_rule
    from servespec.knowledge import gpus

    inp = replace(_input("0.33.0", options), gpu=gpus.resolve(gpu) if gpu else None)
    found = linear_state_rule(inp, _fact("0.33.0"))
    assert found == rule if rule is not None else isinstance(found, str)


def test_mla_beside_a_linear_state_is_hedged_from_0_11_1() -> None:
    """Kimi Linear's MLA layers: the release aligns the block to the MLA kernels (64, or the MLA backend's sizes from
    0.20), which the estimator does not model; 0.10-0.11.0's literal 16 applies to any attention."""
    from servespec.engines.vllm.memory import linear_state_rule

    mla = replace(_model(), kv_lora_rank=512, qk_rope_head_dim=64)
    assert mla.is_mla
    found = linear_state_rule(_input("0.24.0", {}, mla), _fact("0.24.0"))
    assert isinstance(found, str) and "MLA" in found
    assert linear_state_rule(_input("0.11.0", {}, mla), _fact("0.11.0")) == (16, 1)


def test_the_sampler_warm_up_holds_the_rejection_logits_under_speculative_decoding() -> None:
    """V1's ``_dummy_sampler_run`` builds a logits tensor of one draft row (0.8.1-0.11.0), then a draft and a bonus
    row (0.11.1 on), per dummy request for the rejection sampler (``profile_rejection_rows``): the profiled sampler
    peak grows by it, in the model's dtype, for any method (n-gram too); without speculative decoding nothing."""
    from servespec.engines.vllm.memory import _activation, rejection_warmup_gib

    model = _model()
    for version, per_request in (("0.10.2", 1), ("0.24.0", 2)):
        inp = replace(_input(version, {}), speculative="ngram", speculative_tokens=3)
        expected = per_request * 256 * (model.vocab_size or 0) * 2 / GIB
        assert rejection_warmup_gib(inp, 256) == pytest.approx(expected)
        assert rejection_warmup_gib(replace(inp, speculative=None), 256) == 0.0
        # 512 batched tokens: the sampler's pass over 256 rows of a 248k vocabulary is the peak, not the forward pass
        plain = _activation(replace(inp, speculative=None), 512, 256)
        assert _activation(inp, 512, 256) - plain == pytest.approx(expected), version
    assert rejection_warmup_gib(replace(_input("0.8.0", {}), speculative="ngram"), 256) == 0.0


def test_a_draft_checkpoint_of_the_targets_layer_shape_joins_its_groups_else_it_is_hedged() -> None:
    """A draft checkpoint (EAGLE head, draft model, DFlash) whose layers are full attention with a target layer's
    KV bytes per token joins the full-attention groups as an MTP layer does; one of another shape (or not known)
    leaves the hybrid layout unsized (``hybrid_layout_unknown``, the one-sequence floor)."""
    from servespec.engines.vllm.memory import hybrid_layout, hybrid_layout_unknown
    from servespec.knowledge.models import facts_from_config

    head = {"model_type": "llama", "num_hidden_layers": 1, "hidden_size": 2048, "num_attention_heads": 16}
    same = facts_from_config({**head, "num_key_value_heads": 2, "head_dim": 256}, "same")
    other = facts_from_config({**head, "num_key_value_heads": 8, "head_dim": 128}, "other")
    base = replace(_input("0.24.0", LOGGED), speculative_tokens=3)
    mtp = hybrid_layout(replace(base, speculative="mtp"), 6.0, 16, 8192)
    drafted = hybrid_layout(replace(base, speculative="eagle3", draft=same), 6.0, 16, 8192)
    assert mtp is not None and drafted == mtp
    for draft in (other, None):
        inp = replace(base, speculative="dflash", draft=draft)
        assert hybrid_layout(inp, 6.0, 16, 8192) is None and hybrid_layout_unknown(inp)
