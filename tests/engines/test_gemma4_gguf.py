"""Gemma 4 GGUF files, written at test time, read and laid out as llama.cpp's gemma4 loader does.

Worked from the source, not from the code under test (llama.cpp b9093, src/models/gemma4.cpp ``load_arch_hparams``,
src/llama-hparams.cpp ``n_embd_head_k(il)``/``has_kv``, src/llama-model.cpp's ``reuse`` callback; b11434 reads the
same keys): each layer caches ``n_head_kv(il) × n_embd_head_k(il)`` keys and as many values, the head size being
``attention.key_length_swa`` on sliding layers and ``attention.key_length`` on full ones; the last
``attention.shared_kv_layers`` layers keep no cache. Sliding layers take
``GGML_PAD(min(n_ctx_seq, n_swa + n_ubatch), 256)`` cells per stream (src/llama-kv-cache-iswa.cpp).

The figures are those the real start-up logs print for the same shapes at b8836/b8854/b8680
(tests/data/startup_logs/llama.cpp/009-*, 011-*, 002-*): builds older than the catalogued b9093, whose iSWA rule the
catalog cannot say, so the releases used here are b9093 and b11434.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import gguf
import numpy as np
import pytest

from servespec.engines import get
from servespec.knowledge.gguf_header import read_gguf
from servespec.knowledge.memory import EstimateInput
from servespec.knowledge.models import ModelFacts, facts_from_config

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
import make_demo_gguf  # (its save(): the GGUF writer's write-and-close sequence)

MIB = 1024 * 1024
SWA_26B = [True] * 5 + [False]


def _write(path: Path, layers: int, pattern: list[bool], heads_kv: list[int], **extra: Any) -> ModelFacts:
    """A gemma4 GGUF header with per-layer KV heads and window flags, and one tensor per name in ``tensors``."""
    writer = gguf.GGUFWriter(path, "gemma4")
    writer.add_block_count(layers)
    writer.add_embedding_length(extra.pop("hidden", 2816))
    writer.add_head_count(16)
    writer.add_array("gemma4.attention.head_count_kv", heads_kv)
    writer.add_array("gemma4.attention.sliding_window_pattern", pattern)
    writer.add_key_length(512)
    writer.add_value_length(512)
    writer.add_uint32("gemma4.attention.key_length_swa", 256)
    writer.add_uint32("gemma4.attention.value_length_swa", 256)
    writer.add_uint32("gemma4.attention.sliding_window", extra.pop("window", 1024))
    writer.add_context_length(262144)
    writer.add_vocab_size(1000)
    for key, value in extra.pop("keys", {}).items():
        writer.add_uint32(f"gemma4.{key}", value)
    for name in extra.pop("tensors", ("token_embd.weight",)):
        writer.add_tensor(name, np.zeros((4, 8), dtype=np.float32))
    make_demo_gguf.save(writer)
    return facts_from_config(read_gguf(path).config, path.name)


@pytest.fixture
def moe_26b(tmp_path: Path) -> ModelFacts:
    """Gemma 4 26B-A4B's header as unsloth's GGUF gives it (the loader's kv lines in log 009): 30 layers, 5:1,
    8 KV heads on sliding layers and 2 on full ones, no v projection on the full layers, no shared layers."""
    return _write(
        tmp_path / "26b.gguf",
        30,
        SWA_26B * 5,
        ([8] * 5 + [2]) * 5,
        keys={"attention.shared_kv_layers": 0, "expert_count": 128, "expert_used_count": 8},
        tensors=("token_embd.weight", "blk.0.attn_v.weight"),
    )


def test_the_header_gives_each_layer_kind_its_shape(moe_26b: ModelFacts) -> None:
    facts = moe_26b
    assert (facts.sliding_window, facts.sliding_layers, facts.kv_sliding_layers, facts.kv_full_layers) == (
        1024,
        25,
        25,
        5,
    )
    assert (facts.kv_heads, facts.head_dim, facts.full_kv_heads, facts.full_head_dim) == (8, 256, 2, 512)
    assert facts.value_from_key  # blk.5.attn_v.weight absent: the full layers' keys are their values
    assert (facts.experts, facts.active_experts) == (128, 8)


def _kv_mib(version: str, facts: ModelFacts, n_ctx: int, slots: int) -> float:
    """llama-server's whole KV cache (every cell of every layer) for ``-c n_ctx -np slots``, f16."""
    release = get("llama.cpp").select(version).release
    assert release is not None and release.version == version
    inp = EstimateInput(
        "llama.cpp",
        release,
        facts,
        None,
        max_model_len=n_ctx // slots,
        options={"parallel": slots, "kv_unified": False},
        host_memory_gib=1e6,
    )
    plan = get("llama.cpp").estimate(inp)
    assert plan is not None and plan.kv_cache_bytes is not None
    return plan.kv_cache_bytes / MIB


@pytest.mark.parametrize("version", ["b9093", "b11434"])
def test_26b_kv_cache_as_llama_cpp_lays_it_out(moe_26b: ModelFacts, version: str) -> None:
    # 5 full layers × 262144 cells × (1024 + 1024) f16 = 5120 MiB; 25 SWA layers × pad256(1024 + 512) = 1536 cells
    # × (2048 + 2048) f16 = 300 MiB (log 009: "5120.00 MiB (262144 cells, 5 layers)", "300.00 MiB (1536 cells,
    # 25 layers)")
    assert _kv_mib(version, moe_26b, 262144, 1) == 5120 + 300
    # two slots, not unified: 2 × 8192 cells on the full layers (640 MiB), 2 × 1536 on the SWA ones (600 MiB) (log 011)
    assert _kv_mib(version, moe_26b, 32768, 2) == 640 + 600


def test_shared_kv_layers_cache_nothing(tmp_path: Path) -> None:
    """E4B: 42 layers, 2 KV heads everywhere, window 512, the last 18 layers shared: 4 full and 20 SWA layers cache
    (log 002: "1024.00 MiB (65536 cells, 4 layers)", "40.00 MiB (1024 cells, 20 layers)"), the rest reuse them."""
    facts = _write(
        tmp_path / "e4b.gguf",
        42,
        SWA_26B * 7,
        [2] * 42,
        hidden=2560,
        window=512,
        keys={"attention.shared_kv_layers": 18, "embedding_length_per_layer_input": 256},
        tensors=("token_embd.weight", "blk.5.attn_v.weight"),
    )
    assert (facts.kv_shared_layers, facts.kv_shared_sliding, facts.kv_sliding_layers, facts.kv_full_layers) == (
        18,
        15,
        20,
        4,
    )
    assert not facts.value_from_key and facts.per_layer_input == 256 and facts.per_layer_vocab == 1000
    assert _kv_mib("b9093", facts, 65536, 1) == 1024 + 40


@pytest.mark.parametrize(("num_ctx", "mib"), [(4096, 224), (16384, 436)])
def test_e4b_on_ollama_go_engine(num_ctx: int, mib: int) -> None:
    """Ollama 0.20.7's Go engine (model/models/gemma4/model.go: NewSWAMemCache(window, 4096), a causal cache for the
    full layers; model_text.go: shared layers read their donor's cache): 4 full layers × num_ctx cells × (2 + 2) × 512
    f16 bytes, 20 SWA layers × min(num_ctx, 4096 + 512) cells × (2 + 2) × 256 (kvcache/causal.go). The two loads of
    tests/data/startup_logs/ollama/015-*: "kv cache" 224.0 MiB at KvSize 4096, 436.0 MiB at 16384."""
    from servespec.knowledge.models import catalogued

    facts = catalogued("google/gemma-4-E4B-it")
    assert facts is not None
    release = get("ollama").select("0.20.7").release
    assert release is not None
    inp = EstimateInput(
        "ollama",
        release,
        facts,
        None,
        max_model_len=num_ctx,
        options={"num_parallel": 1, "flash_attention": True},
        host_memory_gib=1e6,
    )
    plan = get("ollama").estimate(inp)
    assert plan is not None and plan.kv_cache_bytes == mib * MIB
