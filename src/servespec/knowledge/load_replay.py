"""Building a decoder-only model on one GPU, tensor by tensor, as SGLang and vLLM both do it.

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
``QKVParallelLinear`` splits the KV heads over the ranks, or keeps one per rank where there are fewer KV heads than
ranks (``num_kv_heads = max(1, total_num_kv_heads // tp_size)``).

:data:`MOE_LAYOUTS` (SGLang only, see :func:`width`): the same attention and, for the MLP, a ``FusedMoE`` then the
router (qwen3_moe.py ``Qwen3MoeSparseMoeBlock``: ``self.experts = get_moe_impl_class()(...)`` then ``self.gate =
ReplicatedLinear(hidden_size, num_experts, quant_config=None)``, no shared expert). ``FusedMoE.create_weights`` of
the unquantized method makes ``w13_weight`` (experts x 2 * intermediate / TP x hidden) then ``w2_weight`` (experts x
hidden x intermediate / TP) (layers/moe/fused_moe_triton/layer.py, ``UnquantizedFusedMoEMethod``); on CUDA its
``process_weights_after_loading`` keeps them as they are, on ROCm aiter re-lays them (``shuffle_weight``), which is
not replayed. Read in qwen3_moe.py of a 0.4-series tree and of commit 008af3a6 (2026), which keep the order
(https://github.com/sgl-project/sglang/blob/008af3a6f95b956ea4d50986f9a921f13dced28b/python/sglang/srt/models/
qwen3_moe.py ``Qwen3MoeSparseMoeBlock``, ``Qwen3MoeAttention``).

:func:`events` lists the allocations in order for :func:`servespec.knowledge.torch_allocator.held_after`.
Not listed: biases and per-head norms (≤ 1 MiB each: the small pool's 2 MiB segments, a few MiB in all), ``inv_freq``.
"""

from __future__ import annotations

from servespec.knowledge.memory import EstimateInput, dtype_bytes

LAYOUTS = frozenset({"LlamaForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM", "Qwen3ForCausalLM"})
"""Architectures whose model file builds the dense layer layout above (every catalogued SGLang and vLLM release)."""
MOE_LAYOUTS = frozenset({"Qwen3MoeForCausalLM"})
"""Architectures whose SGLang model file builds the MoE layout above."""
VOCAB_PADDING = 64
"""``DEFAULT_VOCAB_PADDING_SIZE`` (layers/vocab_parallel_embedding.py; SGLang v0.4.0 on, vLLM L32 at v0.27.1)."""
PLAIN_ROPE = frozenset({"", "default", "llama3"})
"""RoPE kinds whose cache has ``max_position_embeddings`` rows (``RotaryEmbedding``, ``Llama3RotaryEmbedding``)."""

Tensor = tuple[str, int | None]
"""An allocation ``(name, bytes)`` or, with ``None``, the free of the named tensor."""


def width(inp: EstimateInput, moe: bool = False) -> int | None:
    """Bytes per parameter where the model is built as :data:`LAYOUTS` (or, with ``moe``, :data:`MOE_LAYOUTS`) says:
    16-bit, unquantized, plain RoPE, one data-parallel replica, every fused matrix (the experts too) split evenly over
    the TP ranks;
    None: the build is not replayed."""
    m = inp.model
    tp = inp.tensor_parallel
    if m.kv_lora_rank or m.linear_layers or m.layer_modules or m.quant_method or inp.quantization:
        return None
    if inp.data_parallel != 1 or not m.max_position_embeddings:
        return None
    if (m.rope_type or "") not in PLAIN_ROPE:
        return None
    if m.is_moe:
        if not moe or m.architecture not in MOE_LAYOUTS or m.shared_intermediate_size or not m.experts:
            return None
        if inp.moe_group not in (0, tp):  # experts spread over another group than the TP ranks
            return None
        widths = [m.moe_intermediate_size or 0] + ([m.intermediate_size or 0] if m.dense_layers else [])
    else:
        if m.architecture not in LAYOUTS:
            return None
        widths = [m.intermediate_size or 0]
    if not all(widths) or any(w % tp for w in widths) or padded_vocab(inp) % tp or m.attention_heads % tp:
        return None
    if not ((m.kv_heads >= tp and m.kv_heads % tp == 0) or (m.kv_heads < tp and tp % m.kv_heads == 0)):
        return None
    size = int(dtype_bytes(m, inp.dtype))
    return size if size == 2 else None


def padded_vocab(inp: EstimateInput) -> int:
    return -(-(inp.model.vocab_size or 0) // VOCAB_PADDING) * VOCAB_PADDING


def _rope(rows: int, rot: int, rope_bytes: int) -> list[Tensor]:
    """``_compute_cos_sin_cache`` on the GPU: float32 ``t``, ``freqs``, ``cos``, ``sin``, the ``torch.cat`` it returns,
    then (where the release keeps the model's dtype) ``cache.to(dtype)`` with the float32 one dropped."""
    half = rows * rot // 2 * 4
    out: list[Tensor] = [("rope.t", rows * 4), ("rope.freqs", half), ("rope.cos", half), ("rope.sin", half)]
    out += [("rope.cat", rows * rot * 4)]  # returned; the function's other tensors are dropped
    out += [("rope.t", None), ("rope.freqs", None), ("rope.cos", None), ("rope.sin", None)]
    if rope_bytes != 4:
        out += [("rope.cache", rows * rot * rope_bytes), ("rope.cat", None)]
    return out


def _layer(inp: EstimateInput, layer: int, size: int) -> tuple[list[Tensor], list[Tensor]]:
    """One decoder layer's parameters on one rank in construction order, split where the rotary embedding is built
    (between ``o_proj`` and the MLP): the attention's, then the MLP's (or the experts' and the router's) and the two
    RMSNorms'."""
    m = inp.model
    tp = inp.tensor_parallel
    h = m.hidden_size
    q = m.attention_heads // tp * m.head_dim
    kv = max(1, m.kv_heads // tp) * m.head_dim
    attention: list[Tensor] = [(f"{layer}.qkv", (q + 2 * kv) * h * size), (f"{layer}.o", h * q * size)]
    if m.is_moe and layer >= m.dense_layers:
        experts, inter = m.experts or 0, (m.moe_intermediate_size or 0) // tp
        mlp: list[Tensor] = [(f"{layer}.w13", experts * 2 * inter * h * size)]
        mlp += [(f"{layer}.w2", experts * h * inter * size), (f"{layer}.gate", experts * h * size)]
    else:
        inter = (m.intermediate_size or 0) // tp
        mlp = [(f"{layer}.gate_up", 2 * inter * h * size), (f"{layer}.down", h * inter * size)]
    mlp += [(f"{layer}.norm1", h * size), (f"{layer}.norm2", h * size)]
    return attention, mlp


def events(
    inp: EstimateInput, size: int, rope_bytes: int, layers: range | None = None, first: bool = True, last: bool = True
) -> tuple[list[Tensor], int]:
    """The allocations and frees of building the model on one rank (``size`` bytes a parameter, the RoPE cache kept
    in ``rope_bytes`` a value; ``layers``: the stage's decoder layers, all by default; ``first`` / ``last``: the stage
    holds the embedding / the final norm and head), and the parameters' bytes."""
    m = inp.model
    h = m.hidden_size
    vocab = padded_vocab(inp) // inp.tensor_parallel
    # vLLM and SGLang build the embedding on the last stage too where the head is tied to it
    out: list[Tensor] = [("embed", vocab * h * size)] if first or (last and m.tie_word_embeddings) else []
    built = range(m.layers) if layers is None else layers
    for layer in built:
        attention, mlp = _layer(inp, layer, size)
        out += attention
        if layer == built.start:  # get_rope's first call builds the cache; the other layers share it (_ROPE_DICT)
            out += _rope(m.max_position_embeddings or 0, m.head_dim, rope_bytes)
        out += mlp
    if last:
        out.append(("norm", h * size))
        if not m.tie_word_embeddings:
            out.append(("lm_head", vocab * h * size))
    params = sum(n for name, n in out if n is not None and not name.startswith("rope."))
    return out, params
