"""What SGLang's model load takes beyond the checkpoint's bytes: the caching allocator's segments and the RoPE cache.

``ModelRunner.load_model`` reads the free device memory (``get_available_gpu_memory``: ``empty_cache()`` then
``mem_get_info``, in GiB) before ``get_model`` and after it; the KV pool is taken from what is free after (v0.4.3.post4
model_runner.py L318-L396). Between the readings the model is built on the GPU (``_initialize_model`` under
``torch.device(device)``, model_loader/loader.py) parameter by parameter in construction order, and with it the
rotary embedding's ``cos_sin_cache``, which ``_compute_cos_sin_cache`` makes on the GPU from float32 temporaries
(``t``, ``freqs``, ``cos``, ``sin``, then ``torch.cat``), kept in float32 or the model's dtype as the release does
(``facts.memory.rope_cache``), one per ``get_rope`` key. The free memory falls by the allocator's segments, not the
tensors' bytes (knowledge/torch_allocator.py): this module replays the construction for the decoder-only layouts
whose SGLang model file builds, per layer, ``QKVParallelLinear`` (q, k, v fused), ``RowParallelLinear`` o_proj,
the rotary embedding, ``MergedColumnParallelLinear`` gate_up, ``RowParallelLinear`` down and two RMSNorms
(llama.py, qwen2.py, qwen3.py, mistral.py: ``LlamaDecoderLayer`` / ``Qwen2DecoderLayer``), after the
``VocabParallelEmbedding`` (vocabulary padded to 64, ``DEFAULT_VOCAB_PADDING_SIZE``, split over the TP ranks) and
before the final norm and an untied ``ParallelLMHead``. Everything else (MoE, MLA, quantized or offloaded weights,
pipeline stages, other RoPE scalings) is not replayed: no load overhead is added there.

Not modelled (not SGLang's): the CUDA modules the driver loads lazily for the kernels the build runs, and biases and
per-head norms of ≤ 1 MiB (they share the small pool's 2 MiB segments)."""

from __future__ import annotations

from dataclasses import dataclass

from servespec.engines.catalog import SglangMemory
from servespec.knowledge.memory import GIB, EstimateInput, dtype_bytes
from servespec.knowledge.torch_allocator import SOURCE as ALLOCATOR_SOURCE
from servespec.knowledge.torch_allocator import held_after

LAYOUTS = frozenset({"LlamaForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM", "Qwen3ForCausalLM"})
"""Architectures whose SGLang model file builds the layer layout above (every catalogued release)."""
VOCAB_PADDING = 64
"""``DEFAULT_VOCAB_PADDING_SIZE`` (layers/vocab_parallel_embedding.py, v0.4.0 on)."""
PLAIN_ROPE = frozenset({"", "default", "llama3"})
"""RoPE kinds whose cache has ``max_position_embeddings`` rows (``RotaryEmbedding``, ``Llama3RotaryEmbedding``)."""


@dataclass(frozen=True)
class LoadOverhead:
    gib: float
    """GiB per GPU the load takes beyond the parameters' bytes."""
    note: str


def _events(inp: EstimateInput, width: int, rope_bytes: int) -> tuple[list[tuple[str, int | None]], int]:
    """The allocations and frees of building the model on one rank, and the parameters' bytes."""
    m = inp.model
    tp = inp.tensor_parallel
    h, q, kv = m.hidden_size, m.attention_heads * m.head_dim, m.kv_heads * m.head_dim
    inter = m.intermediate_size or 0
    vocab = -(-(m.vocab_size or 0) // VOCAB_PADDING) * VOCAB_PADDING
    events: list[tuple[str, int | None]] = [("embed", vocab // tp * h * width)]
    rows, rot = m.max_position_embeddings or 0, m.head_dim
    for layer in range(m.layers):
        events += [(f"{layer}.qkv", (q + 2 * kv) // tp * h * width), (f"{layer}.o", h * (q // tp) * width)]
        if layer == 0:  # get_rope's first call builds the cache; the other layers share it (_ROPE_DICT)
            half = rows * rot // 2 * 4
            events += [("rope.t", rows * 4), ("rope.freqs", half), ("rope.cos", half), ("rope.sin", half)]
            events += [("rope.cat", rows * rot * 4)]  # returned; the function's other tensors are dropped
            events += [("rope.t", None), ("rope.freqs", None), ("rope.cos", None), ("rope.sin", None)]
            if rope_bytes != 4:  # cache.to(dtype): a copy in the model's dtype, the float32 one dropped
                events += [("rope.cache", rows * rot * rope_bytes), ("rope.cat", None)]
        events += [(f"{layer}.gate_up", 2 * (inter // tp) * h * width), (f"{layer}.down", h * (inter // tp) * width)]
        events += [(f"{layer}.norm1", h * width), (f"{layer}.norm2", h * width)]
    events.append(("norm", h * width))
    if not m.tie_word_embeddings:
        events.append(("lm_head", vocab // tp * h * width))
    params = sum(size for name, size in events if size is not None and not name.startswith("rope."))
    return events, params


def overhead(inp: EstimateInput, memory: SglangMemory | None) -> LoadOverhead | None:
    """What the release's model load takes beyond the checkpoint's bytes per GPU, where the layout is replayed.

    The caller leaves it out where ``--cpu-offload-gb`` moves parameters to the host (engines/sglang/offload.py):
    those are built on the host, and the build is not replayed then."""
    m = inp.model
    fact = memory.rope_cache if memory is not None else None
    if fact is None or inp.gpu is None or m.architecture not in LAYOUTS:
        return None
    if m.is_moe or m.kv_lora_rank or m.linear_layers or m.layer_modules or m.quant_method or inp.quantization:
        return None
    if inp.pipeline_parallel != 1 or (m.rope_type or "") not in PLAIN_ROPE:
        return None
    tp = inp.tensor_parallel
    inter, vocab = m.intermediate_size or 0, -(-(m.vocab_size or 0) // VOCAB_PADDING) * VOCAB_PADDING
    if not inter or not m.max_position_embeddings or inter % tp or vocab % tp or (m.attention_heads * m.head_dim) % tp:
        return None
    width = int(dtype_bytes(m, inp.dtype))
    if width != 2:
        return None
    on_hip = inp.gpu.vendor == "amd"
    rope = 4 if (fact.hip if on_hip else fact.cuda) == "float32" else width
    events, params = _events(inp, width, rope)
    held = held_after(events)
    gib = (held - params) / GIB
    cache = m.max_position_embeddings * m.head_dim * rope / GIB
    note = (
        f"model load: +{gib:.3f} GiB beyond the weights (RoPE cos/sin cache {cache:.3f} GiB in "
        f"{'float32' if rope == 4 else 'the model dtype'}, {fact.source}; the rest the caching allocator's segments, "
        f"{ALLOCATOR_SOURCE})"
    )
    return LoadOverhead(gib, note)
