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
before the final norm and an untied ``ParallelLMHead``; and, on CUDA, the MoE layout of qwen3_moe.py, whose MLP is
a ``FusedMoE`` (``w13_weight``, ``w2_weight``) then the router (:data:`MOE_LAYOUTS`). One replay takes each layer's
tensor list (:func:`_layer`). Everything else (MLA, shared experts, quantized or offloaded weights, MoE on ROCm,
pipeline stages, attention data parallelism, other RoPE scalings) is not replayed: no load overhead is added there.

Not modelled (not SGLang's): the CUDA modules the driver loads lazily for the kernels the build runs, and biases and
per-head norms of ≤ 1 MiB (they share the small pool's 2 MiB segments)."""

from __future__ import annotations

from dataclasses import dataclass

from servespec.engines.catalog import SglangMemory
from servespec.knowledge.memory import GIB, EstimateInput, dtype_bytes
from servespec.knowledge.torch_allocator import SOURCE as ALLOCATOR_SOURCE
from servespec.knowledge.torch_allocator import held_after

LAYOUTS = frozenset({"LlamaForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM", "Qwen3ForCausalLM"})
"""Architectures whose SGLang model file builds the dense layer layout above (every catalogued release)."""
MOE_LAYOUTS = frozenset({"Qwen3MoeForCausalLM"})
"""Architectures whose SGLang model file builds the same attention and, for the MLP, a ``FusedMoE`` then the router
(qwen3_moe.py ``Qwen3MoeSparseMoeBlock``: ``self.experts = get_moe_impl_class()(...)`` then ``self.gate =
ReplicatedLinear(hidden_size, num_experts, quant_config=None)``, no shared expert). ``FusedMoE.create_weights`` of
the unquantized method makes ``w13_weight`` (experts x 2 * intermediate / TP x hidden) then ``w2_weight`` (experts x
hidden x intermediate / TP) (layers/moe/fused_moe_triton/layer.py, ``UnquantizedFusedMoEMethod``); on CUDA its
``process_weights_after_loading`` keeps them as they are, on ROCm aiter re-lays them (``shuffle_weight``), which is
not replayed: MoE is replayed on CUDA only. Read in qwen3_moe.py of a 0.4-series tree and of commit 008af3a6 (2026),
which keep the order (https://github.com/sgl-project/sglang/blob/008af3a6f95b956ea4d50986f9a921f13dced28b/python/
sglang/srt/models/qwen3_moe.py ``Qwen3MoeSparseMoeBlock``, ``Qwen3MoeAttention``)."""
VOCAB_PADDING = 64
"""``DEFAULT_VOCAB_PADDING_SIZE`` (layers/vocab_parallel_embedding.py, v0.4.0 on)."""
PLAIN_ROPE = frozenset({"", "default", "llama3"})
"""RoPE kinds whose cache has ``max_position_embeddings`` rows (``RotaryEmbedding``, ``Llama3RotaryEmbedding``)."""

Tensor = tuple[str, int | None]
"""An allocation ``(name, bytes)`` or, with ``None``, the free of the named tensor."""


@dataclass(frozen=True)
class LoadOverhead:
    gib: float
    """GiB per GPU the load takes beyond the parameters' bytes."""
    note: str


def _rope(rows: int, rot: int, rope_bytes: int) -> list[Tensor]:
    """``_compute_cos_sin_cache`` on the GPU: float32 ``t``, ``freqs``, ``cos``, ``sin``, the ``torch.cat`` it returns,
    then (where the release keeps the model's dtype) ``cache.to(dtype)`` with the float32 one dropped."""
    half = rows * rot // 2 * 4
    events: list[Tensor] = [("rope.t", rows * 4), ("rope.freqs", half), ("rope.cos", half), ("rope.sin", half)]
    events += [("rope.cat", rows * rot * 4)]  # returned; the function's other tensors are dropped
    events += [("rope.t", None), ("rope.freqs", None), ("rope.cos", None), ("rope.sin", None)]
    if rope_bytes != 4:
        events += [("rope.cache", rows * rot * rope_bytes), ("rope.cat", None)]
    return events


def _layer(inp: EstimateInput, layer: int, width: int) -> tuple[list[Tensor], list[Tensor]]:
    """One decoder layer's parameters on one rank in construction order, split where the rotary embedding is built
    (between ``o_proj`` and the MLP): the attention's, then the MLP's and the two RMSNorms'.

    ``QKVParallelLinear`` splits the KV heads over the ranks, or keeps one per rank where there are fewer KV heads
    than ranks (``num_kv_heads = max(1, total_num_kv_heads // tp_size)``)."""
    m = inp.model
    tp = inp.tensor_parallel
    h = m.hidden_size
    q = m.attention_heads // tp * m.head_dim
    kv = max(1, m.kv_heads // tp) * m.head_dim
    attention: list[Tensor] = [(f"{layer}.qkv", (q + 2 * kv) * h * width), (f"{layer}.o", h * q * width)]
    if m.is_moe and layer >= m.dense_layers:
        experts, inter = m.experts or 0, (m.moe_intermediate_size or 0) // tp
        mlp: list[Tensor] = [(f"{layer}.w13", experts * 2 * inter * h * width)]
        mlp += [(f"{layer}.w2", experts * h * inter * width), (f"{layer}.gate", experts * h * width)]
    else:
        inter = (m.intermediate_size or 0) // tp
        mlp = [(f"{layer}.gate_up", 2 * inter * h * width), (f"{layer}.down", h * inter * width)]
    mlp += [(f"{layer}.norm1", h * width), (f"{layer}.norm2", h * width)]
    return attention, mlp


def _events(inp: EstimateInput, width: int, rope_bytes: int) -> tuple[list[Tensor], int]:
    """The allocations and frees of building the model on one rank, and the parameters' bytes: the embedding, each
    layer's tensors (:func:`_layer`) with the RoPE cache after layer 0's attention (``get_rope``'s first call builds
    it; the other layers share it, ``_ROPE_DICT``), the final norm and an untied LM head."""
    m = inp.model
    h = m.hidden_size
    vocab = -(-(m.vocab_size or 0) // VOCAB_PADDING) * VOCAB_PADDING
    events: list[Tensor] = [("embed", vocab // inp.tensor_parallel * h * width)]
    for layer in range(m.layers):
        attention, mlp = _layer(inp, layer, width)
        events += attention
        if layer == 0:
            events += _rope(m.max_position_embeddings or 0, m.head_dim, rope_bytes)
        events += mlp
    events.append(("norm", h * width))
    if not m.tie_word_embeddings:
        events.append(("lm_head", vocab // inp.tensor_parallel * h * width))
    params = sum(size for name, size in events if size is not None and not name.startswith("rope."))
    return events, params


def _replayed(inp: EstimateInput) -> bool:
    """Whether the build is one :func:`_layer` lays out: a dense layout, or (on CUDA) a MoE one without shared
    experts, unquantized, in one pipeline stage, its MLP widths split evenly over the ranks."""
    m = inp.model
    tp = inp.tensor_parallel
    if m.kv_lora_rank or m.linear_layers or m.layer_modules or m.quant_method or inp.quantization:
        return False
    if inp.pipeline_parallel != 1 or inp.data_parallel != 1 or inp.moe_group:
        return False
    if m.is_moe:
        on_cuda = inp.gpu is not None and inp.gpu.vendor != "amd"
        if m.architecture not in MOE_LAYOUTS or not on_cuda or m.shared_intermediate_size or not m.experts:
            return False
        widths = [m.moe_intermediate_size or 0] + ([m.intermediate_size or 0] if m.dense_layers else [])
    else:
        if m.architecture not in LAYOUTS:
            return False
        widths = [m.intermediate_size or 0]
    vocab = -(-(m.vocab_size or 0) // VOCAB_PADDING) * VOCAB_PADDING
    if not all(widths) or any(w % tp for w in widths) or vocab % tp or m.attention_heads % tp:
        return False
    return (m.kv_heads >= tp and m.kv_heads % tp == 0) or (m.kv_heads < tp and tp % m.kv_heads == 0)


def overhead(inp: EstimateInput, memory: SglangMemory | None) -> LoadOverhead | None:
    """What the release's model load takes beyond the checkpoint's bytes per GPU, where the layout is replayed.

    The caller leaves it out where ``--cpu-offload-gb`` moves parameters to the host (engines/sglang/offload.py):
    those are built on the host, and the build is not replayed then."""
    m = inp.model
    fact = memory.rope_cache if memory is not None else None
    if fact is None or inp.gpu is None or not m.max_position_embeddings or (m.rope_type or "") not in PLAIN_ROPE:
        return None
    if not _replayed(inp):
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
