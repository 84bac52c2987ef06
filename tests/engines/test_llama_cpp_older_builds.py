"""Issue 23: KV layout of llama.cpp builds older than the catalog (kv_layout_older_builds.json).

Worked from the trees Ollama vendored, not from the code under test:

- b5359 (Ollama 0cefd46f2, llama.cpp de4c07f93): no llama-kv-cache-iswa.cpp; one llama_kv_cache_unified
  (src/llama-model.cpp ``new llama_kv_cache_unified``) for every layer, cells padded by ``get_padding``
  (``flash_attn ? 256u : 32u``, src/llama-kv-cache.cpp:22).
- b7209 (Ollama 0cf7794b1, llama.cpp 7f8ef50c) and b7847 (Ollama ef00199fb): src/llama-kv-cache-iswa.cpp:50
  ``size_swa = GGML_PAD(std::min(size_base, hparams.n_swa*(unified ? n_seq_max : 1) + n_ubatch), 256)``,
  src/llama-context.cpp ``cparams.n_ctx = GGML_PAD(cparams.n_ctx, 256)``, common/common.h
  ``bool swa_full = false``, ``n_ubatch = 512``: the same as catalogued b9093, so b7209-b9092 is one range.

Gemma 3 4B's 34 layers (29 sliding, window 1024, 4 KV heads of 256) as in test_gguf_kv_cells.py.
"""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

import pytest

from servespec.engines import get
from servespec.engines.llama_cpp import memory as llama_memory
from servespec.engines.llama_cpp import older_builds
from servespec.knowledge.memory import EstimateInput
from servespec.knowledge.models import ModelFacts

from .test_gguf_kv_cells import _gguf

LOGS = Path(__file__).resolve().parents[1] / "data" / "startup_logs" / "llama.cpp"
TABLE = json.loads(older_builds.TABLE.read_text())
NOT_COVERED = {"b5285", "b5489", "b4462", "b4963", "b5331", "b1854", "b4370", "b4400"}
"""Corpus builds older than any tree read: full-attention Qwen3 (b5285, b5489), Qwen2.5-Coder (b4462), DeepSeek
(b4963, b5331), OpenLLaMA (b1854), Pythia (b4370) and h2o-danube3-500M (b4400, llama.cpp/044) logs, with no
windowed layer to size and contexts the padding leaves as they are."""


@pytest.fixture
def gemma3(tmp_path: Path) -> ModelFacts:
    return _gguf(tmp_path / "gemma3.gguf", "gemma3", 34, 4, 256, sliding_window=1024)


def _older(version: str, model: ModelFacts, context: int, **options: object) -> EstimateInput:
    assert get("llama.cpp").select(version).release is None  # older than every catalogued release
    return EstimateInput(
        "llama.cpp",
        None,
        model,
        None,
        max_model_len=context,
        options=options,
        host_memory_gib=512,
        engine_version=version,
    )


def test_a_build_before_iswa_sizes_sliding_layers_at_the_full_context(gemma3: ModelFacts) -> None:
    cells = llama_memory.kv_cells(_older("b5359", gemma3, 32768, parallel=1))
    assert cells.window_cells is None
    assert "no windowed cache" in cells.window_note
    assert cells.full_cells is not None and cells.full_cells(1100) == 1120  # get_padding: 32 without flash attention
    cells = llama_memory.kv_cells(_older("b5359", gemma3, 32768, parallel=1, flash_attn=True))
    assert cells.full_cells is not None and cells.full_cells(1100) == 1280  # and 256 with it


def test_a_build_after_iswa_uses_the_window_formula(gemma3: ModelFacts) -> None:
    cells = llama_memory.kv_cells(_older("b7772", gemma3, 32768, parallel=1))
    assert cells.window_layers == 29 and cells.window_cells is not None
    assert cells.window_cells(32768) == 1536  # pad(min(32768, 1024 + 512), 256)
    assert cells.window_cells(1000) == 1024  # pad(min(1000, 1536), 256)
    assert cells.full_cells is not None and cells.full_cells(1000) == 1024  # n_ctx padded to 256
    assert "ollama/ollama/blob/" in cells.window_note
    cells = llama_memory.kv_cells(_older("b7772", gemma3, 32768, parallel=1, ubatch_size=2048, batch_size=2048))
    assert cells.window_cells is not None and cells.window_cells(32768) == 3072  # pad(1024 + 2048, 256)
    swa_full = llama_memory.kv_cells(_older("b7772", gemma3, 32768, parallel=1, swa_full=True))
    assert swa_full.window_cells is None and "--swa-full" in swa_full.window_note


def test_a_build_read_but_not_expressible_keeps_full_layers_and_says_why(gemma3: ModelFacts) -> None:
    cells = llama_memory.kv_cells(_older("b6646", gemma3, 32768, parallel=1))
    assert cells.window_cells is None and "flash attention" in cells.window_note


def test_a_build_in_no_range_keeps_full_layers_and_says_so(gemma3: ModelFacts) -> None:
    cells = llama_memory.kv_cells(_older("b5285", gemma3, 32768, parallel=1))
    assert cells.window_cells is None and "kv_layout_older_builds.json" in cells.window_note


def test_the_table_covers_every_older_build_the_corpus_names() -> None:
    first = min(int(name.removeprefix("b")) for name in get("llama.cpp").catalog.versions if name.startswith("b"))
    named = set()
    for path in LOGS.glob("*.yaml"):
        match = re.search(r'^engine_version:\s*"(b\d+)"', path.read_text(), re.MULTILINE)
        if match and int(match.group(1)[1:]) < first:
            named.add(match.group(1))
    assert named  # the corpus has builds older than the catalog
    uncovered = {build for build in named if (found := older_builds.lookup(build)) is None or found.kv_cache is None}
    assert uncovered == NOT_COVERED


def test_ranges_are_ordered_disjoint_and_cite_the_tree_read() -> None:
    ranges = older_builds.ranges()
    bounds = [(int(r.first.removeprefix("b")), int(r.last.removeprefix("b"))) for r in ranges]
    assert all(a <= b for a, b in bounds)
    assert all(one[1] < other[0] for one, other in itertools.pairwise(bounds))
    catalog = min(int(name.removeprefix("b")) for name in get("llama.cpp").catalog.versions if name.startswith("b"))
    assert bounds[-1][1] == catalog - 1  # the newest range ends where the catalog starts
    for entry in ranges:
        assert entry.read_at and entry.first == entry.read_at[0]
        if entry.kv_cache is not None:
            cited = re.findall(
                r"github\.com/ollama/ollama/blob/([0-9a-f]{40})/llama/llama\.cpp/\S+#L\d+", entry.kv_cache.source
            )
            assert cited, entry.first
    reads = {entry["build"]: entry for entry in TABLE["reads"]}
    assert set(reads) == {b for entry in ranges for b in entry.read_at}
    assert all(entry["build_named_by"] for entry in reads.values())


def test_the_note_says_which_range_of_the_table_sized_the_build(gemma3: ModelFacts) -> None:
    note = llama_memory.kv_cells(_older("b7772", gemma3, 32768, parallel=1)).window_note
    assert "b7209-b9092 in kv_layout_older_builds.json" in note and "not read" in note
