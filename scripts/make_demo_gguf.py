"""Write a tiny random-weight Llama model as GGUF, for demos and tests (no download needed).

    python scripts/make_demo_gguf.py OUT.gguf [--seed 0]
    python scripts/make_demo_gguf.py --lora OUT-lora.gguf [--seed 0]   # a LoRA adapter for it

The model is a RANDOM-WEIGHT DEMO: 2 layers, hidden size 64, a 300-token SentencePiece-
style vocabulary (byte fallback tokens plus letters). It loads and serves in llama.cpp,
but its output is noise: the tests and benchmarks serve it because it is well under 1 MiB
and loads at once, so nothing large is ever committed or downloaded. The quick start
(``scripts/demo``) serves a real model instead, Gemma 3 270M: see ``scripts/demo_model.py``.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import gguf

HIDDEN, LAYERS, HEADS, KV_HEADS, FFN, CONTEXT = 64, 2, 4, 2, 128, 2048


def vocabulary() -> tuple[list[str], list[float], list[int]]:
    """Tokens, scores and token types (1 normal, 2 unknown, 3 control, 6 byte)."""
    tokens = ["<unk>", "<s>", "</s>"]
    types = [2, 3, 3]
    tokens += [f"<0x{value:02X}>" for value in range(256)]
    types += [6] * 256
    pieces = ["▁", *"abcdefghijklmnopqrstuvwxyz", "▁the", "▁a", "▁is", "▁to", "▁and", "▁of", "▁in", "▁it", "▁hi"]
    pieces += [p for p in ("er", "on", "an", "re", "in") if p not in pieces]
    tokens += pieces
    types += [1] * len(pieces)
    scores = [0.0] * 3 + [0.0] * 256 + [-float(i) for i in range(len(pieces))]
    return tokens, scores, types


def save(writer: gguf.GGUFWriter) -> None:
    """Write a GGUFWriter's header, key-values and tensors to its file, and close it."""
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def write(path: Path, seed: int = 0) -> Path:
    """Write the model to ``path`` and return it."""
    import gguf

    rng = np.random.default_rng(seed)
    tokens, scores, types = vocabulary()
    vocab = len(tokens)
    head_dim = HIDDEN // HEADS
    writer = gguf.GGUFWriter(str(path), arch="llama")
    writer.add_name("servespec random-weight demo (not a real model)")
    writer.add_context_length(CONTEXT)
    writer.add_embedding_length(HIDDEN)
    writer.add_block_count(LAYERS)
    writer.add_feed_forward_length(FFN)
    writer.add_head_count(HEADS)
    writer.add_head_count_kv(KV_HEADS)
    writer.add_rope_dimension_count(head_dim)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_vocab_size(vocab)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    writer.add_tokenizer_model("llama")
    writer.add_token_list(tokens)
    writer.add_token_scores(scores)
    writer.add_token_types(types)
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    writer.add_unk_token_id(0)
    writer.add_add_bos_token(True)

    def weight(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) * 0.02).astype(np.float32)

    writer.add_tensor("token_embd.weight", weight(vocab, HIDDEN))
    writer.add_tensor("output_norm.weight", np.ones(HIDDEN, dtype=np.float32))
    writer.add_tensor("output.weight", weight(vocab, HIDDEN))
    for layer in range(LAYERS):
        prefix = f"blk.{layer}"
        writer.add_tensor(f"{prefix}.attn_norm.weight", np.ones(HIDDEN, dtype=np.float32))
        writer.add_tensor(f"{prefix}.attn_q.weight", weight(HIDDEN, HIDDEN))
        writer.add_tensor(f"{prefix}.attn_k.weight", weight(KV_HEADS * head_dim, HIDDEN))
        writer.add_tensor(f"{prefix}.attn_v.weight", weight(KV_HEADS * head_dim, HIDDEN))
        writer.add_tensor(f"{prefix}.attn_output.weight", weight(HIDDEN, HIDDEN))
        writer.add_tensor(f"{prefix}.ffn_norm.weight", np.ones(HIDDEN, dtype=np.float32))
        writer.add_tensor(f"{prefix}.ffn_gate.weight", weight(FFN, HIDDEN))
        writer.add_tensor(f"{prefix}.ffn_up.weight", weight(FFN, HIDDEN))
        writer.add_tensor(f"{prefix}.ffn_down.weight", weight(HIDDEN, FFN))
    save(writer)
    return path


LORA_RANK = 4


def write_lora(path: Path, seed: int = 0, rank: int = LORA_RANK) -> Path:
    """Write a random LoRA adapter GGUF for the demo model (its attention q and v projections) to ``path``.

    The layout llama.cpp's ``convert_lora_to_gguf.py`` writes and ``llama_adapter_lora_init`` reads
    (src/llama-adapter.cpp): ``general.type`` ``adapter``, ``adapter.type`` ``lora``,
    ``adapter.lora.alpha``; per adapted weight ``W`` a ``W.lora_a`` of ggml shape [n_in, r] and a
    ``W.lora_b`` of [r, n_out] (numpy shapes reversed), the architecture the model's.
    """
    import gguf

    rng = np.random.default_rng(seed + 1)
    head_dim = HIDDEN // HEADS
    writer = gguf.GGUFWriter(str(path), arch="llama")
    writer.add_name("servespec random-weight demo LoRA (not a real adapter)")
    writer.add_string("general.type", "adapter")
    writer.add_string("adapter.type", "lora")
    writer.add_float32("adapter.lora.alpha", float(2 * rank))
    outputs = {"attn_q": HIDDEN, "attn_v": KV_HEADS * head_dim}
    for layer in range(LAYERS):
        for name, n_out in outputs.items():
            tensor = f"blk.{layer}.{name}.weight"
            writer.add_tensor(f"{tensor}.lora_a", (rng.standard_normal((rank, HIDDEN)) * 0.5).astype(np.float32))
            writer.add_tensor(f"{tensor}.lora_b", (rng.standard_normal((n_out, rank)) * 0.5).astype(np.float32))
    save(writer)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--lora", action="store_true", help="write a LoRA adapter for the demo model instead")
    args = parser.parse_args()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    (write_lora if args.lora else write)(args.out, args.seed)
    print(f"wrote {args.out} ({args.out.stat().st_size} bytes, random weights)")


if __name__ == "__main__":
    main()
