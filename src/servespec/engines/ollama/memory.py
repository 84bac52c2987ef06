"""Ollama's memory: ``num_ctx × numParallel`` KV cells (llm/server.go ``KvSize``), layers fitted to VRAM.

``num_gpu`` (a Modelfile parameter, -1 by default) is the number of layers on the GPUs; at
-1 Ollama's scheduler puts as many as fit and keeps the rest in host memory
(https://github.com/ollama/ollama/blob/v0.32.15/llm/memory.go, ``EstimateGPULayers``), less
``OLLAMA_GPU_OVERHEAD`` per GPU.

The cells per layer follow the runner that loads the model (release facts ``kv_cache`` and
``go_engine``): the Go engine (0.5.12-0.29, for the architectures ``OllamaEngineRequired`` lists)
sizes a sliding-window layer ``sequences × memory + num_batch`` (kvcache/causal.go); the llama.cpp
runner (to 0.29) keeps the library's full-size SWA cache; llama-server (0.30 on) its own iSWA rule
with ``-ub num_batch``. Each pads the cells as the release does. A Gated DeltaNet hybrid on the Go engine
(qwen3next 0.15.5 on, qwen35 0.17.1 on; fact ``go_engine.recurrent``) also keeps float32 conv and delta states per
linear layer and sequence, with their checkpoints, and counts them in its "kv cache" (kvcache/recurrent.go).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from servespec.engines.catalog import KvCacheCells
from servespec.engines.gguf import integer, pad, switched_on
from servespec.engines.ollama import ENGINE
from servespec.knowledge.memory import (
    GIB,
    EstimateInput,
    GpuEstimate,
    GpuLayers,
    KvCells,
    estimate_gguf,
    linear_state_bytes,
)


def _arch(name: str) -> str:
    """An architecture as OllamaEngineRequired compares it (``gemma3_text``, ``gpt_oss``: ``gemma3``, ``gptoss``)."""
    return name.lower().removesuffix("_text").replace("-", "").replace("_", "")


def runner(inp: EstimateInput) -> tuple[str, KvCacheCells | None, dict[str, int]]:
    """Which runner loads the model (``go engine`` or ``llama.cpp``), its KV-cache rule and the Go engine's memories."""
    facts = inp.release.facts if inp.release is not None else None
    engine = facts.go_engine if facts is not None else None
    if engine is not None and _arch(inp.model.model_type) in {_arch(a) for a in engine.architectures}:
        return "go engine", engine.kv_cache, {_arch(k): v for k, v in engine.swa_memory.items()}
    return "llama.cpp", facts.kv_cache if facts is not None else None, {}


def recurrent_state(inp: EstimateInput, slots: int) -> tuple[int, str]:
    """Bytes and a note of the linear layers' states the Go engine counts in its "kv cache" (0 and "" if none).

    A Gated DeltaNet hybrid on the Go engine (``go_engine.recurrent``: qwen3next's cache.go, then
    kvcache/recurrent.go) keeps, per
    linear-attention layer and sequence, a conv and a delta state and ``checkpoints`` copies of both, in float32
    whatever the KV-cache type; the full-attention layers keep the causal K/V the cells size."""
    name, _, _ = runner(inp)
    facts = inp.release.facts.go_engine if inp.release is not None else None
    fact = facts.recurrent if facts is not None else None
    model = inp.model
    if name != "go engine" or fact is None or not model.linear_layers or model.linear_kind != "gated_delta_net":
        return 0, ""
    if _arch(model.model_type) not in {_arch(a) for a in fact.architectures}:
        return 0, ""
    copies = 1 + fact.checkpoints
    per_layer = linear_state_bytes(model, fact.state_bytes, 1)
    total = round(model.linear_layers * slots * copies * per_layer)
    where = fact.source.split(" ", 1)[0]
    note = (
        f"{model.linear_layers} linear-attention layers × {slots} sequence(s) × (1 + {fact.checkpoints} checkpoints)"
        f" × {per_layer / 2**20:.2f} MiB of float32 conv and delta state = {total / 2**30:.2f} GiB in the kv cache"
        f" ({where})"
    )
    return total, note


def kv_cells(inp: EstimateInput, slots: int | None = None) -> KvCells:
    """The release runner's KV cells (:func:`attention_cells`) with the recurrent states it counts beside them."""
    slots = ENGINE.slots(inp.options, inp.release) if slots is None else slots
    cells = attention_cells(inp, slots)
    state, note = recurrent_state(inp, slots)
    if not state:
        return cells
    window_note = f"{cells.window_note}; {note}" if cells.window_note else note
    return replace(cells, state_bytes=state, window_note=window_note)


def attention_cells(inp: EstimateInput, slots: int) -> KvCells:
    """Each of ``num_parallel`` slots gets ``num_ctx`` cells, padded and windowed as the release's runner does."""
    cells = KvCells(inp.max_model_len, slots, f"{slots} slot(s) × {inp.max_model_len} tokens")
    name, rule, memories = runner(inp)
    model = inp.model
    if rule is None:
        note = f"{model.sliding_layers} sliding-window layers at the full context: no kv_cache fact for this release"
        return replace(cells, window_note=note if model.sliding_layers else "")
    flash = switched_on(inp.options.get("flash_attention", False))
    step = rule.cell_pad_flash_attn if flash and rule.cell_pad_flash_attn else rule.cell_pad
    if name == "go engine":  # one cache of sequences × context (kvcache/causal.go)
        full: Callable[[int], int] = lambda context: pad(context * slots, step)  # noqa: E731
    else:  # llama.cpp: n_ctx (and each slot's share) padded
        full = lambda context: pad(context, step) * slots  # noqa: E731
    cells = replace(cells, full_cells=full)
    swa = rule.swa
    windowed = model.sliding_layers if name != "go engine" or model.window_kind == "sliding" else 0
    if not (model.sliding_window and windowed):
        return cells
    if swa is None:
        return replace(cells, window_note=f"{model.sliding_layers} sliding-window layers at the full context ({name})")
    batch = integer(inp.options.get(swa.batch_option)) or swa.batch_default
    window = model.sliding_window
    memory = memories.get(_arch(model.model_type), window)

    def cells_of(context: int) -> int:
        if swa.rule == "ollama_causal":
            kept = max(memory, window + 1) if swa.extra_sequence_cell and slots > 1 else memory
            return pad(slots * context, swa.pad) if kept >= context else pad(slots * kept + batch, swa.pad)
        ub = min(batch, context * slots)  # -b/-ub num_batch, n_batch ≤ n_ctx
        inner = (
            min(context, pad(window + ub, swa.pad)) if swa.pad_inside_min else pad(min(context, window + ub), swa.pad)
        )
        return inner * slots

    where = swa.source.split(" ", 1)[0]
    note = f"{windowed} sliding-window layers × {cells_of(inp.max_model_len)} cells ({name}: {where})"
    return replace(cells, window_cells=cells_of, window_layers=windowed, window_note=note)


def gpu_layers(inp: EstimateInput) -> GpuLayers:
    """``num_gpu`` as given, else as many layers as fit (Ollama's own fitting)."""
    value = inp.options.get("modelfile.num_gpu", inp.options.get("num_gpu"))
    count = integer(value)
    if count is not None and count >= 0:
        return GpuLayers("all") if count >= inp.model.layers else GpuLayers("count", count, f"num_gpu {count}")
    overhead = integer(inp.options.get("gpu_overhead")) or 0
    return GpuLayers("auto", reason="num_gpu -1: Ollama fits layers to free VRAM", margin_gib=max(overhead, 0) / GIB)


def auto_parallel(inp: EstimateInput) -> int | None:
    """The slots a release before 0.10 tries when OLLAMA_NUM_PARALLEL is unset or 0, else None."""
    fact = inp.release.facts.auto_parallel if inp.release is not None else None
    value = integer(inp.options.get("num_parallel"))
    return fact.value if fact is not None and (value is None or value <= 0) else None


def estimate(inp: EstimateInput) -> GpuEstimate:
    """Ollama's plan on one GPU (or the host's RAM on CPU hosts).

    Before 0.10 an unset OLLAMA_NUM_PARALLEL makes the scheduler try ``defaultParallel`` slots
    (4, then 2 from 0.6.7) and load with them only when the whole model fits in VRAM, else
    with 1 (server/sched.go ``pickBestFullFitByLibrary``: "try larger then smaller, always end
    with 1"); on a CPU host it takes ``defaultParallel`` as it is.
    """
    tried = auto_parallel(inp)
    if tried is None:
        return estimate_gguf(inp, kv_cells(inp), gpu_layers(inp))
    context = inp.max_model_len
    source = inp.release.facts.auto_parallel.source if inp.release and inp.release.facts.auto_parallel else ""
    cells = replace(kv_cells(inp, tried), note=f"{tried} automatic slot(s) × {context} tokens ({source})")
    first = estimate_gguf(inp, cells, gpu_layers(inp))
    whole = first.offload is None and first.weights_gib + first.overhead_gib + first.kv_cache_gib <= first.total_gib
    if inp.gpu is None or whole:
        return first
    note = f"1 slot × {context} tokens: {tried} automatic slots do not fit in VRAM, so Ollama loads 1 ({source})"
    return estimate_gguf(inp, replace(kv_cells(inp, 1), note=note), gpu_layers(inp))
