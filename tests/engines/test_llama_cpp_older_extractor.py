"""scripts/catalog/llama_cpp_older.py and gguf_kv.layout on small trees written here (statements as the
b7209 and b6646 trees Ollama vendored have them: src/llama-kv-cache-iswa.cpp:50, src/llama-context.cpp,
common/common.h), and the ranges it merges reads into."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

SCRIPTS = str(Path(__file__).resolve().parents[2] / "scripts" / "catalog")
sys.path.insert(0, SCRIPTS)
import gguf_kv  # noqa: E402
import llama_cpp_older  # noqa: E402

while SCRIPTS in sys.path:  # the builders' folder holds modules (build, metrics, tokens) no other test should get
    sys.path.remove(SCRIPTS)

ISWA = """
    uint32_t size_swa = GGML_PAD(std::min(size_base, hparams.n_swa*(unified ? n_seq_max : 1) + n_ubatch), 256);
    if (swa_full) {
        size_swa = size_base;
    }
"""
MODEL = """
        res = new llama_kv_cache_iswa(
                *this, params.type_k, params.type_v, !cparams.flash_attn, cparams.offload_kqv,
                params.swa_full, cparams.kv_unified, n_ctx_per_stream, cparams.n_seq_max, cparams.n_ubatch, 1, nullptr);
"""
CONTEXT = """
    cparams.n_ubatch = std::min(cparams.n_batch, params.n_ubatch == 0 ? params.n_batch : params.n_ubatch);
    cparams.n_ctx = GGML_PAD(cparams.n_ctx, 256);
"""
COMMON = "    int32_t n_ubatch = 512;\n    bool swa_full = false; // use full-size SWA cache\n"


def _at(member: str) -> str:
    return f"https://example.invalid/{member}"


def _tree(**replace: str) -> dict[str, str]:
    files = {
        "src/llama-kv-cache-iswa.cpp": ISWA,
        "src/llama-model.cpp": MODEL,
        "src/llama-context.cpp": CONTEXT,
        "common/common.h": COMMON,
    }
    files.update(replace)
    return {name: text for name, text in files.items() if text}


def test_layout_reads_the_window_rule_without_common_arg_cpp() -> None:
    fact = gguf_kv.layout(_tree(), _at, "test")
    assert fact["cell_pad"] == 256 and "cell_pad_flash_attn" not in fact
    assert fact["swa"]["pad"] == 256 and not fact["swa"]["pad_inside_min"]
    assert fact["swa"]["batch_default"] == 512 and fact["swa"]["full_option"] == "swa_full"
    assert "src/llama-kv-cache-iswa.cpp#L2" in fact["swa"]["source"]


def test_the_catalog_reader_still_wants_common_arg_cpp() -> None:
    with pytest.raises(SystemExit, match="--swa-full"):
        gguf_kv.kv_cache(_tree(), _at, "test")


def test_a_tree_without_the_iswa_file_caches_every_layer_whole() -> None:
    padding = "uint32_t get_padding(const llama_cparams & cparams) {\n    return cparams.flash_attn ? 256u : 32u;\n}\n"
    tree = _tree(**{"src/llama-kv-cache-iswa.cpp": "", "src/llama-context.cpp": "", "src/llama-kv-cache.cpp": padding})
    fact = gguf_kv.layout(tree, _at, "test")
    assert fact["swa"] is None and fact["cell_pad"] == 32 and fact["cell_pad_flash_attn"] == 256


def test_a_window_padded_by_flash_attention_stops_the_reader() -> None:
    iswa = "size_swa = std::min(size_base, GGML_PAD(hparams.n_swa*(unified ? n_seq_max : 1) + n_ubatch, n_pad));\n"
    iswa += "if (swa_full) { size_swa = size_base; }\n"
    model = MODEL.replace("cparams.n_ubatch, 1, nullptr", "cparams.n_ubatch, padding, nullptr")
    with pytest.raises(SystemExit, match="flash attention"):
        gguf_kv.layout(_tree(**{"src/llama-kv-cache-iswa.cpp": iswa, "src/llama-model.cpp": model}), _at, "test")


def _read(build: str, fact: dict[str, Any] | None) -> dict[str, Any]:
    entry: dict[str, Any] = {"build": build, "kv_cache": fact}
    if fact is None:
        entry["why"] = "not expressible"
    return entry


def test_reads_with_one_rule_merge_and_reach_the_catalog_only_when_it_agrees() -> None:
    window = gguf_kv.layout(_tree(), _at, "test")
    other = {**window, "cell_pad": 32}
    reads = [_read("b7209", window), _read("b5359", other), _read("b7847", {**window, "source": "elsewhere"})]
    ranges = llama_cpp_older.ranges(reads, ("b9093", window))
    assert [(r["first"], r["last"]) for r in ranges] == [("b5359", "b5359"), ("b7209", "b9092")]
    assert ranges[1]["read_at"] == ["b7209", "b7847"] and ranges[1]["bracketed_by"] == "b9093"
    assert "not read" in ranges[1]["basis"]
    ranges = llama_cpp_older.ranges(reads, ("b9093", other))  # the catalog's rule differs: no claim past b7847
    assert ranges[-1]["last"] == "b7847" and "bracketed_by" not in ranges[-1]


def test_a_read_without_a_rule_stands_alone() -> None:
    window = gguf_kv.layout(_tree(), _at, "test")
    reads = [_read("b6646", None), _read("b6840", None), _read("b7209", window)]
    ranges = llama_cpp_older.ranges(reads, ("b9093", window))
    assert [(r["first"], r["last"], r["kv_cache"] is None) for r in ranges] == [
        ("b6646", "b6646", True),
        ("b6840", "b6840", True),
        ("b7209", "b9092", False),
    ]
