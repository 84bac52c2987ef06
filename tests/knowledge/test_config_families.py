"""Issue 23: widely deployed model families sized from their own config.json (fields as each family spells them).

The counts are transformers 5.20.2's own models built on the meta device from these configs
(scripts/catalog/transformers_params.py in the vllm-0.33.0 parser environment), unless a test says otherwise. The
configs carry each model's published sizes; they are not verbatim copies of a checkpoint's config.json (none is
catalogued from them).
"""

from __future__ import annotations

from typing import Any

import pytest

from servespec.knowledge.config_fields import MissingFieldsError
from servespec.knowledge.memory import kv_bytes_per_token
from servespec.knowledge.models import UnsizedArchitectureError, facts_from_config

COMMAND_R7B = {
    "architectures": ["Cohere2ForCausalLM"], "model_type": "cohere2", "hidden_size": 4096,
    "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
    "vocab_size": 256000, "max_position_embeddings": 132096, "sliding_window": 4096, "sliding_window_pattern": 4,
    "rope_theta": 50000.0, "logit_scale": 0.25, "layer_norm_eps": 1e-5, "tie_word_embeddings": True,
    "torch_dtype": "bfloat16",
}  # fmt: skip
COMMAND_R_PLUS = {
    "architectures": ["CohereForCausalLM"], "model_type": "cohere", "hidden_size": 12288,
    "intermediate_size": 33792, "num_hidden_layers": 64, "num_attention_heads": 96, "num_key_value_heads": 8,
    "vocab_size": 256000, "max_position_embeddings": 8192, "use_qk_norm": True, "rope_theta": 75000000.0,
    "layer_norm_eps": 1e-5, "torch_dtype": "float16",
}  # fmt: skip
GLM4_9B_0414 = {
    "architectures": ["Glm4ForCausalLM"], "model_type": "glm4", "hidden_size": 4096, "intermediate_size": 13696,
    "num_hidden_layers": 40, "num_attention_heads": 32, "num_key_value_heads": 2, "head_dim": 128,
    "attention_bias": True, "partial_rotary_factor": 0.5, "vocab_size": 151552, "max_position_embeddings": 32768,
    "tie_word_embeddings": False, "torch_dtype": "bfloat16",
}  # fmt: skip
ERNIE45_21B_A3B = {
    "architectures": ["Ernie4_5_MoeForCausalLM"], "model_type": "ernie4_5_moe", "hidden_size": 2560,
    "intermediate_size": 12288, "moe_intermediate_size": 1536, "num_hidden_layers": 28, "num_attention_heads": 20,
    "num_key_value_heads": 4, "head_dim": 128, "moe_num_experts": 64, "moe_num_shared_experts": 2, "moe_k": 6,
    "moe_layer_start_index": 1, "moe_layer_end_index": 27, "moe_layer_interval": 1, "vocab_size": 103424,
    "tie_word_embeddings": True, "hidden_act": "silu",
}  # fmt: skip
STABLELM2_12B = {
    "architectures": ["StableLmForCausalLM"], "model_type": "stablelm", "hidden_size": 5120,
    "intermediate_size": 13824, "num_hidden_layers": 40, "num_attention_heads": 32, "num_key_value_heads": 8,
    "qk_layernorm": True, "use_parallel_residual": True, "use_qkv_bias": False, "partial_rotary_factor": 0.25,
    "vocab_size": 100352, "max_position_embeddings": 4096, "tie_word_embeddings": False,
}  # fmt: skip
PHI35_MOE = {
    "architectures": ["PhiMoEForCausalLM"], "model_type": "phimoe", "hidden_size": 4096, "intermediate_size": 6400,
    "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "num_local_experts": 16,
    "num_experts_per_tok": 2, "attention_bias": True, "lm_head_bias": True, "vocab_size": 32064,
    "max_position_embeddings": 131072, "tie_word_embeddings": False,
}  # fmt: skip
OLMOE_1B_7B = {
    "architectures": ["OlmoeForCausalLM"], "model_type": "olmoe", "hidden_size": 2048, "intermediate_size": 1024,
    "num_hidden_layers": 16, "num_attention_heads": 16, "num_key_value_heads": 16, "num_experts": 64,
    "num_experts_per_tok": 8, "vocab_size": 50304, "max_position_embeddings": 4096, "tie_word_embeddings": False,
}  # fmt: skip
SEED_OSS_36B = {
    "architectures": ["SeedOssForCausalLM"], "model_type": "seed_oss", "hidden_size": 5120,
    "intermediate_size": 27648, "num_hidden_layers": 64, "num_attention_heads": 80, "num_key_value_heads": 8,
    "head_dim": 128, "attention_bias": True, "attention_out_bias": False, "vocab_size": 155136,
    "max_position_embeddings": 524288, "tie_word_embeddings": False,
}  # fmt: skip
DBRX = {
    "architectures": ["DbrxForCausalLM"], "model_type": "dbrx", "d_model": 6144, "n_heads": 48, "n_layers": 40,
    "max_seq_len": 32768, "vocab_size": 100352, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
    "attn_config": {"clip_qkv": 8, "kv_n_heads": 8, "rope_theta": 500000},
    "ffn_config": {"ffn_hidden_size": 10752, "moe_num_experts": 16, "moe_top_k": 4},
}  # fmt: skip
# THUDM/chatglm3-6b's config.json fields as a published copy gives them (find_string id 48506151840: a CI script
# writing the file, which leaves model_type and auto_map out)
CHATGLM3_6B = {
    "_name_or_path": "THUDM/chatglm3-6b", "add_bias_linear": False, "add_qkv_bias": True,
    "apply_residual_connection_post_layernorm": False, "architectures": ["ChatGLMModel"], "attention_dropout": 0.0,
    "attention_softmax_in_fp32": True, "bias_dropout_fusion": True, "ffn_hidden_size": 13696, "hidden_dropout": 0.0,
    "hidden_size": 4096, "kv_channels": 128, "layernorm_epsilon": 1e-05, "multi_query_attention": True,
    "multi_query_group_num": 2, "num_attention_heads": 32, "num_layers": 28, "original_rope": True,
    "padded_vocab_size": 65024, "post_layer_norm": True, "rmsnorm": True, "seq_length": 8192,
    "tie_word_embeddings": False, "torch_dtype": "float16", "transformers_version": "4.30.2", "use_cache": True,
    "vocab_size": 65024,
}  # fmt: skip

TRANSFORMERS_COUNTS: list[tuple[str, dict[str, Any], int]] = [
    ("Command R7B (cohere2)", COMMAND_R7B, 8_028_033_024),
    ("Command R+ (cohere, use_qk_norm)", COMMAND_R_PLUS, 103_810_674_688),
    ("GLM-4-9B-0414 (glm4)", GLM4_9B_0414, 9_400_279_040),
    ("ERNIE-4.5-21B-A3B (ernie4_5_moe)", ERNIE45_21B_A3B, 21_825_437_888),
    ("StableLM 2 12B (stablelm)", STABLELM2_12B, 12_143_185_920),
    ("Phi-3.5-MoE (phimoe)", PHI35_MOE, 41_873_153_344),
    ("OLMoE-1B-7B (olmoe)", OLMOE_1B_7B, 6_919_161_856),
    ("Seed-OSS-36B (seed_oss)", SEED_OSS_36B, 36_151_104_512),
    ("DBRX (dbrx)", DBRX, 131_596_523_520),
]


@pytest.mark.parametrize(("label", "config", "expected"), TRANSFORMERS_COUNTS, ids=[t[0] for t in TRANSFORMERS_COUNTS])
def test_parameters_equal_transformers(label: str, config: dict[str, Any], expected: int) -> None:
    """Before: Command R+ 0.02 % over (one norm per layer, per-head qk norms), GLM-4 short of its biases and two
    norms, ERNIE 4.5 MoE read as dense (-85 %), StableLM and PhiMoE short of LayerNorm biases, OLMoE of its q/k
    norms, Seed-OSS of its q/k/v biases, DBRX refused (d_model, n_heads, n_layers unread)."""
    assert facts_from_config(config, label).params == expected


def test_command_r7b_slides_three_layers_in_four_without_layer_types() -> None:
    """Cohere2Config: layer i slides unless (i + 1) % sliding_window_pattern == 0; servespec took all 32 for sliding."""
    facts = facts_from_config(COMMAND_R7B, "c4ai-command-r7b")
    assert (facts.sliding_window, facts.sliding_layers, facts.kv_full_layers) == (4096, 24, 8)
    assert facts.tie_word_embeddings
    with_types = {**COMMAND_R7B, "layer_types": ["sliding_attention"] * 3 + ["full_attention"]}
    assert facts_from_config({**with_types, "num_hidden_layers": 4}, "x").sliding_layers == 3


def test_ernie_moe_layers_and_experts() -> None:
    facts = facts_from_config(ERNIE45_21B_A3B, "ernie")
    assert (facts.experts, facts.active_experts, facts.shared_intermediate_size, facts.dense_layers) == (
        64,
        6,
        2 * 1536,
        1,
    )
    every_other = facts_from_config({**ERNIE45_21B_A3B, "moe_layer_interval": 2}, "ernie")
    assert every_other.dense_layers == 28 - 14  # layers 1, 3, ..., 27 are MoE


def test_dbrx_reads_its_sub_configs() -> None:
    facts = facts_from_config(DBRX, "databricks/dbrx-instruct")
    assert (facts.layers, facts.hidden_size, facts.attention_heads, facts.kv_heads) == (40, 6144, 48, 8)
    assert (facts.experts, facts.active_experts, facts.moe_intermediate_size) == (16, 4, 10752)
    assert facts.max_position_embeddings == 32768
    assert kv_bytes_per_token(facts, 2.0, 1, 1) == 2 * 40 * 8 * 128 * 2


def test_chatglm3_from_its_own_field_names() -> None:
    """No transformers class: 6,243,584,000 from modeling_chatglm.py (query_key_value 4096 x 4608 with bias,
    dense 4096 x 4096, dense_h_to_4h 4096 x 27392, dense_4h_to_h 13696 x 4096, two RMSNorms per layer;
    embedding and output_layer of 65,024 rows; final_layernorm), the 6.24B ChatGLM3-6B is published as."""
    facts = facts_from_config(CHATGLM3_6B, "THUDM/chatglm3-6b")
    assert facts.model_type == "chatglm"  # from architectures: the copy leaves model_type out
    assert (facts.layers, facts.kv_heads, facts.head_dim, facts.vocab_size) == (28, 2, 128, 65024)
    assert facts.max_position_embeddings == 8192
    assert facts.params == 6_243_584_000
    assert kv_bytes_per_token(facts, 2.0, 1, 1) == 2 * 28 * 2 * 128 * 2


def test_chatglm_without_its_layers_names_them_as_it_spells_them() -> None:
    config = {key: value for key, value in CHATGLM3_6B.items() if key != "num_layers"}
    with pytest.raises(MissingFieldsError, match="num_layers"):
        facts_from_config(config, "glm")


def test_exaone3_reads_num_layers() -> None:
    """EXAONE 3.5 2.4B's sizes (ExaoneConfig: num_layers): a Llama block, counted as transformers' Llama
    (2,405,327,360 with tied embeddings)."""
    config = {
        "architectures": ["ExaoneForCausalLM"], "model_type": "exaone", "hidden_size": 2560,
        "intermediate_size": 7168, "num_layers": 30, "num_attention_heads": 32, "num_key_value_heads": 8,
        "vocab_size": 102400, "max_position_embeddings": 32768, "tie_word_embeddings": True,
    }  # fmt: skip
    facts = facts_from_config(config, "exaone")
    assert facts.layers == 30
    assert facts.params == 2_405_327_360


def test_whisper_is_refused_as_encoder_decoder() -> None:
    config = {"model_type": "whisper", "d_model": 1280, "encoder_layers": 32, "decoder_layers": 32}
    with pytest.raises(UnsizedArchitectureError, match="encoder_layers, decoder_layers"):
        facts_from_config(config, "openai/whisper-large-v3")


def test_internvl_hf_and_remote_code_configs_equal_transformers() -> None:
    """InternVL3-8B's sizes: transformers' InternVLForConditionalGeneration holds 7,944,373,760. Its HF-format vision
    config gives patch_size as [14, 14] (servespec raised on it); the remote-code checkpoints (internvl_chat) name the
    language model llm_config and InternViT's switches qkv_bias / qk_normalization: the same model, the same count.
    Before, the tower was the generic ViT estimate without the pixel-shuffle projector."""
    vision = {"model_type": "internvl_vision", "hidden_size": 1024, "num_hidden_layers": 24, "num_attention_heads": 16,
              "intermediate_size": 4096, "patch_size": [14, 14], "image_size": [448, 448], "attention_bias": True,
              "norm_type": "layer_norm", "layer_scale_init_value": 0.1, "use_qk_norm": False}  # fmt: skip
    text = {"model_type": "qwen2", "hidden_size": 3584, "num_hidden_layers": 28, "num_attention_heads": 28,
            "num_key_value_heads": 4, "intermediate_size": 18944, "vocab_size": 151674,
            "max_position_embeddings": 32768, "tie_word_embeddings": False}  # fmt: skip
    hf = facts_from_config({"model_type": "internvl", "text_config": text, "vision_config": vision,
                            "downsample_ratio": 0.5, "tie_word_embeddings": False}, "internvl")  # fmt: skip
    remote_vision = {"model_type": "intern_vit_6b", "hidden_size": 1024, "num_hidden_layers": 24,
                     "num_attention_heads": 16, "intermediate_size": 4096, "patch_size": 14, "image_size": 448,
                     "qkv_bias": True, "norm_type": "layer_norm", "qk_normalization": False}  # fmt: skip
    chat = facts_from_config({"model_type": "internvl_chat", "llm_config": text, "vision_config": remote_vision,
                              "downsample_ratio": 0.5}, "internvl")  # fmt: skip
    assert (chat.layers, chat.kv_heads, chat.model_type) == (28, 4, "qwen2")
    assert hf.params == chat.params == 7_944_373_760


def test_hunyuan_dense_counts_its_qk_norms() -> None:
    """transformers' HunYuanDenseV1ForCausalLM for these sizes (Hunyuan-7B's): 7,504,932,864 with query_layernorm and
    key_layernorm over head_dim in each layer (was 8,192 short)."""
    config = {
        "architectures": ["HunYuanDenseV1ForCausalLM"], "model_type": "hunyuan_v1_dense", "hidden_size": 4096,
        "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
        "head_dim": 128, "vocab_size": 128256, "max_position_embeddings": 32768, "tie_word_embeddings": True,
        "use_qk_norm": True,
    }  # fmt: skip
    assert facts_from_config(config, "hunyuan").params == 7_504_932_864


@pytest.mark.parametrize(
    ("config", "named"),
    [
        ({"model_type": "hunyuan_v1_moe", "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
          "num_experts": 64, "moe_topk": [8] * 32, "num_shared_expert": [1] * 32}, "moe_topk, num_shared_expert"),
        ({"model_type": "step3_vl", "text_config": {"model_type": "step3_text", "hidden_size": 7168,
          "num_hidden_layers": 61, "num_attention_heads": 64, "share_q_dim": 2048, "moe_layers_enum": "4,5"}},
         "share_q_dim, moe_layers_enum"),
    ],
    ids=["hunyuan_v1_moe", "step3"],
)  # fmt: skip
def test_layouts_servespec_does_not_read_are_refused(config: dict[str, Any], named: str) -> None:
    """Before: Hunyuan-A13B sized as top-1 without shared experts, Step3 as plain GQA top-1; now each is refused,
    naming the fields it gives that servespec does not read."""
    with pytest.raises(UnsizedArchitectureError, match=named):
        facts_from_config(config, "m")


def test_deepseek_vl2_reads_language_config_and_its_siglip() -> None:
    """DeepSeek-VL2 names its language model language_config and its SigLIP layers, width and mlp_ratio: servespec
    refused it as missing num_hidden_layers. The tower (27 x 1152, MLP 4304) is an estimate, as for other towers."""
    config = {
        "model_type": "deepseek_vl_v2",
        "language_config": {"model_type": "deepseek_v2", "hidden_size": 2560, "num_hidden_layers": 30,
                            "num_attention_heads": 32, "n_routed_experts": 72, "num_experts_per_tok": 6,
                            "moe_intermediate_size": 1536, "n_shared_experts": 2, "first_k_dense_replace": 1,
                            "intermediate_size": 12288, "kv_lora_rank": 512, "q_lora_rank": 1536,
                            "qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "v_head_dim": 128, "vocab_size": 129280},
        "vision_config": {"layers": 27, "width": 1152, "mlp_ratio": 3.7362, "patch_size": 14, "image_size": 384},
    }  # fmt: skip
    facts = facts_from_config(config, "deepseek-vl2")
    assert (facts.layers, facts.experts, facts.active_experts, facts.kv_lora_rank) == (30, 72, 6, 512)
    assert 390e6 < facts.vision_params < 440e6  # SigLIP-SO400M: about 400M, plus the projector


CLIP_L_336 = {"model_type": "clip_vision_model", "hidden_size": 1024, "intermediate_size": 4096,
              "num_hidden_layers": 24, "num_attention_heads": 16, "patch_size": 14, "image_size": 336}  # fmt: skip
LLAMA_7B_TEXT = {"model_type": "llama", "hidden_size": 4096, "intermediate_size": 11008, "num_hidden_layers": 32,
                 "num_attention_heads": 32, "num_key_value_heads": 32, "vocab_size": 32064,
                 "max_position_embeddings": 4096, "tie_word_embeddings": False}  # fmt: skip
PIXTRAL_TOWER = {"model_type": "pixtral", "hidden_size": 1024, "intermediate_size": 4096, "num_hidden_layers": 24,
                 "num_attention_heads": 16, "patch_size": 16, "image_size": 1024, "head_dim": 64}  # fmt: skip
MISTRAL_NEMO_TEXT = {"model_type": "mistral", "hidden_size": 5120, "intermediate_size": 14336, "num_hidden_layers": 40,
                     "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 131072,
                     "max_position_embeddings": 1024000, "tie_word_embeddings": False}  # fmt: skip
TOWER_COUNTS: list[tuple[str, dict[str, Any], int]] = [
    ("LLaVA-1.5-7B (llava, CLIP-L/336)",
     {"model_type": "llava", "vision_config": CLIP_L_336, "text_config": LLAMA_7B_TEXT, "vision_feature_layer": -2},
     7_063_427_072),
    ("LLaVA-NeXT-Mistral-7B (llava_next, CLIP-L/336, image_newline)",
     {"model_type": "llava_next", "vision_config": CLIP_L_336, "vision_feature_layer": -2,
      "text_config": {**LLAMA_7B_TEXT, "model_type": "mistral", "intermediate_size": 14336, "num_key_value_heads": 8}},
     7_566_747_648),
    ("GLM-4.1V-9B (glm4v)",
     {"model_type": "glm4v",
      "vision_config": {"model_type": "glm4v_vision", "depth": 24, "hidden_size": 1536, "intermediate_size": 13696,
                        "num_heads": 12, "out_hidden_size": 4096, "patch_size": 14, "image_size": 336,
                        "spatial_merge_size": 2, "temporal_patch_size": 2, "in_channels": 3, "attention_bias": False},
      "text_config": {"model_type": "glm4v_text", "hidden_size": 4096, "intermediate_size": 13696,
                      "num_hidden_layers": 40, "num_attention_heads": 32, "num_key_value_heads": 2,
                      "vocab_size": 151552, "max_position_embeddings": 65536, "tie_word_embeddings": False}},
     10_292_777_472),
    ("Qwen2-Audio-7B (qwen2_audio)",
     {"model_type": "qwen2_audio",
      "audio_config": {"model_type": "qwen2_audio_encoder", "d_model": 1280, "encoder_layers": 32,
                       "encoder_attention_heads": 20, "encoder_ffn_dim": 5120, "num_mel_bins": 128,
                       "max_source_positions": 1500},
      "text_config": {"model_type": "qwen2", "hidden_size": 4096, "intermediate_size": 11008, "num_hidden_layers": 32,
                      "num_attention_heads": 32, "num_key_value_heads": 32, "vocab_size": 156032,
                      "max_position_embeddings": 8192, "tie_word_embeddings": False}},
     8_397_094_912),
    ("Pixtral-12B, HF format (llava, pixtral tower)",
     {"model_type": "llava", "vision_config": PIXTRAL_TOWER, "text_config": MISTRAL_NEMO_TEXT,
      "vision_feature_layer": -1, "multimodal_projector_bias": True},
     12_682_739_712),
    ("SmolVLM2-2.2B (smolvlm, pixel-shuffle connector)",
     {"model_type": "smolvlm", "scale_factor": 3,
      "vision_config": {"model_type": "smolvlm_vision", "hidden_size": 1152, "intermediate_size": 4304,
                        "num_hidden_layers": 27, "num_attention_heads": 16, "patch_size": 14, "image_size": 384},
      "text_config": {"model_type": "llama", "hidden_size": 2048, "intermediate_size": 8192, "num_hidden_layers": 24,
                      "num_attention_heads": 32, "num_key_value_heads": 32, "vocab_size": 49280,
                      "max_position_embeddings": 16384, "tie_word_embeddings": False}},
     2_246_784_880),
    ("Mistral-Small-3.1-like (mistral3, pixtral tower, patch merger)",
     {"model_type": "mistral3", "vision_config": PIXTRAL_TOWER, "text_config": MISTRAL_NEMO_TEXT,
      "spatial_merge_size": 2, "vision_feature_layer": -1, "multimodal_projector_bias": False},
     12_686_924_800),
]  # fmt: skip


@pytest.mark.parametrize(("label", "config", "expected"), TOWER_COUNTS, ids=[t[0] for t in TOWER_COUNTS])
def test_towers_equal_transformers(label: str, config: dict[str, Any], expected: int) -> None:
    """Before: LLaVA's CLIP tower by the generic estimate (17M short), GLM-4.1V's 409M over (its tower is no plain
    ViT; its text model's q/k/v biases and four norms uncounted), Qwen2-Audio's 642M audio tower left out, LLaVA over
    Pixtral given Mistral 3's patch merger (1M over), Mistral 3 short of its projector norm (1,024)."""
    assert facts_from_config(config, label).params == expected


def test_phi3_vision_counts_the_clip_tower_vllm_builds() -> None:
    """No transformers class: vLLM's phi3v.py builds CLIP ViT-L/14-336 up to img_processor.layer_idx (-2: 23 layers,
    no post norm) and a two-layer projector from 4 x image_dim_out; the text model is Phi-3-mini. 4,134,023,168 in
    all (the checkpoint's 24th CLIP layer and post norm, which vLLM skips, make the published 4.15B)."""
    config = {
        "architectures": ["Phi3VForCausalLM"], "model_type": "phi3_v", "hidden_size": 3072, "intermediate_size": 8192,
        "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 32, "vocab_size": 32064,
        "max_position_embeddings": 131072,
        "embd_layer": {"embedding_cls": "image", "hd_transform_order": "sub_glb", "projection_cls": "mlp",
                       "use_hd_transform": True, "with_learnable_separator": True},
        "img_processor": {"image_dim_out": 1024, "model_name": "openai/clip-vit-large-patch14-336",
                          "name": "clip_vision_model", "num_img_tokens": 144},
    }  # fmt: skip
    facts = facts_from_config(config, "microsoft/Phi-3.5-vision-instruct")
    clip_layer = 4 * 1024 * 1024 + 8 * 1024 + 2 * 1024 * 4096 + 4096 + 1024
    assert facts.vision_params - facts_from_config(
        {**config, "img_processor": {"layer_idx": -3}}, "x"
    ).vision_params == (clip_layer)
    assert facts.params == 4_134_023_168


GRANITE4_MICRO = {
    "architectures": ["GraniteMoeHybridForCausalLM"], "model_type": "granitemoehybrid", "hidden_size": 2560,
    "intermediate_size": 512, "shared_intermediate_size": 8192, "num_local_experts": 0, "num_experts_per_tok": 0,
    "num_hidden_layers": 40, "num_attention_heads": 40, "num_key_value_heads": 8, "vocab_size": 100352,
    "max_position_embeddings": 131072, "tie_word_embeddings": True, "layer_types": ["attention"] * 40,
    "mamba_n_heads": 128, "mamba_d_state": 256, "mamba_n_groups": 1,
}  # fmt: skip


def test_granite4_attention_only_sizes_its_shared_mlp() -> None:
    """transformers' GraniteMoeHybridForCausalLM: 3,402,836,480 with no routed experts (the shared MLP is the MLP);
    servespec sized the MLP by intermediate_size (512), and with 32 experts read no shared expert:
    6,237,268,480 for the MoE variant, and granitemoeshared (Granite 3 MoE) 1,410,125,824."""
    assert facts_from_config(GRANITE4_MICRO, "granite-4.0-micro").params == 3_402_836_480
    moe = {**GRANITE4_MICRO, "num_local_experts": 32, "num_experts_per_tok": 8, "shared_intermediate_size": 1024}
    assert facts_from_config(moe, "granite-moe").params == 6_237_268_480
    shared = {
        "model_type": "granitemoeshared", "hidden_size": 1024, "intermediate_size": 512,
        "shared_intermediate_size": 1024, "num_local_experts": 32, "num_experts_per_tok": 8, "num_hidden_layers": 24,
        "num_attention_heads": 16, "num_key_value_heads": 8, "vocab_size": 49155, "tie_word_embeddings": True,
    }  # fmt: skip
    assert facts_from_config(shared, "granite-3-moe-shared").params == 1_410_125_824


def test_granite4_h_mamba_layers_are_sized_as_transformers_builds_them() -> None:
    """Granite 4.0-H: Mamba-2 layers among the attention ones (knowledge/mamba.py). transformers 5.20.2 builds this
    config with 4,312,377,344 parameters (GraniteMoeHybridForCausalLM on the meta device; the attention-only
    variant 3,402,836,480); 4 attention layers hold KV, 36 Mamba-2 layers a fixed state."""
    hybrid = {**GRANITE4_MICRO, "layer_types": (["mamba"] * 9 + ["attention"]) * 4}
    facts = facts_from_config(hybrid, "granite-4.0-h")
    assert facts.params == 4_312_377_344
    assert (facts.linear_layers, facts.kv_full_layers, facts.linear_kind) == (36, 4, "mamba2")


def test_minicpm_ties_its_embeddings_by_default() -> None:
    """MiniCPM-2B's sizes, no tie_word_embeddings in the file: the remote MiniCPMConfig ties by default, giving the
    published 2.7B (2.4B without embeddings); servespec counted a second 122,753 x 2,304 table (3.0B)."""
    config = {
        "architectures": ["MiniCPMForCausalLM"], "model_type": "minicpm", "hidden_size": 2304,
        "intermediate_size": 5760, "num_hidden_layers": 40, "num_attention_heads": 36, "num_key_value_heads": 36,
        "vocab_size": 122753, "max_position_embeddings": 4096, "scale_emb": 12, "dim_model_base": 256,
        "scale_depth": 1.4,
    }  # fmt: skip
    facts = facts_from_config(config, "openbmb/MiniCPM-2B-sft-bf16")
    assert facts.tie_word_embeddings
    assert facts.params == 3_007_703_808 - 122753 * 2304
    assert facts_from_config({**config, "tie_word_embeddings": False}, "m").params == 3_007_703_808


@pytest.mark.parametrize(
    ("config", "named"),
    [
        ({"model_type": "phi4mm", "hidden_size": 3072, "num_hidden_layers": 32, "num_attention_heads": 24,
          "num_key_value_heads": 8, "vocab_size": 200064, "audio_processor": {"name": "cascades"},
          "embd_layer": {"image_embd_layer": {}}, "vision_lora": {"r": 256}, "speech_lora": {"r": 320}},
         "audio_processor, embd_layer, vision_lora, speech_lora"),
        ({"model_type": "phi4_multimodal", "hidden_size": 3072, "num_hidden_layers": 32, "num_attention_heads": 24,
          "vision_config": {"hidden_size": 1152, "num_hidden_layers": 27}, "audio_config": {"hidden_size": 1024}},
         "audio_config"),
        ({"model_type": "voxtral", "text_config": {"model_type": "llama", "hidden_size": 3072, "num_hidden_layers": 30,
          "num_attention_heads": 32}, "audio_config": {"model_type": "voxtral_encoder", "hidden_size": 1280}},
         "audio_config"),
    ],
    ids=["phi4mm", "phi4_multimodal", "voxtral"],
)  # fmt: skip
def test_uncounted_audio_and_adapter_towers_are_refused(config: dict[str, Any], named: str) -> None:
    """Before: Phi-4-multimodal sized as its 3.8B text model (its audio encoder, image encoder and LoRA adapters
    left out: the checkpoint is 5.6B), Voxtral without its audio encoder."""
    with pytest.raises(UnsizedArchitectureError, match=named):
        facts_from_config(config, "m")


@pytest.mark.parametrize(
    "config",
    [DBRX, CHATGLM3_6B, COMMAND_R7B, ERNIE45_21B_A3B],
    ids=["dbrx", "chatglm", "cohere2", "ernie4_5_moe"],
)
def test_a_lock_keeps_what_the_family_is_read_from(config: dict[str, Any]) -> None:
    """models.lock.yaml keeps only scalars and known maps: DBRX's ffn_config was dropped, so a locked DBRX resolved
    without experts."""
    from servespec.knowledge.lock import locked_config

    assert facts_from_config(locked_config(config), "m") == facts_from_config(config, "m")


def test_a_lock_keeps_the_sub_configs_of_remote_code_multimodal_models() -> None:
    from servespec.knowledge.lock import locked_config

    phi4mm = {"model_type": "phi4mm", "hidden_size": 3072, "num_hidden_layers": 32, "num_attention_heads": 24,
              "audio_processor": {"name": "cascades"}, "vision_lora": {"r": 256}}  # fmt: skip
    with pytest.raises(UnsizedArchitectureError, match="audio_processor, vision_lora"):
        facts_from_config(locked_config(phi4mm), "m")
    llm = {"model_type": "qwen2", "hidden_size": 896, "num_hidden_layers": 24, "num_attention_heads": 14,
           "num_key_value_heads": 2, "auto_map": {"x": "y"}}  # fmt: skip
    chat = {"model_type": "internvl_chat", "llm_config": llm}
    locked = locked_config(chat)
    assert "auto_map" not in locked["llm_config"]
    assert facts_from_config(locked, "m").layers == 24
    phi3v = {"model_type": "phi3_v", "hidden_size": 3072, "num_hidden_layers": 32, "num_attention_heads": 32,
             "img_processor": {"image_dim_out": 1024, "layer_idx": -2}}  # fmt: skip
    assert facts_from_config(locked_config(phi3v), "m").vision_params == facts_from_config(phi3v, "m").vision_params > 0


@pytest.mark.parametrize(
    ("repo", "expected"),
    [("google/gemma-3-4b-it", 4_300_079_472), ("google/gemma-3-27b-it", 27_432_406_640)],
)
def test_catalogued_gemma3_equals_transformers(repo: str, expected: int) -> None:
    """transformers' Gemma3ForConditionalGeneration from the catalogued configs. Before: 4.7M short (each text layer's
    q_norm and k_norm over head_dim; the projector's mm_input_projection and mm_soft_emb_norm taken for a LLaVA one
    and the tower's pooling head, which Gemma 3's vision_use_head false leaves out)."""
    from servespec.knowledge.models import catalogued

    facts = catalogued(repo)
    assert facts is not None
    assert facts.params == expected


def test_a_tower_without_sizes_servespec_reads_is_refused() -> None:
    """Janus-Pro names its SigLIP under vision_config.params: counted as no tower at all before (a 7B checkpoint sized
    without its ~0.3B encoder); now refused, naming vision_config."""
    config = {
        "model_type": "multi_modality",
        "language_config": {"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 30,
                            "num_attention_heads": 32, "vocab_size": 102400},
        "vision_config": {"cls": "CLIPVisionTower", "model_type": "vision",
                          "params": {"image_size": 384, "model_name": "siglip_large_patch16_384"}},
    }  # fmt: skip
    with pytest.raises((UnsizedArchitectureError, MissingFieldsError)):
        facts_from_config(config, "deepseek-ai/Janus-Pro-7B")
    flat = {**config, "text_config": config["language_config"]}
    with pytest.raises(UnsizedArchitectureError, match=r"multi_modality.*vision_config"):
        facts_from_config(flat, "deepseek-ai/Janus-Pro-7B")
