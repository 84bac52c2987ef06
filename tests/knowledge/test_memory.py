"""The estimator's arithmetic on known quantities."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from servespec.engines import get
from servespec.knowledge import gpus
from servespec.knowledge.memory import EstimateInput, kv_bytes_per_token, weight_bytes
from servespec.knowledge.models import catalogued


def facts(repo: str):  # type: ignore[no-untyped-def]
    found = catalogued(repo)
    assert found is not None
    return found


def test_kv_bytes_per_token_gqa_split_and_replication() -> None:
    llama = facts("meta-llama/Llama-3.1-8B-Instruct")
    # 32 layers x 2 (K and V) x 8 KV heads x 128 x 2 bytes = 128 KiB per token
    assert kv_bytes_per_token(llama, 2.0, 1, 1) == 131072
    assert kv_bytes_per_token(llama, 2.0, 2, 1) == 65536
    assert kv_bytes_per_token(llama, 2.0, 16, 1) == 131072 / 8  # one replicated head per GPU


def test_kv_bytes_per_token_mla_is_not_split() -> None:
    deepseek = facts("deepseek-ai/DeepSeek-V3")
    # 61 layers x (kv_lora_rank 512 + rope 64) x 2 bytes, on every tensor-parallel rank
    assert kv_bytes_per_token(deepseek, 2.0, 8, 1) == 61 * 576 * 2


def test_weights_by_quantization() -> None:
    llama = facts("meta-llama/Llama-3.1-70B-Instruct")
    bf16 = weight_bytes(EstimateInput("vllm", None, llama, None))
    fp8 = weight_bytes(EstimateInput("vllm", None, llama, None, quantization="fp8"))
    awq = weight_bytes(EstimateInput("vllm", None, llama, None, quantization="awq"))
    assert bf16 / 2**30 == pytest.approx(131.4, rel=0.01)
    assert fp8 < bf16 * 0.55 and awq < fp8 * 0.6


def test_gguf_bits_follow_llama_quantize_table() -> None:
    release = get("llama.cpp").select("b11312").release
    llama = facts("meta-llama/Llama-3.1-8B-Instruct")
    size = weight_bytes(EstimateInput("llama.cpp", release, llama, None, quantization="gguf", gguf_type="Q4_K_M"))
    assert size / 2**30 == pytest.approx(4.58, rel=0.01)  # "4.58G ... @ Llama-3-8B" in quantize.cpp


def test_vllm_budget_and_tokens() -> None:
    release = get("vllm").select("0.11.0").release
    plan = get("vllm").estimate(
        EstimateInput(
            "vllm",
            release,
            facts("meta-llama/Llama-3.1-8B-Instruct"),
            gpus.resolve("NVIDIA A100-SXM4-80GB"),
            max_model_len=8192,
        )
    )
    assert plan is not None
    assert plan.weights_gib == pytest.approx(14.96, abs=0.05)
    assert plan.kv_tokens % 16 == 0
    assert plan.kv_cache_gib == pytest.approx(0.9 * plan.total_gib - plan.weights_gib - plan.overhead_gib, abs=0.02)
    assert plan.max_sequences == pytest.approx(plan.kv_tokens / 8192, abs=0.01)


def test_gguf_engine_on_cpu_uses_host_memory() -> None:
    release = get("llama.cpp").select("b11312").release
    plan = get("llama.cpp").estimate(
        EstimateInput(
            "llama.cpp",
            release,
            facts("meta-llama/Llama-3.2-1B-Instruct"),
            None,
            quantization="gguf",
            gguf_type="Q8_0",
            max_model_len=4096,
            options={"parallel": 2},
            host_memory_gib=16,
        )
    )
    assert plan is not None and plan.total_gib == 16 and plan.kv_tokens == 8192


# llm-compressor's compressed-tensors FP8 scheme (the quantization_config of
# RedHatAI/Meta-Llama-3.1-8B-Instruct-FP8, format float-quantized: per-channel FP8 weights,
# lm_head ignored) on the Llama-3.1-8B-Instruct architecture the repo keeps.
FP8_COMPRESSED_TENSORS = {
    "quant_method": "compressed-tensors",
    "format": "float-quantized",
    "config_groups": {
        "group_0": {
            "targets": ["Linear"],
            "weights": {"num_bits": 8, "type": "float", "strategy": "channel", "symmetric": True, "dynamic": False},
            "input_activations": {"num_bits": 8, "type": "float", "strategy": "token", "dynamic": True},
        }
    },
    "ignore": ["lm_head"],
    "quantization_status": "compressed",
}


def _vllm_input(model, release: str = "0.11.0", length: int = 131072, **kw):  # type: ignore[no-untyped-def]
    engine = get("vllm")
    return EstimateInput(
        engine="vllm",
        release=engine.select(release).release,
        model=model,
        gpu=gpus.resolve("H100-SXM5-80GB"),
        max_model_len=length,
        engine_version=release,
        kv_cache_dtype_option="kv_cache_dtype",
        **kw,
    )


def test_fp8_compressed_tensors_checkpoint_sized_without_naming_the_format() -> None:
    from dataclasses import asdict

    from servespec.knowledge.models import facts_from_config

    base = facts("meta-llama/Llama-3.1-8B-Instruct")
    config = {
        "model_type": "llama",
        **{
            k: v for k, v in asdict(base).items() if k in ("vocab_size", "intermediate_size", "max_position_embeddings")
        },
        "num_hidden_layers": base.layers,
        "hidden_size": base.hidden_size,
        "num_attention_heads": base.attention_heads,
        "num_key_value_heads": base.kv_heads,
        "torch_dtype": "bfloat16",
        "quantization_config": FP8_COMPRESSED_TENSORS,
    }
    fp8 = facts_from_config(config, "RedHatAI/Meta-Llama-3.1-8B-Instruct-FP8")
    assert (fp8.quant_method, fp8.quant_bits) == ("fp8", 8.0)
    # The Hub page's safetensors total for the FP8 repo: 9.08 GB (FP8 linears, BF16 embeddings and head).
    assert weight_bytes(_vllm_input(fp8, quantization="auto")) == pytest.approx(9.08e9, rel=0.02)
    # The same architecture unquantized is twice as big on its linears (16.06 GB published).
    assert weight_bytes(_vllm_input(base, quantization="auto")) == pytest.approx(16.06e9, rel=0.01)


@pytest.mark.parametrize(
    ("repo", "published"),
    [
        # safetensors totals on the Hub pages: gpt-oss-120b 65.3 GB, gpt-oss-20b 13.8 GB (MXFP4 experts, BF16 rest).
        ("openai/gpt-oss-120b", 65.3e9),
        ("openai/gpt-oss-20b", 13.8e9),
    ],
)
def test_gpt_oss_mxfp4_sized_from_its_quantization_config(repo: str, published: float) -> None:
    model = facts(repo)
    assert (model.quant_method, model.quant_bits) == ("mxfp4", 4.25)
    assert weight_bytes(_vllm_input(model)) == pytest.approx(published, rel=0.02)


def test_explicit_quantization_means_quantize_at_load() -> None:
    base = facts("meta-llama/Llama-3.1-8B-Instruct")
    full = weight_bytes(_vllm_input(base))
    assert weight_bytes(_vllm_input(base, quantization="fp8")) < 0.6 * full
    assert weight_bytes(_vllm_input(base, quantization="bitsandbytes")) < 0.4 * full


def test_gpt_oss_120b_one_sequence_with_the_hybrid_allocator() -> None:
    """18 full-attention layers cache 131072 tokens, 18 sliding layers only their 128-token window."""
    model = facts("openai/gpt-oss-120b")
    # an install without FlashInfer, as log 150's (its -2.14 GiB is the native sort's peak, not FlashInfer's)
    plan = get("vllm").estimate(replace(_vllm_input(model), flashinfer_sampler=False))
    assert plan is not None
    # (8192 full blocks + 521 window blocks) x 16 tokens x 2048 B x 18 layers
    assert plan.one_sequence_gib == pytest.approx((8192 + 521) * 16 * 2048 * 18 / 1024**3, abs=0.01)
    assert plan.one_sequence_gib < 5.0  # was 9.00 GiB: every layer at full length
    # Sequences are counted at that windowed size. On 0.11.0 an H100 runs the experts on Marlin (triton_kernels
    # is bundled from 0.12.0), padded to 65.89 GiB of weights, and the sampler warm-up sorts 1024 x 201088 logits:
    # no KV budget is left (log 150, 0.10.1 on one H100 at 131072: "Available KV cache memory: -2.14 GiB").
    assert plan.kv_cache_gib < 0 and plan.max_sequences == 0
    # 0.11.0's own image installs FlashInfer (docker/Dockerfile v0.3.1), which its sampler then takes: 14 bytes per
    # row per vocabulary entry instead of the sort's 37 leave about 4.4 GiB more
    imaged = get("vllm").estimate(_vllm_input(model))
    assert imaged is not None
    assert imaged.kv_cache_gib - plan.kv_cache_gib == pytest.approx(1024 * 201088 * 23 / 1024**3, abs=0.01)


def test_release_without_hybrid_manager_allocates_every_layer() -> None:
    model = facts("openai/gpt-oss-120b")
    inp = _vllm_input(model)
    plain = get("vllm").estimate(replace(inp, release=None))
    assert plain is not None and plain.one_sequence_gib == pytest.approx(9.0, abs=0.01)


def test_reported_tokens_follow_the_release() -> None:
    """0.11 logs num_blocks // groups × block; 0.33 logs max_concurrency × max_model_len. With one batch per
    sliding layer on both (0.33's async scheduling off) the same layout holds about as many sequences;
    0.33's default (async on: two batches per sliding layer, hybrid_kv_cache.in_flight_window) holds fewer."""
    model = facts("google/gemma-3-1b-it")
    old = get("vllm").estimate(_vllm_input(model, "0.11.0", 32768))
    one_batch = get("vllm").estimate(_vllm_input(model, "0.33.0", 32768, options={"async_scheduling": False}))
    new = get("vllm").estimate(_vllm_input(model, "0.33.0", 32768))
    assert old is not None and one_batch is not None and new is not None
    assert one_batch.kv_tokens > 2 * old.kv_tokens
    # per GiB of KV cache: 0.11.0's sampler warm-up sorts the vocabulary (a larger peak, a smaller cache)
    assert old.max_sequences / old.kv_cache_gib == pytest.approx(
        one_batch.max_sequences / one_batch.kv_cache_gib, rel=0.05
    )
    assert new.max_sequences < 0.9 * one_batch.max_sequences


QWEN3_NEXT = {
    # Qwen3-Next-80B-A3B's architecture fields (config.json of the Qwen3-Next release, as transcribed in
    # public test fixtures; the Hub page was not reachable): 48 layers, 3 Gated DeltaNet per full attention.
    "model_type": "qwen3_next",
    "hidden_size": 2048,
    "num_hidden_layers": 48,
    "intermediate_size": 5120,
    "num_attention_heads": 16,
    "num_key_value_heads": 2,
    "head_dim": 256,
    "vocab_size": 151936,
    "max_position_embeddings": 262144,
    "full_attention_interval": 4,
    "linear_conv_kernel_dim": 4,
    "linear_key_head_dim": 128,
    "linear_num_key_heads": 16,
    "linear_num_value_heads": 32,
    "linear_value_head_dim": 128,
    "num_experts": 512,
    "num_experts_per_tok": 10,
    "moe_intermediate_size": 512,
    "shared_expert_intermediate_size": 512,
    "tie_word_embeddings": False,
    "dtype": "bfloat16",
}


def test_qwen3_next_linear_layers_hold_no_per_token_kv() -> None:
    from servespec.knowledge.models import facts_from_config

    model = facts_from_config(QWEN3_NEXT, "Qwen/Qwen3-Next-80B-A3B-Instruct")
    assert model.linear_layers == 36
    # 12 attention layers x 2 x 2 KV heads x 256 x 2 bytes
    assert kv_bytes_per_token(model, 2.0, 1, 1) == 12 * 2 * 2 * 256 * 2
    old = get("vllm").estimate(_vllm_input(model, "0.11.0", 32768, tensor_parallel=4))
    new = get("vllm").estimate(_vllm_input(model, "0.33.0", 32768, tensor_parallel=4))
    assert old is not None and new is not None
    # 0.11.0 grows attention blocks to 16 x cdiv(DeltaNet state page, 16 x per-token page): the layout is sized.
    assert old.one_sequence_floor_gib is None and "hybrid KV-cache layout (per-type layer groups)" in old.notes
    # 0.33.0 turns prefix caching on for hybrid models by default; on Hopper its align mode adds a prefill checkpoint
    # block and a 64-token alignment (hybrid_kv_cache.checkpoint_*): sized, each sequence taking more than without.
    assert new.one_sequence_floor_gib is None and "hybrid KV-cache layout (per-type layer groups)" in new.notes
    off = get("vllm").estimate(
        _vllm_input(model, "0.33.0", 32768, tensor_parallel=4, options={"enable_prefix_caching": False})
    )
    assert off is not None and off.one_sequence_floor_gib is None
    assert new.one_sequence_gib > off.one_sequence_gib
    # 0.14.0 with prefix caching aligns the state's blocks to its chunk size, not modelled: hedged with a floor.
    hedged = get("vllm").estimate(
        _vllm_input(model, "0.14.0", 32768, tensor_parallel=4, options={"enable_prefix_caching": True})
    )
    assert hedged is not None and hedged.one_sequence_floor_gib is not None
    assert any("chunk size" in note for note in hedged.notes)


def test_a_gguf_header_gives_the_weights_exactly() -> None:
    import dataclasses

    llama = dataclasses.replace(facts("meta-llama/Llama-3.2-1B-Instruct"), weight_bytes=807_694_464, file_type="Q4_K_M")
    release = get("llama.cpp").select("b11312").release
    header = EstimateInput("llama.cpp", release, llama, None, quantization="gguf")
    assert weight_bytes(header) == 807_694_464  # the file's own tensors, not bits-per-weight arithmetic
    other = EstimateInput("llama.cpp", release, llama, None, quantization="gguf", gguf_type="Q8_0")
    assert weight_bytes(other) != 807_694_464  # a spec naming another file type is sized as that type


@pytest.mark.parametrize(
    ("version", "options", "utilization"),
    [
        ("0.33.0", {}, 0.92),  # CacheConfig's fixed default of that release
        ("0.34.0", {}, 1.0),  # unset: the extensible KV cache is on by default on CUDA
        ("0.34.0", {"enable_extensible_kv_cache": False}, 0.92),
        ("0.34.0", {"kv_cache_memory_bytes": 2**34}, 0.92),  # rules the extensible cache out
        ("0.34.0", {"gpu_memory_utilization": 0.8}, 0.8),
    ],
)
def test_vllm_default_utilization_follows_the_release(
    version: str, options: dict[str, Any], utilization: float
) -> None:
    """vLLM 0.34.0 resolves an unset gpu_memory_utilization at run time (vllm/config/cache.py L495, v0.34.0)."""
    plan = get("vllm").estimate(
        EstimateInput(
            "vllm",
            get("vllm").select(version).release,
            facts("meta-llama/Llama-3.1-8B-Instruct"),
            gpus.resolve("NVIDIA H100 80GB HBM3"),
            max_model_len=8192,
            options=options,
        )
    )
    assert plan is not None and f"gpu_memory_utilization {utilization}" in plan.notes


@pytest.mark.parametrize(
    ("log", "repo"),
    [
        ("023-gemma-2-9b-it-tp1-8192-h100-llmd", "google/gemma-2-9b-it"),
        ("075-gpt-oss-20b-tp1-8192-h100-llmd", "openai/gpt-oss-20b"),
        ("067-qwen3-30b-a3b-tp1-8192-h100-llmd", "Qwen/Qwen3-30B-A3B"),
        ("039-llama-3.1-8b-instruct-tp1-8192-h100-llmd", "meta-llama/Llama-3.1-8B-Instruct"),
    ],
)
def test_vllm_profiling_peak_is_the_sampler_sort_where_the_release_sorts_the_vocabulary(log: str, repo: str) -> None:
    """vLLM 0.19.0's profile run (gpu_model_runner.py _dummy_sampler_run, top_k = vocab - 1 with top_p) sorts
    float32 logits of 1024 dummy requests over the vocabulary after the forward pass: its logged "torch peak
    memory increase" is within 0.4 GiB of max(forward, 16 B x 1024 x vocab) (Qwen3-30B-A3B is 0.36 low: the fused
    MoE buffers are not modelled). Was: forward + 8 B x 1024 x vocab, 0.8-1.4 GiB low for large vocabularies or
    small MLPs (Gemma 2, gpt-oss, Qwen3-30B-A3B)."""
    from pathlib import Path

    from ruamel.yaml import YAML

    data = YAML(typ="safe").load((Path(__file__).parent.parent / "data" / "vllm_logs" / f"{log}.yaml").read_text())
    assert data["vllm_version"] == "0.19.0"
    plan = get("vllm").estimate(_vllm_input(facts(repo), "0.19.0", 8192))
    assert plan is not None
    release = get("vllm").select("0.19.0").release
    assert release is not None and release.facts.profile_sampler_sorts_vocab is not None
    activation = plan.overhead_gib - 0.05  # one GPU: VLLM_NON_TORCH_GIB[0]; 0.19.0 counts no CUDA graphs
    assert activation == pytest.approx(data["observed"]["activation_peak_gib"], abs=0.4)


def test_a_release_whose_sampler_warm_up_is_not_read_keeps_the_generic_peak() -> None:
    """0.34.0 rewrote the warm-up (gpu/model_runner.py SamplingParams.for_sampler_warmup): not modelled, so the
    generic formula (forward + 8 B x requests x vocab) stays, as for a release whose warm-up is not read; Model Runner
    V2's penalty state (every model on 0.34.0) is counted beside it."""
    from servespec.engines.vllm.memory import penalty_state_gib
    from servespec.knowledge.memory import activation_gib

    release = get("vllm").select("0.34.0").release
    assert release is not None and release.facts.profile_sampler_sorts_vocab is not None
    assert release.facts.profile_sampler_sorts_vocab.value is False
    inp = _vllm_input(facts("google/gemma-2-9b-it"), "0.34.0", 8192, options={"enforce_eager": True})
    plan = get("vllm").estimate(inp)
    assert plan is not None
    penalties, _, _ = penalty_state_gib(inp, 1024)
    assert penalties > 0.9  # 1024 slots x Gemma 2's 256,000-entry vocabulary, int32
    assert plan.overhead_gib == pytest.approx(activation_gib(inp, 8192, 1024) + 0.05 + penalties, abs=0.01)


def test_nccl_nvls_buffers_are_counted_for_tensor_parallel_on_nvswitch_boards_only() -> None:
    """vLLM's non-torch memory steps up by about 1.8 GiB at TP > 1 on H100 SXM (NVLS), not on A100 or PCIe parts,
    nor with pipeline parallelism alone (knowledge/memory.py NVLS_GIB)."""
    from servespec.knowledge import gpus, models
    from servespec.knowledge.memory import NVLS_GIB, EstimateInput, nvls_gib

    llama = models.catalogued("meta-llama/Llama-3.1-8B-Instruct")
    assert llama is not None

    def extra(gpu: str, tp: int, pp: int = 1) -> float:
        card = gpus.resolve(gpu)
        assert card is not None
        inp = EstimateInput("vllm", None, llama, card, tensor_parallel=tp, pipeline_parallel=pp)
        return nvls_gib(inp)

    assert extra("NVIDIA H100 80GB HBM3", 2) == NVLS_GIB
    assert extra("NVIDIA B200", 8) == NVLS_GIB
    assert extra("NVIDIA H100 80GB HBM3", 1) == 0.0
    assert extra("NVIDIA H100 80GB HBM3", 1, pp=2) == 0.0
    assert extra("NVIDIA A100-SXM4-80GB", 2) == 0.0
    assert extra("NVIDIA H100 PCIe", 2) == 0.0
