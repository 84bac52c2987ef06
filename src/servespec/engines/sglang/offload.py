"""SGLang ``--cpu-offload-gb``: the weights each rank moves to host memory before its KV pool is sized.

The release's rule (``facts.memory.cpu_offload``, read from its source by scripts/catalog/sglang_memory.py): each
rank's budget is ``int(cpu_offload_gb * 1024**3)`` bytes; as ``make_layers`` creates the decoder layers, their
parameters move to pinned host memory one by one in layer order until the bytes moved reach the budget. The
embeddings, the LM head, the final norm and anything built outside ``make_layers`` stay on the GPU, as do the
parts the release keeps resident (``resident``). ``get_available_gpu_memory`` empties torch's cache before it reads
the free memory, so what moved no longer counts against the pool. In each forward an offloaded layer's weights are
copied back to the GPU for that layer only, after the pool is sized: not modelled here."""

from __future__ import annotations

from dataclasses import dataclass

from servespec.engines.catalog import SglangMemory
from servespec.engines.sglang import swa
from servespec.knowledge.memory import GIB, EstimateInput, dtype_bytes, number

OPTION = "cpu_offload_gb"


@dataclass(frozen=True)
class Offload:
    """What one rank moves to host memory."""

    gib: float
    """GiB of weights moved off each GPU (the estimate's lower bound when the budget ends inside the layers)."""
    note: str


def _kept_gib(inp: EstimateInput, resident: tuple[str, ...]) -> float:
    """GiB per rank of the weights ``make_layers`` does not move: embeddings and LM head (vocab-parallel), the
    vision tower, and the resident parts the release names."""
    model = inp.model
    element = dtype_bytes(model, inp.dtype)
    vocab = (model.vocab_size or 0) * model.hidden_size * (1 if model.tie_word_embeddings else 2)
    kept = (vocab + model.vision_params) * element
    if "mla_kv_b_proj" in resident and model.is_mla:
        heads = model.attention_heads
        per_layer = (model.kv_lora_rank or 0) * heads * ((model.qk_nope_head_dim or 0) + (model.v_head_dim or 0))
        kept += per_layer * model.layers * element
    return kept / inp.tensor_parallel / inp.pipeline_parallel / GIB


def offloaded(inp: EstimateInput, memory: SglangMemory | None, weights: float) -> Offload | None:
    """The weights one rank moves to host memory under ``--cpu-offload-gb``; None when the option is unset."""
    budget = number(inp.options, OPTION, 0.0)
    if budget <= 0:
        return None
    fact = memory.cpu_offload if memory is not None else None
    if fact is None:
        return Offload(0.0, f"{OPTION} {budget:g}: the release's offload rule is not catalogued; nothing moved")
    names = (
        (inp.model.architecture,)
        if inp.model.architecture
        else swa.ARCHITECTURES_BY_MODEL_TYPE.get(inp.model.model_type, ())
    )
    assumed = ""
    if names and not any(name in fact.architectures for name in names):
        note = f"{OPTION} {budget:g}: this release's {names[0]} builds its layers without make_layers; nothing moved"
        return Offload(0.0, note)
    if not names:
        assumed = " (assumed: the model's class is not known; taken as one that builds its layers with make_layers)"
    movable = max(weights - _kept_gib(inp, fact.resident), 0.0)
    moved = min(budget, movable)
    bound = "" if budget >= movable else " or up to one parameter more (it moves whole parameters)"
    note = (
        f"{OPTION} {budget:g}: {moved:.2f} GiB of the decoder layers' weights per GPU in host memory{bound}, "
        f"{weights - moved:.2f} GiB left on the GPU{assumed}"
    )
    return Offload(moved, note)
