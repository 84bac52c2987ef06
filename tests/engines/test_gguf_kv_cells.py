"""Issue 23: llama.cpp's and Ollama's KV cache as each release lays it out (facts ``kv_cache``, ``go_engine``).

Numbers are worked from the cited sources, not from the code under test:

- llama.cpp (src/llama-kv-cache-iswa.cpp, b9093-b11434): a sliding-window layer gets
  ``GGML_PAD(min(n_ctx_seq, n_swa × (n_seq_max if kv_unified else 1) + n_ubatch), 256)`` cells per KV
  stream, ``--swa-full`` the whole context; n_ctx is padded to 256 (src/llama-context.cpp).
- Ollama's Go engine (kvcache/causal.go ``Init``, 0.12.4-0.29): one cache of ``roundUp(sequences ×
  context, pad)`` cells, a sliding-window one ``roundUp(sequences × memory + batch, pad)``.
- llama.cpp's layer layout (src/models/gemma3.cpp ``load_swa_pattern(ml, 6)``, llama-hparams.cpp
  ``set_swa_pattern``: layer il is sliding when il % 6 < 5): Gemma 3 4B's 34 layers are 29 sliding, 5 global.

Two real start-up logs are reproduced: gemma3:4b on Ollama 0.16.3's Go engine ("kv cache" 254.0 MiB,
https://github.com/alirafiqmalik/local_LLMs/blob/5b4496cb8ff475838416389b6341e901c9b74bb7/logs/ollama.log)
and Gemma 4 E4B's SWA cache on llama.cpp (1024 cells, 40.00 MiB: tests/data/startup_logs/llama.cpp/002-*).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import gguf
import numpy as np
import pytest

from servespec.engines import get
from servespec.engines.catalog import EngineRelease
from servespec.engines.llama_cpp import memory as llama_memory
from servespec.engines.ollama import memory as ollama_memory
from servespec.knowledge.gguf_header import read_gguf
from servespec.knowledge.memory import EstimateInput, KvCells
from servespec.knowledge.models import ModelFacts, facts_from_config

F16 = 2


def _gguf(path: Path, arch: str, layers: int, kv_heads: int, head_dim: int, **extra: Any) -> ModelFacts:
    """A GGUF header of ``arch`` (one tiny tensor), read the way a spec's GGUF file is read."""
    writer = gguf.GGUFWriter(path, arch)
    writer.add_block_count(layers)
    writer.add_embedding_length(kv_heads * head_dim * 2)
    writer.add_head_count(kv_heads * 2)
    writer.add_head_count_kv(kv_heads)
    writer.add_key_length(head_dim)
    writer.add_value_length(head_dim)
    writer.add_context_length(131072)
    writer.add_feed_forward_length(1024)
    writer.add_vocab_size(1000)
    for key, value in extra.items():
        if isinstance(value, list):
            writer.add_array(f"{arch}.attention.{key}", value)
        else:
            writer.add_uint32(f"{arch}.attention.{key}", value)
    writer.add_tensor("token_embd.weight", np.zeros((4, 8), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return facts_from_config(read_gguf(path).config, path.name)


@pytest.fixture
def gemma3(tmp_path: Path) -> ModelFacts:
    """Gemma 3 4B's attention (34 layers, 4 KV heads of 256, window 1024) as its GGUF header gives it."""
    return _gguf(tmp_path / "gemma3.gguf", "gemma3", 34, 4, 256, sliding_window=1024)


def _input(engine: str, version: str, model: ModelFacts, context: int, **options: Any) -> EstimateInput:
    release = get(engine).select(version).release
    assert release is not None and release.version == version
    return EstimateInput(engine, release, model, None, max_model_len=context, options=options, host_memory_gib=512)


def _kv_bytes(cells: KvCells, model: ModelFacts) -> int:
    per_cell = 2 * model.kv_heads * model.head_dim * F16
    full = cells.full_cells(cells.per_sequence) if cells.full_cells else cells.per_sequence * cells.streams
    window = cells.window_cells(cells.per_sequence) if cells.window_cells else 0
    return ((model.layers - cells.window_layers) * full + cells.window_layers * window) * per_cell


def test_gemma3_gguf_has_llama_cpp_s_sliding_layers(gemma3: ModelFacts) -> None:
    assert (gemma3.sliding_window, gemma3.sliding_layers) == (1024, 29)  # global: layers 5, 11, 17, 23, 29


@pytest.mark.parametrize(
    ("arch", "layers", "extra", "expected"),
    [
        ("gemma2", 42, {"sliding_window": 4096}, (4096, 21)),  # gemma2.cpp load_swa_pattern(ml, 2): even layers
        ("gemma2", 42, {}, (4096, 21)),  # gemma2.cpp: n_swa = 4096 when the header has none
        ("gpt-oss", 36, {"sliding_window": 128}, (128, 18)),  # openai-moe.cpp load_swa_pattern(ml, 2)
        ("cohere2", 40, {"sliding_window": 4096}, (4096, 30)),  # cohere2.cpp load_swa_pattern(ml, 4)
        ("smallthinker", 6, {}, (4096, 4)),  # dense first: il % 4 != 0 -> 1, 2, 3, 5
        ("phi3", 32, {"sliding_window": 2047}, (None, 0)),  # phi3.cpp: "Phi SWA is currently disabled"
        ("gemma3", 12, {"sliding_window": 512, "sliding_window_pattern": 3}, (512, 8)),  # the header's period
        ("gemma4", 6, {"sliding_window": 512, "sliding_window_pattern": [True, True, False] * 2}, (512, 4)),
        ("llama", 32, {}, (None, 0)),
    ],
)
def test_gguf_sliding_layers_follow_llama_cpp(
    tmp_path: Path, arch: str, layers: int, extra: dict[str, Any], expected: tuple[int | None, int]
) -> None:
    facts = _gguf(tmp_path / "m.gguf", arch, layers, 2, 64, **extra)
    assert (facts.sliding_window, facts.sliding_layers) == expected


def test_llama4_gguf_is_chunked_three_of_four(tmp_path: Path) -> None:
    facts = _gguf(tmp_path / "l4.gguf", "llama4", 48, 8, 128)
    assert (facts.sliding_window, facts.sliding_layers, facts.window_kind) == (8192, 36, "chunked")


def test_llama_cpp_unified_slots_give_windowed_layers_their_cells(gemma3: ModelFacts) -> None:
    # 4 automatic slots, one unified cache of 32768: 1024 × 4 + 512 = 4608 cells (a multiple of 256)
    cells = llama_memory.kv_cells(_input("llama.cpp", "b11434", gemma3, 32768))
    assert cells.window_cells is not None and cells.full_cells is not None
    assert (cells.window_layers, cells.window_cells(32768), cells.full_cells(32768)) == (29, 4608, 32768)
    assert _kv_bytes(cells, gemma3) == (5 * 32768 + 29 * 4608) * 4096
    found = llama_memory.estimate(_input("llama.cpp", "b11434", gemma3, 32768))
    assert found.kv_cache_gib == round((5 * 32768 + 29 * 4608) * 4096 / 1024**3, 2)  # 1.13, was 4.25
    assert any("29 sliding-window layers × 4608 cells" in note for note in found.notes)


def test_llama_cpp_split_slots_window_per_stream(gemma3: ModelFacts) -> None:
    # --parallel 2: two streams of n_ctx_seq 32768; each window 1024 + 512 = 1536 cells
    cells = llama_memory.kv_cells(_input("llama.cpp", "b9093", gemma3, 32768, parallel=2))
    assert cells.window_cells is not None
    assert (cells.streams, cells.window_cells(32768)) == (2, 2 * 1536)
    assert _kv_bytes(cells, gemma3) == (5 * 32768 * 2 + 29 * 1536 * 2) * 4096


def test_llama_cpp_window_is_capped_by_the_context_and_padded(gemma3: ModelFacts) -> None:
    # context 1000 -> n_ctx 1024 (padded); min(1024, 1024 × 1 + 512) = 1024
    cells = llama_memory.kv_cells(_input("llama.cpp", "b11434", gemma3, 1000, parallel=1))
    assert cells.window_cells is not None and cells.window_cells(cells.per_sequence) == 1024
    # -ub 100: 1024 + 100 = 1124 -> 1280
    cells = llama_memory.kv_cells(_input("llama.cpp", "b11434", gemma3, 8192, parallel=1, ubatch_size=100))
    assert cells.window_cells is not None and cells.window_cells(8192) == 1280


def test_swa_full_gives_every_layer_the_context(gemma3: ModelFacts) -> None:
    cells = llama_memory.kv_cells(_input("llama.cpp", "b11434", gemma3, 32768, swa_full=True))
    assert cells.window_cells is None and "--swa-full" in cells.window_note
    assert _kv_bytes(cells, gemma3) == 34 * 32768 * 4096


def test_a_release_without_the_fact_keeps_full_layers_and_says_so(gemma3: ModelFacts) -> None:
    inp = _input("llama.cpp", "b11434", gemma3, 32768)
    assert inp.release is not None
    bare: EngineRelease = replace(inp.release, facts=inp.release.facts.model_copy(update={"kv_cache": None}))
    cells = llama_memory.kv_cells(replace(inp, release=bare))
    assert cells.window_cells is None and "no kv_cache fact" in cells.window_note
    assert _kv_bytes(cells, gemma3) == 34 * 32768 * 4096


def test_gemma4_e4b_swa_cache_matches_its_llama_cpp_log() -> None:
    # 002-gemma-4-e4b: n_swa 512, 1 slot, n_ubatch 512 -> 1024 cells; 20 SWA layers of 2 KV heads × 256
    swa = ModelFacts("gemma4-swa", "gemma4", 20, 512, 4, 2, 256, sliding_window=512, sliding_layers=20)
    cells = llama_memory.kv_cells(_input("llama.cpp", "b9093", swa, 65536, parallel=1))
    assert cells.window_cells is not None and cells.window_cells(65536) == 1024
    assert _kv_bytes(cells, swa) == 40 * 1024**2  # "SWA KV cache ... 40.00 MiB (1024 cells, 20 layers)"


def test_gemma3_on_ollama_go_engine_matches_its_log(gemma3: ModelFacts) -> None:
    # 0.16.3, KvSize 4096, Parallel 1, BatchSize 512, flash attention: 5 × 4096 + 29 × (1024 + 512) cells
    inp = _input("ollama", "0.16.3", gemma3, 4096, num_parallel=1, flash_attention=True)
    name, _, _ = ollama_memory.runner(inp)
    cells = ollama_memory.kv_cells(inp)
    assert name == "go engine" and cells.window_cells is not None
    assert cells.window_cells(4096) == 1536
    assert _kv_bytes(cells, gemma3) == 254 * 1024**2  # level=INFO msg="kv cache" device=CUDA0 size="254.0 MiB"


def test_ollama_go_engine_with_several_sequences_keeps_one_more_cell(gemma3: ModelFacts) -> None:
    # causal.go 0.12.4+: memory = max(window, window + 1) with 2 sequences: roundUp(2 × 1025 + 512, 256) = 2816
    cells = ollama_memory.kv_cells(_input("ollama", "0.16.3", gemma3, 4096, num_parallel=2))
    assert cells.window_cells is not None and cells.window_cells(4096) == 2816


def test_ollama_llama_runner_keeps_full_size_swa(tmp_path: Path) -> None:
    # gemma2 is not in 0.16.3's OllamaEngineRequired: the vendored llama.cpp, swa_full true by default
    gemma2 = _gguf(tmp_path / "g2.gguf", "gemma2", 42, 8, 256, sliding_window=4096)
    inp = _input("ollama", "0.16.3", gemma2, 8000, num_parallel=1)
    cells = ollama_memory.kv_cells(inp)
    assert ollama_memory.runner(inp)[0] == "llama.cpp" and cells.window_cells is None
    assert cells.full_cells is not None and cells.full_cells(8000) == 8192  # GGML_PAD(n_ctx, 256)


def test_gpt_oss_on_ollama_llama_server_matches_its_log(tmp_path: Path) -> None:
    # 0.30.7 runs llama-server (b9509) with -c 16384 -np 1 -b 1024 -ub 1024: 18 full layers × 16384 cells (576 MiB)
    # and 18 SWA layers × pad256(min(16384, 128 + 1024)) = 1280 cells (45 MiB)
    # (https://github.com/miguelvc6/kg-benchmark/blob/52709f3c1e54dc74468a23fc402d29181dc6acf7/ollama-serve.log)
    oss = _gguf(tmp_path / "oss.gguf", "gpt-oss", 36, 8, 64, sliding_window=128)
    inp = _input("ollama", "0.30.7", oss, 16384, num_parallel=1, **{"modelfile.num_batch": 1024})
    cells = ollama_memory.kv_cells(inp)
    assert ollama_memory.runner(inp)[0] == "llama.cpp" and cells.window_cells is not None
    assert (cells.window_layers, cells.window_cells(16384)) == (18, 1280)
    assert _kv_bytes(cells, oss) == (576 + 45) * 1024**2


def test_every_gguf_release_has_its_kv_cache_facts() -> None:
    for engine in ("llama.cpp", "ollama"):
        unit = get(engine)
        for version in unit.catalog.files:
            facts = unit.catalog.release(version).facts
            assert facts.kv_cache is not None, (engine, version)
            assert facts.kv_cache.cache_types and facts.kv_cache.cache_type_default in facts.kv_cache.cache_types
            sources = [facts.kv_cache.source] + ([facts.kv_cache.swa.source] if facts.kv_cache.swa else [])
            assert all(s.startswith("https://github.com/") and "/blob/" in s for s in sources), (engine, version)
            if engine == "llama.cpp":
                assert facts.kv_cache.swa is not None and facts.kv_cache.swa.full_option == "swa_full", version
            if engine == "ollama":  # the Go engine (runner/ollamarunner) from 0.5.12 until llama-server in 0.30
                ollamarunner = (0, 5, 12) <= tuple(int(x) for x in version.split("-")[0].split(".")) < (0, 30)
                assert (facts.go_engine is not None) == ollamarunner, version
