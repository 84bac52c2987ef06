"""Building a dense decoder-only model on one GPU, tensor by tensor, as SGLang and vLLM both do it.

SGLang's and vLLM's model files for the layouts in :data:`LAYOUTS` build, in this order, the
``VocabParallelEmbedding`` (vocabulary padded to 64, ``DEFAULT_VOCAB_PADDING_SIZE``, split over the TP ranks), then
per decoder layer ``QKVParallelLinear`` (q, k, v fused), ``RowParallelLinear`` o_proj, the rotary embedding (its
``cos_sin_cache`` built on the GPU from float32 temporaries by the first layer's ``get_rope``; the others share it),
``MergedColumnParallelLinear`` gate_up, ``RowParallelLinear`` down and two RMSNorms, then the final norm and an
untied ``ParallelLMHead`` (SGLang llama.py / qwen2.py / qwen3.py / mistral.py; vLLM model_executor/models/llama.py
L92-L306, L376-L499, qwen2.py L90-L285, qwen3.py L105-L308 at v0.27.1; vLLM's
layers/vocab_parallel_embedding.py L32 ``DEFAULT_VOCAB_PADDING_SIZE = 64``; layers/rotary_embedding/base.py L59-L61
``_compute_cos_sin_cache`` then ``cache.to(dtype)``). A pipeline stage builds only its own layers
(``make_layers``: ``PPMissingLayer`` for the rest), the embedding on the first stage, norm and head on the last.
:func:`events` lists those allocations in order for :func:`servespec.knowledge.torch_allocator.held_after`.

Not listed: biases and per-head norms (≤ 1 MiB each: the small pool's 2 MiB segments, a few MiB in all), ``inv_freq``.
"""

from __future__ import annotations

from servespec.knowledge.memory import EstimateInput, dtype_bytes

LAYOUTS = frozenset({"LlamaForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM", "Qwen3ForCausalLM"})
"""Architectures whose model file builds the layer layout above (every catalogued SGLang and vLLM release)."""
VOCAB_PADDING = 64
"""``DEFAULT_VOCAB_PADDING_SIZE`` (layers/vocab_parallel_embedding.py; SGLang v0.4.0 on, vLLM L32 at v0.27.1)."""
PLAIN_ROPE = frozenset({"", "default", "llama3"})
"""RoPE kinds whose cache has ``max_position_embeddings`` rows (``RotaryEmbedding``, ``Llama3RotaryEmbedding``)."""

Events = list[tuple[str, int | None]]


def width(inp: EstimateInput) -> int | None:
    """Bytes per parameter where the model is built as :data:`LAYOUTS` says (16-bit, unquantized, dense, plain RoPE,
    every fused matrix split evenly over the TP ranks); None: the build is not replayed."""
    m = inp.model
    if m.architecture not in LAYOUTS:
        return None
    if m.is_moe or m.kv_lora_rank or m.linear_layers or m.layer_modules or m.quant_method or inp.quantization:
        return None
    if (m.rope_type or "") not in PLAIN_ROPE:
        return None
    tp = inp.tensor_parallel
    inter, vocab = m.intermediate_size or 0, padded_vocab(inp)
    if not inter or not m.max_position_embeddings or inter % tp or vocab % tp or (m.attention_heads * m.head_dim) % tp:
        return None
    size = int(dtype_bytes(m, inp.dtype))
    return size if size == 2 else None


def padded_vocab(inp: EstimateInput) -> int:
    return -(-(inp.model.vocab_size or 0) // VOCAB_PADDING) * VOCAB_PADDING


def events(
    inp: EstimateInput, size: int, rope_bytes: int, layers: range | None = None, first: bool = True, last: bool = True
) -> tuple[Events, int]:
    """The allocations and frees of building the model on one rank (``size`` bytes a parameter, the RoPE cache kept
    in ``rope_bytes`` a value; ``layers``: the stage's decoder layers, all by default; ``first`` / ``last``: the stage
    holds the embedding / the final norm and head), and the parameters' bytes."""
    m = inp.model
    tp = inp.tensor_parallel
    h, q, kv = m.hidden_size, m.attention_heads * m.head_dim, m.kv_heads * m.head_dim
    inter = m.intermediate_size or 0
    vocab = padded_vocab(inp)
    # vLLM and SGLang build the embedding on the last stage too where the head is tied to it
    out: Events = [("embed", vocab // tp * h * size)] if first or (last and m.tie_word_embeddings) else []
    rows, rot = m.max_position_embeddings or 0, m.head_dim
    built = range(m.layers) if layers is None else layers
    for layer in built:
        out += [(f"{layer}.qkv", (q + 2 * kv) // tp * h * size), (f"{layer}.o", h * (q // tp) * size)]
        if layer == built.start:  # get_rope's first call builds the cache; the other layers share it (_ROPE_DICT)
            half = rows * rot // 2 * 4
            out += [("rope.t", rows * 4), ("rope.freqs", half), ("rope.cos", half), ("rope.sin", half)]
            out += [("rope.cat", rows * rot * 4)]  # returned; the function's other tensors are dropped
            out += [("rope.t", None), ("rope.freqs", None), ("rope.cos", None), ("rope.sin", None)]
            if rope_bytes != 4:  # cache.to(dtype): a copy in the model's dtype, the float32 one dropped
                out += [("rope.cache", rows * rot * rope_bytes), ("rope.cat", None)]
        out += [(f"{layer}.gate_up", 2 * (inter // tp) * h * size), (f"{layer}.down", h * (inter // tp) * size)]
        out += [(f"{layer}.norm1", h * size), (f"{layer}.norm2", h * size)]
    if last:
        out.append(("norm", h * size))
        if not m.tie_word_embeddings:
            out.append(("lm_head", vocab // tp * h * size))
    params = sum(n for name, n in out if n is not None and not name.startswith("rope."))
    return out, params
