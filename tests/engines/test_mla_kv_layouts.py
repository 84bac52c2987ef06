"""Issue 23: an MLA model's KV cache in llama.cpp and Ollama is K and V as the GGUF lays them out; TGI's per head.

llama.cpp allocates every layer's K of ``n_embd_k_gqa = head_count_kv x key_length`` and V of ``n_embd_v_gqa``
elements per cell (src/llama-kv-cache.cpp, read in the trees Ollama vendored at v0.9.0 and v0.24.0); it has no
latent-only cache. A DeepSeek GGUF converted before llama.cpp's MLA layout (PR #12801) stores the per-head sizes
(head_count_kv = heads, key_length 192, value_length 128); one converted after it the latent (head_count_kv 1,
key_length kv_lora_rank + rope = 576, value_length kv_lora_rank = 512), the per-head sizes under
``key_length_mla``/``value_length_mla``. vLLM and SGLang cache the latent alone, which is unchanged.

A real start-up log: DeepSeek-R1 671B through Ollama (0.6.5 assumed) on 8 MI250X GCDs, 8192 cells over 61 layers:
"KV self size = 39040.00 MiB, K (f16): 23424.00 MiB, V (f16): 15616.00 MiB"
(https://github.com/uv-genai/llm-setonix/blob/fb7eeca0435028a51908c7164276e69da2c26714/setup.md,
tests/data/startup_logs/ollama/027-*): 61 x 8192 x 128 x (192 + 128) x 2 B.
"""

from __future__ import annotations

from pathlib import Path

import gguf
import numpy as np
import pytest

from servespec.engines import get
from servespec.knowledge.gguf_header import read_gguf
from servespec.knowledge.memory import EstimateInput, layer_bytes_per_token
from servespec.knowledge.models import ModelFacts, facts_from_config

F16 = 2
LAYERS, HEADS, LORA, ROPE, NOPE, V_HEAD = 27, 16, 512, 64, 128, 128  # DeepSeek-V2-Lite's attention


def _deepseek2(path: Path, *, mla_layout: bool) -> ModelFacts:
    """A deepseek2 GGUF header as convert_hf_to_gguf.py writes it before (False) or after (True) PR #12801."""
    writer = gguf.GGUFWriter(path, "deepseek2")
    writer.add_block_count(LAYERS)
    writer.add_embedding_length(2048)
    writer.add_head_count(HEADS)
    writer.add_context_length(163840)
    writer.add_feed_forward_length(10944)
    writer.add_vocab_size(102400)
    writer.add_uint32("deepseek2.attention.kv_lora_rank", LORA)
    writer.add_rope_dimension_count(ROPE)
    if mla_layout:
        writer.add_head_count_kv(1)
        writer.add_key_length(LORA + ROPE)
        writer.add_value_length(LORA)
        writer.add_uint32("deepseek2.attention.key_length_mla", NOPE + ROPE)
        writer.add_uint32("deepseek2.attention.value_length_mla", V_HEAD)
    else:
        writer.add_head_count_kv(HEADS)
        writer.add_key_length(NOPE + ROPE)
        writer.add_value_length(V_HEAD)
    writer.add_tensor("token_embd.weight", np.zeros((4, 8), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return facts_from_config(read_gguf(path).config, path.name)


def _kv_bytes(engine: str, version: str, model: ModelFacts, context: int, **options: object) -> float:
    release = get(engine).select(version).release
    inp = EstimateInput(
        engine, release, model, None, max_model_len=context, options=dict(options), host_memory_gib=4096
    )
    plan = get(engine).estimate(inp)
    assert plan is not None
    return plan.kv_cache_bytes_all_devices


@pytest.mark.parametrize(
    ("mla_layout", "widths"),
    [(False, (HEADS * (NOPE + ROPE), HEADS * V_HEAD)), (True, (LORA + ROPE, LORA))],
)
def test_a_deepseek2_gguf_gives_llama_cpp_s_k_and_v_widths(tmp_path: Path, mla_layout: bool, widths: tuple) -> None:
    facts = _deepseek2(tmp_path / "ds.gguf", mla_layout=mla_layout)
    assert facts.is_mla and facts.gguf_kv_widths == widths


@pytest.mark.parametrize("mla_layout", [False, True])
def test_llama_cpp_caches_k_and_v_of_the_gguf_s_widths(tmp_path: Path, mla_layout: bool) -> None:
    facts = _deepseek2(tmp_path / "ds.gguf", mla_layout=mla_layout)
    k, v = (HEADS * (NOPE + ROPE), HEADS * V_HEAD) if not mla_layout else (LORA + ROPE, LORA)
    # 4096 cells: a multiple of every release's padding, one slot
    assert _kv_bytes("llama.cpp", "b8854", facts, 4096, parallel=1) == LAYERS * 4096 * (k + v) * F16
    # the latent-only cache vLLM and SGLang keep is smaller than either layout
    assert layer_bytes_per_token(facts, F16, 1) == (LORA + ROPE) * F16 < (k + v) * F16


def test_the_setonix_log_s_figure_comes_out(tmp_path: Path) -> None:
    """DeepSeek-R1 (61 layers, 128 heads) as the catalogue has it, without a GGUF header: per-head K and V, the
    layout of every build before PR #12801 (Ollama 0.6.5 vendors one): 39040 MiB for 4 slots x 2048."""
    config = {
        "model_type": "deepseek_v3",
        "num_hidden_layers": 61,
        "hidden_size": 7168,
        "num_attention_heads": 128,
        "num_key_value_heads": 128,
        "kv_lora_rank": 512,
        "q_lora_rank": 1536,
        "qk_rope_head_dim": 64,
        "qk_nope_head_dim": 128,
        "v_head_dim": 128,
        "vocab_size": 129280,
        "intermediate_size": 18432,
        "moe_intermediate_size": 2048,
        "n_routed_experts": 256,
        "num_experts_per_tok": 8,
        "first_k_dense_replace": 3,
    }
    facts = facts_from_config(config, "deepseek-ai/DeepSeek-R1")
    assert facts.gguf_kv_widths is None
    found = _kv_bytes("ollama", "0.6.5", facts, 2048, num_parallel=4, kv_cache_type="f16")
    assert found == 39040 * 1024**2


@pytest.mark.parametrize(
    ("printed", "widths"),
    [  # print_info of a post-#12801 build on an MLA-converted GGUF, and llm_load_print_meta on a per-head one
        ({"n_head_kv": 1, "n_embd_head_k": 576, "n_embd_k_gqa": 576, "n_embd_v_gqa": 512}, (576, 512)),
        ({"n_head_kv": 16, "n_embd_head_k": 192, "n_embd_k_gqa": 3072, "n_embd_v_gqa": 2048}, (3072, 2048)),
    ],
)
def test_a_log_s_print_info_gives_the_widths(printed: dict[str, int], widths: tuple[int, int]) -> None:
    from tests.vllm_logs import _gguf_config

    block = {"arch": "deepseek2", "n_layer": 27, "n_embd": 2048, "n_head": 16, "n_lora_kv": 512, "n_rot": 64}
    config = _gguf_config({**block, **printed})
    assert config is not None
    facts = facts_from_config(config, "deepseek2.gguf")
    assert facts.is_mla and facts.gguf_kv_widths == widths


def test_a_dense_log_s_widths_are_not_read_as_mla() -> None:
    from tests.vllm_logs import _gguf_config

    block = {"arch": "llama", "n_layer": 32, "n_embd": 4096, "n_head": 32, "n_head_kv": 8, "n_embd_head_k": 128}
    config = _gguf_config({**block, "n_embd_k_gqa": 1024, "n_embd_v_gqa": 1024})
    assert config is not None and facts_from_config(config, "llama.gguf").gguf_kv_widths is None


def test_tgi_caches_an_mla_model_per_head() -> None:
    """TGI's DeepSeek V2/V3 (flash_deepseek_v2_modeling.py, models/__init__.py at v2.2.0 and v3.3.7): K and V of
    num_key_value_heads / tp heads of max(128 + 64, v_head_dim) = 192, values padded; no latent."""
    from servespec.knowledge import gpus
    from servespec.knowledge.models import catalogued

    facts = catalogued("deepseek-ai/DeepSeek-V2-Lite")
    assert facts is not None and facts.is_mla
    gpu = gpus.resolve("NVIDIA A100-SXM4-80GB")
    assert gpu is not None
    release = get("tgi").select("3.3.7").release
    inp = EstimateInput(
        "tgi", release, facts, gpu, max_model_len=4096, options={}, kv_cache_dtype_option="kv_cache_dtype"
    )
    plan = get("tgi").estimate(inp)
    assert plan is not None
    assert plan.kv_bytes_per_token == facts.layers * 2 * facts.kv_heads * 192 * F16  # 27 x 2 x 16 x 192 x 2 B
    assert any("MLA cached per head" in note for note in plan.notes)
