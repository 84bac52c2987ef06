"""Model facts: parameters counted from config.json match the published counts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from servespec.knowledge.models import catalog_ids, catalogued, read_config

# (repo id, published total parameters, published active parameters or None, model card)
PUBLISHED = [
    ("meta-llama/Llama-3.1-8B-Instruct", 8.03e9, None, "https://huggingface.co/meta-llama/Llama-3.1-8B-Instruct"),
    ("meta-llama/Llama-3.1-70B-Instruct", 70.6e9, None, "https://huggingface.co/meta-llama/Llama-3.1-70B-Instruct"),
    ("meta-llama/Llama-3.1-405B", 405.9e9, None, "https://huggingface.co/meta-llama/Llama-3.1-405B"),
    ("meta-llama/Llama-3.2-1B-Instruct", 1.24e9, None, "https://huggingface.co/meta-llama/Llama-3.2-1B-Instruct"),
    ("meta-llama/Llama-3.2-3B-Instruct", 3.21e9, None, "https://huggingface.co/meta-llama/Llama-3.2-3B-Instruct"),
    ("Qwen/Qwen2.5-7B-Instruct", 7.61e9, None, "https://huggingface.co/Qwen/Qwen2.5-7B-Instruct"),
    ("Qwen/Qwen2.5-3B-Instruct", 3.09e9, None, "https://huggingface.co/Qwen/Qwen2.5-3B-Instruct"),
    ("Qwen/Qwen3-8B", 8.2e9, None, "https://huggingface.co/Qwen/Qwen3-8B"),
    ("Qwen/Qwen3-32B", 32.8e9, None, "https://huggingface.co/Qwen/Qwen3-32B"),
    ("Qwen/Qwen3-30B-A3B", 30.5e9, 3.3e9, "https://huggingface.co/Qwen/Qwen3-30B-A3B"),
    ("Qwen/Qwen3-235B-A22B", 235e9, 22e9, "https://huggingface.co/Qwen/Qwen3-235B-A22B"),
    ("mistralai/Mistral-7B-Instruct-v0.3", 7.25e9, None, "https://huggingface.co/mistralai/Mistral-7B-Instruct-v0.3"),
    ("mistralai/Mixtral-8x7B-v0.1", 46.7e9, 12.9e9, "https://arxiv.org/abs/2401.04088"),
    ("mistralai/Mixtral-8x22B-v0.1", 141e9, 39e9, "https://mistral.ai/news/mixtral-8x22b"),
    ("google/gemma-2-9b-it", 9.24e9, None, "https://huggingface.co/google/gemma-2-9b-it"),
    ("google/gemma-2-27b-it", 27.2e9, None, "https://huggingface.co/google/gemma-2-27b-it"),
    ("google/gemma-2-2b-it", 2.61e9, None, "https://huggingface.co/google/gemma-2-2b-it"),
    ("microsoft/Phi-3-mini-4k-instruct", 3.8e9, None, "https://huggingface.co/microsoft/Phi-3-mini-4k-instruct"),
    ("microsoft/Phi-3-medium-4k-instruct", 14e9, None, "https://huggingface.co/microsoft/Phi-3-medium-4k-instruct"),
    ("deepseek-ai/DeepSeek-V3", 671e9, 37e9, "https://arxiv.org/abs/2412.19437"),
    ("deepseek-ai/DeepSeek-V2-Lite-Chat", 15.7e9, 2.4e9, "https://huggingface.co/deepseek-ai/DeepSeek-V2-Lite-Chat"),
    ("Qwen/Qwen1.5-MoE-A2.7B", 14.3e9, 2.7e9, "https://huggingface.co/Qwen/Qwen1.5-MoE-A2.7B"),
    ("openai/gpt-oss-20b", 21e9, None, "https://huggingface.co/openai/gpt-oss-20b"),
    ("openai/gpt-oss-120b", 117e9, None, "https://huggingface.co/openai/gpt-oss-120b"),
    # Issue 23 item 4: the families users deploy today (counts without MTP layers; vision towers included)
    ("deepseek-ai/DeepSeek-V3.2", 671e9, 37e9, "https://huggingface.co/deepseek-ai/DeepSeek-V3.2 (685B with 14B MTP)"),
    ("moonshotai/Kimi-K2-Instruct", 1.04e12, 32e9, "https://huggingface.co/moonshotai/Kimi-K2-Instruct"),
    ("moonshotai/Kimi-K2.5", 1.04e12, 32e9, "https://huggingface.co/moonshotai/Kimi-K2.5"),
    # active: MiniMax states 9.8B and Qwen names 3B without the embeddings (1.2B and 1.0B here)
    ("MiniMaxAI/MiniMax-M2.5", 229.9e9, None, "https://www.emergentmind.com/topics/minimax-m2-5"),
    ("zai-org/GLM-5", 744e9, 40e9, "https://arxiv.org/abs/2602.15763"),
    ("Qwen/Qwen3.5-27B", 27e9, None, "https://huggingface.co/Qwen/Qwen3.5-27B"),
    ("Qwen/Qwen3.5-35B-A3B", 35e9, None, "https://huggingface.co/Qwen/Qwen3.5-35B-A3B"),
    ("Qwen/Qwen3.5-397B-A17B", 397e9, 17e9, "https://huggingface.co/Qwen/Qwen3.5-397B-A17B"),
    ("Qwen/Qwen3.5-122B-A10B", 122e9, 10e9, "https://huggingface.co/Qwen/Qwen3.5-122B-A10B"),
    ("nvidia/Qwen3.6-27B-NVFP4", 27e9, None, "https://huggingface.co/Qwen/Qwen3.6-27B"),
    ("nvidia/Qwen3.6-35B-A3B-NVFP4", 35e9, None, "https://huggingface.co/Qwen/Qwen3.6-35B-A3B"),
    ("nvidia/DeepSeek-V3.2-NVFP4", 671e9, 37e9, "https://huggingface.co/deepseek-ai/DeepSeek-V3.2"),
    ("Qwen/Qwen3-Next-80B-A3B-Thinking", 80e9, None, "https://huggingface.co/Qwen/Qwen3-Next-80B-A3B-Thinking"),
    ("Qwen/Qwen3.6-35B-A3B", 35e9, None, "https://huggingface.co/Qwen/Qwen3.6-35B-A3B"),
    ("Qwen/Qwen3-Coder-480B-A35B-Instruct", 480e9, 35e9, "https://huggingface.co/Qwen/Qwen3-Coder-480B-A35B-Instruct"),
    ("MiniMaxAI/MiniMax-M2.7", 230e9, None, "https://huggingface.co/docs/transformers/model_doc/minimax_m2"),
    (
        "meta-llama/Llama-4-Scout-17B-16E-Instruct",
        109e9,
        17e9,
        "https://huggingface.co/meta-llama/Llama-4-Scout-17B-16E-Instruct",
    ),
    (
        "meta-llama/Llama-4-Maverick-17B-128E-Instruct",
        400e9,
        17e9,
        "https://huggingface.co/meta-llama/Llama-4-Maverick-17B-128E-Instruct",
    ),
]


def test_catalog_has_forty_models() -> None:
    assert len(catalog_ids()) >= 40


@pytest.mark.parametrize(("repo", "total", "active", "card"), PUBLISHED, ids=[p[0] for p in PUBLISHED])
def test_parameter_count_matches_published(repo: str, total: float, active: float | None, card: str) -> None:
    facts = catalogued(repo)
    assert facts is not None, f"{repo} missing from the catalog ({card})"
    assert facts.params == pytest.approx(total, rel=0.025), card
    if active is not None:
        # Published "active" counts differ in whether they include embeddings: allow 12 %.
        assert facts.active_params == pytest.approx(active, rel=0.12), card


def test_gqa_mla_and_sliding_facts() -> None:
    llama = catalogued("meta-llama/Llama-3.1-8B-Instruct")
    assert llama is not None and (llama.kv_heads, llama.head_dim, llama.layers) == (8, 128, 32)
    deepseek = catalogued("deepseek-ai/DeepSeek-V3")
    assert deepseek is not None and deepseek.is_mla and deepseek.kv_lora_rank == 512
    gemma = catalogued("google/gemma-2-9b-it")
    assert gemma is not None and gemma.sliding_window == 4096 and gemma.sliding_layers == 21


def test_lookup_is_case_insensitive() -> None:
    assert catalogued("QWEN/qwen2.5-7b-instruct") is not None
    assert catalogued("nobody/nothing") is None


def test_read_config_file(tmp_path: Path) -> None:
    config = {
        "model_type": "llama",
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "vocab_size": 1000,
        "max_position_embeddings": 2048,
    }
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    facts = read_config(path)
    assert (facts.kv_heads, facts.head_dim, facts.max_position_embeddings) == (2, 16, 2048)
    # embed + head + 2 layers x (q,k,v 64*(64+64), o 64*64, mlp 3*64*128, norms 2*64) + final norm
    expected = 2 * 1000 * 64 + 2 * (64 * 128 + 64 * 64 + 3 * 64 * 128 + 128) + 64
    assert facts.params == expected


def test_quantization_config_formats_parsed() -> None:
    from servespec.knowledge.models import facts_from_config

    base = {"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4}
    cases = [
        ({"quant_method": "awq", "bits": 4, "group_size": 128}, ("awq", 4 + 20 / 128)),
        ({"quant_method": "gptq", "bits": 4, "group_size": 32}, ("gptq", 4 + 20 / 32)),
        ({"quant_method": "fp8", "weight_block_size": [128, 128]}, ("fp8", 8.0)),
        ({"quant_method": "mxfp4"}, ("mxfp4", 4.25)),
        ({"quant_method": "bitsandbytes", "load_in_4bit": True}, ("bitsandbytes", 4.125)),
        (  # no group_size: one scale per tensor or channel (compressed-tensors QuantizationArgs)
            {"quant_method": "compressed-tensors", "config_groups": {"g": {"weights": {"num_bits": 4, "type": "int"}}}},
            ("int4", 4.0),
        ),
        (  # pack-quantized symmetric groups of 32: a 16-bit scale per group, no zero point
            {
                "quant_method": "compressed-tensors",
                "config_groups": {
                    "g": {"weights": {"num_bits": 4, "type": "int", "group_size": 32, "symmetric": True}}
                },
            },
            ("int4", 4 + 16 / 32),
        ),
        (
            {"quant_method": "compressed-tensors", "config_groups": {"g": {"weights": {"num_bits": 8, "type": "int"}}}},
            ("int8", 8.0),
        ),
        (
            {
                "quant_method": "compressed-tensors",
                "config_groups": {"g": {"weights": {"num_bits": 4, "type": "float", "group_size": 16}}},
            },
            ("nvfp4", 4.5),
        ),
    ]
    for quant, expected in cases:
        found = facts_from_config({**base, "quantization_config": quant}, "m")
        assert (found.quant_method, found.quant_bits) == expected, quant
    fp8_group = {"g": {"weights": {"num_bits": 8, "type": "float"}}}
    older = {"quant_method": "compressed-tensors", "config_groups": fp8_group}
    assert facts_from_config({**base, "compression_config": older}, "m").quant_method == "fp8"
    modelopt = facts_from_config(base, "m", {"quantization": {"quant_algo": "NVFP4", "group_size": 16}})
    assert (modelopt.quant_method, modelopt.quant_bits) == ("nvfp4", 4.5)


def test_hybrid_layouts_from_config() -> None:
    from servespec.knowledge.models import facts_from_config

    oss = catalogued("openai/gpt-oss-120b")
    assert oss is not None and (oss.sliding_window, oss.sliding_layers) == (128, 18)
    llama4 = facts_from_config(
        {"model_type": "llama4_text", "num_hidden_layers": 48, "hidden_size": 64, "num_attention_heads": 4,
         "attention_chunk_size": 8192},
        "meta-llama/Llama-4-Scout-17B-16E-Instruct",
    )  # fmt: skip
    assert (llama4.window_kind, llama4.sliding_window, llama4.sliding_layers) == ("chunked", 8192, 36)


def test_inline_architecture_mla_and_layer_types() -> None:
    from servespec.knowledge.models import apply_inline
    from servespec.spec.models import Architecture

    inline = Architecture(
        layers=4,
        hidden_size=64,
        attention_heads=4,
        kv_lora_rank=512,
        qk_rope_head_dim=64,
        sliding_window=128,
        layer_types=["sliding_attention", "full_attention", "linear_attention", "full_attention"],
    )
    facts = apply_inline(None, inline, "inline")
    assert facts is not None and facts.is_mla and facts.qk_rope_head_dim == 64
    assert (facts.sliding_window, facts.sliding_layers, facts.linear_layers) == (128, 1, 1)


# (repo id, estimator class, attention facts the KV cache depends on)
FAMILIES = [
    ("deepseek-ai/DeepSeek-V3.2", "mla", {"kv_lora_rank": 512, "qk_rope_head_dim": 64, "is_sparse": True,
                                          "index_n_heads": 64, "index_head_dim": 128, "index_topk": 2048}),
    ("zai-org/GLM-5", "mla", {"kv_lora_rank": 512, "is_sparse": True, "index_head_dim": 128}),
    ("moonshotai/Kimi-K2-Instruct", "mla", {"kv_lora_rank": 512, "experts": 384, "is_sparse": False}),
    # text_config of kimi_k2, MoonViT's vt_* vision fields, int4 pack-quantized experts (groups of 32)
    ("moonshotai/Kimi-K2.5", "mla", {"kv_lora_rank": 512, "quant_method": "int4", "quant_bits": 4.5}),
    ("MiniMaxAI/MiniMax-M2.5", "moe", {"experts": 256, "active_experts": 8, "kv_heads": 8}),
    ("Qwen/Qwen3.5-27B", "linear", {"layers": 64, "linear_layers": 48, "attention_gate": True}),
    ("Qwen/Qwen3.5-35B-A3B", "linear", {"layers": 40, "linear_layers": 30, "experts": 256}),
    ("nvidia/Qwen3.6-35B-A3B-NVFP4", "linear", {"layers": 40, "linear_layers": 30, "quant_method": "modelopt_mixed"}),
    ("nvidia/DeepSeek-V3.2-NVFP4", "mla", {"is_sparse": True, "quant_method": "nvfp4"}),  # hf_quant_config.json
    ("meta-llama/Llama-4-Scout-17B-16E-Instruct", "sliding",
     {"window_kind": "chunked", "sliding_window": 8192, "sliding_layers": 36, "dense_layers": 0}),
    ("meta-llama/Llama-4-Maverick-17B-128E-Instruct", "sliding",
     {"window_kind": "chunked", "sliding_layers": 36, "dense_layers": 24, "intermediate_size": 16384}),
]  # fmt: skip


@pytest.mark.parametrize(("repo", "kind", "expected"), FAMILIES, ids=[f[0] for f in FAMILIES])
def test_families_resolve_with_their_attention(repo: str, kind: str, expected: dict[str, object]) -> None:
    """Issue 23 item 4: each family resolves from its real config.json (nested text_config, layer_types,
    full_attention_interval, MLA and DSA indexer fields, MoE fields) with its attention class."""
    from servespec.knowledge.error_band import model_class

    facts = catalogued(repo)
    assert facts is not None, repo
    assert model_class(facts) == kind
    assert {key: getattr(facts, key) for key in expected} == expected


def test_vision_tower_and_gated_deltanet_are_counted() -> None:
    """Qwen3.5 is a multimodal checkpoint of gated attention and Gated DeltaNet layers: every part loads."""
    from servespec.knowledge.models import facts_from_config

    qwen = catalogued("Qwen/Qwen3.5-27B")
    assert qwen is not None and qwen.vision_params == pytest.approx(0.46e9, rel=0.1)
    text_only = facts_from_config({key: value for key, value in _catalog_config("Qwen/Qwen3.5-27B").items()
                                   if key != "vision_config"}, "text")  # fmt: skip
    assert qwen.params - text_only.params == pytest.approx(qwen.vision_params)


def _catalog_config(repo: str) -> dict[str, object]:
    from servespec.knowledge.models import _catalog

    config: dict[str, object] = _catalog()[repo.lower()]["config"]
    return config


def test_gemma3_config_naming_few_fields_reads_transformers_defaults() -> None:
    """Gemma 3's config.json gives five text fields; the rest are Gemma3TextConfig's defaults (8 heads, 4 KV
    heads of 256, vocabulary 262,208, every 6th layer global), as transformers and the engines read them."""
    from servespec.knowledge.models import facts_from_config

    config = {
        "architectures": ["Gemma3ForConditionalGeneration"],
        "model_type": "gemma3",
        "mm_tokens_per_image": 256,
        "text_config": {"hidden_size": 2560, "intermediate_size": 10240, "model_type": "gemma3_text",
                        "num_hidden_layers": 34, "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
                        "sliding_window": 1024},
        "vision_config": {"hidden_size": 1152, "image_size": 896, "intermediate_size": 4304,
                          "model_type": "siglip_vision_model", "num_attention_heads": 16, "num_hidden_layers": 27,
                          "patch_size": 14},
    }  # fmt: skip
    facts = facts_from_config(config, "google/gemma-3-4b-it")
    assert (facts.attention_heads, facts.kv_heads, facts.head_dim, facts.vocab_size) == (8, 4, 256, 262_208)
    assert (facts.sliding_window, facts.sliding_layers) == (1024, 29)
    # https://huggingface.co/google/gemma-3-4b-it: 4.3B with its SigLIP tower (~0.42B)
    assert facts.params == pytest.approx(4.3e9, rel=0.02)
    given = {**config, "text_config": {**config["text_config"], "num_attention_heads": 16}}  # type: ignore[dict-item]
    assert facts_from_config(given, "g").attention_heads == 16  # a field the file gives wins


def test_parameters_match_transformers_own_models() -> None:
    """Issue 23 item 4: the count from a config equals the parameters transformers builds from it (meta device,
    tests/data/transformers_param_counts.json): Gated DeltaNet, gated attention, MLA + DSA indexer, Llama 4's
    interleaved MoE, GLM-4.5's MoE, MiniMax M2, gpt-oss, Gemma, Granite, Phi."""
    from servespec.knowledge.models import facts_from_config
    from tests.conftest import REPO

    data = json.loads((REPO / "tests" / "data" / "transformers_param_counts.json").read_text())
    assert len(data["cases"]) >= 15
    for name, case in data["cases"].items():
        facts = facts_from_config(case["config"], name)
        assert facts.params == pytest.approx(case["params"], rel=1e-4), (name, case["model"])


def test_an_architecture_servespec_does_not_size_says_which_fields() -> None:
    """sgl-project's DeepSeek V4 copies (deepseek_ref: compressed attention per layer, grouped low-rank output, no
    expert_dtype): refused, naming the fields, instead of a count from the shared fields."""
    from servespec.knowledge.models import UnsizedArchitectureError, facts_from_config

    text = {"model_type": "deepseek_ref", "num_hidden_layers": 43, "hidden_size": 4096, "num_attention_heads": 64}
    config = {**text, "compress_ratios": [4] * 43, "o_lora_rank": 1024}
    with pytest.raises(UnsizedArchitectureError, match="compress_ratios") as err:
        facts_from_config(config, "sgl-project/DeepSeek-V4-Flash-FP8")
    assert len(str(err.value)) <= 120  # REF003 quotes at most 120 characters


def test_a_lock_keeps_what_the_facts_read() -> None:
    """models.lock.yaml keeps vision_config (its tower is counted): a locked config gives the same facts."""
    from servespec.knowledge.lock import locked_config
    from servespec.knowledge.models import facts_from_config

    for repo in ("Qwen/Qwen3.5-27B", "deepseek-ai/DeepSeek-V3.2", "meta-llama/Llama-4-Maverick-17B-128E-Instruct"):
        config = _catalog_config(repo)
        assert facts_from_config(locked_config(config), repo) == facts_from_config(config, repo), repo


def test_pixtral_tower_and_mistral3_projector_are_counted() -> None:
    """Mistral Small 3.1 (Mistral3: Pixtral tower with a gated MLP, patch merger and two projector layers): the
    count matches the 44.76 GiB of bfloat16 weights vLLM 0.19.0 loaded (tests/data/vllm_logs/049); counted as a
    plain ViT (two-matrix MLP, one projector layer) the tower was 0.13B short and the weights 0.28 GiB."""
    from servespec.knowledge.models import facts_from_config

    facts = catalogued("mistralai/Mistral-Small-3.1-24B-Instruct-2503")
    assert facts is not None and facts.model_type == "mistral" and facts.layers == 40
    assert facts.params * 2 / 2**30 == pytest.approx(44.76, abs=0.06)
    config = _catalog_config("mistralai/Mistral-Small-3.1-24B-Instruct-2503")
    text_only = facts_from_config({key: value for key, value in config.items() if key != "vision_config"}, "text")
    assert facts.params - text_only.params == pytest.approx(facts.vision_params)
    assert facts.vision_params == pytest.approx(0.44e9, rel=0.02)


def test_catalogued_qwen2_counts_match_their_safetensors_totals() -> None:
    """The count from the catalogued config.json equals the parameters the checkpoints' safetensors hold, as the
    cited reports list them (Qwen2.5-72B-Instruct: 963 tensors, 72,706,203,648; QwQ-32B: 771, 32,763,876,352)."""
    for repo, total in (("Qwen/Qwen2.5-72B-Instruct", 72_706_203_648), ("Qwen/QwQ-32B", 32_763_876_352)):
        facts = catalogued(repo)
        assert facts is not None and facts.params == total, repo


def test_catalogued_counts_match_the_reports_safetensors_totals() -> None:
    """The count from each catalogued config.json equals the parameters its checkpoint's safetensors hold, as the
    cited gogongxt/python model reports list them (every shard listed)."""
    for repo, total in (
        ("Qwen/Qwen3-30B-A3B-Instruct-2507", 30_532_122_624),
        ("meta-llama/Meta-Llama-3-8B-Instruct", 8_030_261_248),
        ("Qwen/Qwen2.5-0.5B", 494_032_768),
        ("Qwen/Qwen2.5-1.5B-Instruct", 1_543_714_304),
        ("Qwen/Qwen2.5-Coder-7B-Instruct", 7_615_616_512),
    ):
        facts = catalogued(repo)
        assert facts is not None and facts.params == total, repo


def _starcoder2_tensor_total(config: dict[str, int]) -> int:
    """Elements of every tensor transformers' Starcoder2ForCausalLM holds (modeling_starcoder2.py, transformers
    5.24.0): biased q/k/v/o projections, c_fc and c_proj, two LayerNorms per layer and a final one (weight and
    bias each), the embedding, lm_head tied to it (Starcoder2Config tie_word_embeddings=True)."""
    h, inner, vocab = config["hidden_size"], config["intermediate_size"], config["vocab_size"]
    head_dim = h // config["num_attention_heads"]
    q, kv = config["num_attention_heads"] * head_dim, config["num_key_value_heads"] * head_dim
    shapes: list[tuple[int, ...]] = [(vocab, h), (h,), (h,)]
    for _ in range(config["num_hidden_layers"]):
        shapes += [(q, h), (q,), (kv, h), (kv,), (kv, h), (kv,), (h, q), (h,)]
        shapes += [(inner, h), (inner,), (h, inner), (h,)]
        shapes += [(h,), (h,), (h,), (h,)]
    total = 0
    for shape in shapes:
        size = 1
        for dim in shape:
            size *= dim
        total += size
    return total


def test_starcoder2_counts_its_ungated_biased_layers() -> None:
    """StarCoder2's MLP has two matrices and every projection a bias; a SwiGLU count was 41 % high."""
    from servespec.knowledge.models import facts_from_config

    config = {
        "model_type": "starcoder2",
        "architectures": ["Starcoder2ForCausalLM"],
        "hidden_size": 4608,
        "intermediate_size": 18432,
        "num_hidden_layers": 32,
        "num_attention_heads": 36,
        "num_key_value_heads": 4,
        "vocab_size": 49152,
        "max_position_embeddings": 16384,
        "sliding_window": 4096,
    }  # dimensions of bigcode/starcoder2-7b (mlc-llm preset "starcoder2")
    facts = facts_from_config(config, "starcoder2")
    assert facts.tie_word_embeddings and facts.linear_bias
    assert facts.params == _starcoder2_tensor_total(config)
    unbiased = facts_from_config({**config, "use_bias": False}, "starcoder2")
    assert not unbiased.linear_bias
    layers, h, inner = config["num_hidden_layers"], config["hidden_size"], config["intermediate_size"]
    q_kv_o = 36 * 128 + 2 * 4 * 128 + h
    assert facts.params - unbiased.params == layers * (q_kv_o + inner + h)


def test_mtp_layers_are_read_from_the_field_the_family_names() -> None:
    """Qwen3.5/3.6's ``mtp_num_hidden_layers`` (in text_config), DeepSeek's ``num_nextn_predict_layers``; a config
    naming none has none, and the field it came from is kept (the release reads its own per family)."""
    from servespec.knowledge.models import facts_from_config

    qwen = catalogued("Qwen/Qwen3.6-27B")
    assert qwen is not None and (qwen.mtp_layers, qwen.mtp_key) == (1, "mtp_num_hidden_layers")
    base = {"model_type": "llama", "num_hidden_layers": 4, "hidden_size": 64, "num_attention_heads": 4}
    assert facts_from_config(base, "x").mtp_layers == 0
    nextn = facts_from_config({**base, "num_nextn_predict_layers": 2}, "x")
    assert (nextn.mtp_layers, nextn.mtp_key) == (2, "num_nextn_predict_layers")
    assert facts_from_config({**base, "num_nextn_predict_layers": 0}, "x").mtp_key is None
