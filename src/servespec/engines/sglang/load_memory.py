"""What SGLang's model load takes beyond the checkpoint's bytes: the caching allocator's segments and the RoPE cache.

``ModelRunner.load_model`` reads the free device memory (``get_available_gpu_memory``: ``empty_cache()`` then
``mem_get_info``, in GiB) before ``get_model`` and after it; the KV pool is taken from what is free after (v0.4.3.post4
model_runner.py L318-L396). Between the readings the model is built on the GPU (``_initialize_model`` under
``torch.device(device)``, model_loader/loader.py) parameter by parameter in construction order, and with it the
rotary embedding's ``cos_sin_cache``, which ``_compute_cos_sin_cache`` makes on the GPU from float32 temporaries,
kept in float32 or the model's dtype as the release does (``facts.memory.rope_cache``), one per ``get_rope`` key.
The free memory falls by the allocator's segments, not the tensors' bytes (knowledge/torch_allocator.py): this
module replays the construction (knowledge/load_replay.py, the same list vLLM builds) for the dense Llama, Mistral,
Qwen2 and Qwen3 layouts and, on CUDA, Qwen3-MoE (on ROCm aiter re-lays the experts after loading, which is not
replayed). Everything else (MLA, shared experts, quantized or offloaded weights, pipeline stages, attention data
parallelism, other RoPE scalings) is not replayed: no load overhead is added there.

Not modelled (not SGLang's): the CUDA modules the driver loads lazily for the kernels the build runs, and biases and
per-head norms of ≤ 1 MiB (they share the small pool's 2 MiB segments)."""

from __future__ import annotations

from dataclasses import dataclass

from servespec.engines.catalog import SglangMemory
from servespec.knowledge import load_replay
from servespec.knowledge.memory import GIB, EstimateInput
from servespec.knowledge.torch_allocator import SOURCE as ALLOCATOR_SOURCE
from servespec.knowledge.torch_allocator import held_after


@dataclass(frozen=True)
class LoadOverhead:
    gib: float
    """GiB per GPU the load takes beyond the parameters' bytes."""
    note: str


def overhead(inp: EstimateInput, memory: SglangMemory | None) -> LoadOverhead | None:
    """What the release's model load takes beyond the checkpoint's bytes per GPU, where the layout is replayed.

    The caller leaves it out where ``--cpu-offload-gb`` moves parameters to the host (engines/sglang/offload.py):
    those are built on the host, and the build is not replayed then."""
    m = inp.model
    fact = memory.rope_cache if memory is not None else None
    if fact is None or inp.gpu is None or inp.pipeline_parallel != 1:
        return None
    on_hip = inp.gpu.vendor == "amd"
    width = load_replay.width(inp, moe=not on_hip)
    if width is None:
        return None
    rope = 4 if (fact.hip if on_hip else fact.cuda) == "float32" else width
    events, params = load_replay.events(inp, width, rope)
    held = held_after(events)
    gib = (held - params) / GIB
    cache = (m.max_position_embeddings or 0) * m.head_dim * rope / GIB
    note = (
        f"model load: +{gib:.3f} GiB beyond the weights (RoPE cos/sin cache {cache:.3f} GiB in "
        f"{'float32' if rope == 4 else 'the model dtype'}, {fact.source}; the rest the caching allocator's segments, "
        f"{ALLOCATOR_SOURCE})"
    )
    return LoadOverhead(gib, note)
