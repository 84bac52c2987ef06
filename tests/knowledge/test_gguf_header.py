"""The GGUF header reader (knowledge/gguf_header.py) against gguf-py's own GGUFReader, and on broken files.

The reader walks the header field by field and skips the vocabulary by its lengths, so it
must find exactly what gguf-py finds, and a truncated or lying header is a GgufError.
"""

from __future__ import annotations

import sys
from pathlib import Path

import gguf
import numpy as np
import pytest

from servespec.knowledge.gguf_header import GgufError, read_gguf

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
import make_demo_gguf  # (the random-weight model of the fast tests: a real vocabulary, Q8_0 tensors)


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_demo_gguf.write(tmp_path_factory.mktemp("gguf") / "demo.gguf")


def test_the_header_reads_as_gguf_py_reads_it(model: Path) -> None:
    reader = gguf.GGUFReader(model, "r")
    header = read_gguf(model)
    arch = str(bytes(reader.fields["general.architecture"].parts[-1]), "utf-8")
    assert header.config["model_type"] == arch
    for name, key in (("num_hidden_layers", "block_count"), ("hidden_size", "embedding_length")):
        field = reader.fields[f"{arch}.{key}"]
        assert header.config[name] == field.parts[field.data[0]].tolist()[0]
    assert header.config["vocab_size"] == len(reader.fields["tokenizer.ggml.tokens"].data)
    assert header.weight_bytes == sum(int(t.n_bytes) for t in reader.tensors)
    assert header.config["tie_word_embeddings"] == (not any(t.name == "output.weight" for t in reader.tensors))


def test_a_large_vocabulary_is_skipped_not_built(tmp_path: Path) -> None:
    path = tmp_path / "vocab.gguf"
    writer = gguf.GGUFWriter(path, "llama")
    writer.add_block_count(2)
    writer.add_token_list([f"t{i}" for i in range(262_144)])
    writer.add_array("tokenizer.ggml.scores", [0.0] * 262_144)
    writer.add_tensor("token_embd.weight", np.zeros((4, 8), dtype=np.float32))
    make_demo_gguf.save(writer)
    header = read_gguf(path)
    assert header.config["vocab_size"] == 262_144 and header.weight_bytes == 4 * 8 * 4


@pytest.mark.parametrize("cut", [5, 24, 200, 3000])
def test_a_truncated_header_is_a_gguf_error(model: Path, tmp_path: Path, cut: int) -> None:
    broken = tmp_path / "broken.gguf"
    data = model.read_bytes()
    broken.write_bytes(data[:cut])
    with pytest.raises(GgufError):
        read_gguf(broken)


def test_a_lying_entry_count_is_a_gguf_error(tmp_path: Path) -> None:
    path = tmp_path / "lies.gguf"
    path.write_bytes(b"GGUF" + (3).to_bytes(4, "little") + (2**40).to_bytes(8, "little") + (1).to_bytes(8, "little"))
    with pytest.raises(GgufError):
        read_gguf(path)


def test_a_gated_deltanet_gguf_has_its_linear_layers(tmp_path: Path) -> None:
    """A qwen35 GGUF's ssm.* keys are Qwen3.5-9B's Gated DeltaNet layers (convert_hf_to_gguf.py writes its linear_*
    config fields there); without a full_attention_interval key llama.cpp takes every 4th layer as full attention,
    so 8 of 32 layers hold a KV cache (the KV cache a b8193 llama-server logs for it: 8 layers)."""
    from servespec.knowledge import models

    path = tmp_path / "qwen35.gguf"
    writer = gguf.GGUFWriter(path, "qwen35")
    for key, value in (
        ("block_count", 32),
        ("embedding_length", 4096),
        ("attention.head_count", 16),
        ("attention.head_count_kv", 4),
        ("attention.key_length", 256),
        ("ssm.conv_kernel", 4),
        ("ssm.state_size", 128),
        ("ssm.group_count", 16),
        ("ssm.time_step_rank", 32),
        ("ssm.inner_size", 4096),
    ):
        writer.add_uint32(f"qwen35.{key}", value)
    writer.add_tensor("token_embd.weight", np.zeros((4, 8), dtype=np.float32))
    make_demo_gguf.save(writer)
    header = read_gguf(path)
    assert header.config["full_attention_interval"] == 4
    assert header.config["linear_value_head_dim"] == 128
    facts = models.facts_from_config(header.config, "qwen35.gguf")
    assert facts.linear_layers == 24 and facts.layers - facts.linear_layers == 8
    assert facts.linear_state == (128 * 16 * 2 + 128 * 32, 4, 32, 128, 128)
