"""The CPU/GPU expert split's memory (sglang-kt, and upstream SGLang with ``--kt-weight-path``): SGLang's KV pool on
the GPUs, the routed experts in host RAM.

With the CPU/GPU expert split on (:mod:`servespec.engines.sglang.kt`), each GPU holds
the attention, dense and shared-expert weights and ``--kt-num-gpu-experts`` routed experts
of every MoE layer, in the checkpoint's format, split over the tensor-parallel ranks; SGLang's
KV pool is then ``mem_fraction_static × memory before loading − those weights`` (the SGLang
unit's arithmetic). Host RAM holds the routed experts in the ``--kt-method`` format of ``--kt-weight-path``
(:data:`~servespec.engines.sglang.kt.METHOD_BITS`): all of them, the GPU ones too (:data:`HOST_EXPERTS_SOURCE`),
so the host's share does not shrink as ``--kt-num-gpu-experts`` grows. Without the split it is SGLang's estimate,
unchanged.

Without the routed experts' width (``moe_intermediate_size``: a model given by ``model.architecture``,
which has no such field) the split cannot be sized: there is no estimate (the memory rules do not run)
rather than one with every expert on the GPUs, which sglang-kt never loads.

Assumed by servespec, not read from a log: the checkpoint's bytes per parameter are the same
for routed experts as for the rest (the GPU share is ``routed params / all params`` of the
checkpoint's bytes), and the host copy is counted once per host whatever the tensor-parallel size.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from servespec.engines.sglang import kt
from servespec.knowledge.memory import GIB, EstimateInput, GpuEstimate, Offload, weight_bytes

Pool = Callable[[EstimateInput, float], GpuEstimate | None]
"""SGLang's pool arithmetic for given weights per GPU (engines/sglang/memory.py ``estimate``), passed in so this
module does not import it back."""

HOST_EXPERTS_SOURCE = (
    "kt-kernel's CPU MoE allocates and loads every routed expert of a layer, whatever the GPU mask "
    "(kt-kernel/operators/amx/moe_base.hpp init: the gate/up/down BufferB loop over config_.expert_num, "
    "v0.5.3 and v0.6.4 L113-L130, v0.7.0 L127-L144; avx2/moe_base.hpp L115-L139 at v0.6.4; the mask only skips "
    "experts at compute, should_skip_expert), https://github.com/kvcache-ai/ktransformers"
)
"""Why the host holds every routed expert (kvcache-ai/ktransformers#2084 reports the same for a 2026-07 build)."""


def routed_params(inp: EstimateInput) -> float:
    """Parameters of all routed experts (gate, up and down of every expert of every MoE layer)."""
    model = inp.model
    moe_layers = model.layers - model.dense_layers
    return moe_layers * (model.experts or 0) * 3 * model.hidden_size * (model.moe_intermediate_size or 0)


def applies(inp: EstimateInput) -> bool:
    """Whether the options split the experts (a weight path and a GPU-expert count) for a MoE model on a GPU."""
    settings = kt.read(inp.options, inp.release)
    return inp.gpu is not None and settings.split and inp.model.is_moe and bool(inp.model.experts)


def estimate(inp: EstimateInput, pool: Pool) -> GpuEstimate | None:
    """One GPU's plan with the split (:func:`applies`); the host-RAM part in ``offload`` (unit: routed experts per
    MoE layer)."""
    settings = kt.read(inp.options, inp.release)
    model = inp.model
    if not model.experts:
        return None
    if not model.moe_intermediate_size:
        return None  # which bytes stay on the GPU is unknown: not an estimate with every expert there
    whole = weight_bytes(inp)
    routed = min(routed_params(inp) / model.params, 1.0) if model.params else 0.0
    per_layer = settings.gpu_experts_per_layer(model)
    gpus = inp.tensor_parallel * inp.pipeline_parallel
    on_gpu = whole * (1 - routed) + whole * routed * per_layer / model.experts
    found = pool(inp, on_gpu / gpus / GIB)
    if found is None:
        return None
    if settings.method not in kt.METHOD_BITS:
        return found  # a method kt-kernel does not have: ENG002 reports it, nothing is sized in host RAM
    bits, basis = kt.METHOD_BITS[settings.method]
    host_experts = model.experts  # every expert, the GPU ones too (HOST_EXPERTS_SOURCE)
    moe_layers = model.layers - model.dense_layers
    host_bytes = moe_layers * host_experts * 3 * model.hidden_size * (model.moe_intermediate_size or 0) * bits / 8
    given = (
        f"kt_gpu_experts_ratio {settings.gpu_experts_ratio:g}"
        if settings.gpu_experts_ratio is not None
        else f"kt_num_gpu_experts {settings.num_gpu_experts}"
    )
    reason = (
        f"{given}; every routed expert (the GPU ones too: {HOST_EXPERTS_SOURCE}) as {settings.method}, "
        f"{bits:g} bits per weight: {basis}"
    )
    offload = Offload(
        gpu_layers=round(per_layer),
        layers=model.experts,
        host_gib=round(host_bytes / GIB, 2),
        host_total_gib=inp.host_memory_total_gib,
        reason=reason,
        unit="routed experts per MoE layer",
        contents="CPU expert weights",
    )
    note = (
        f"KTransformers: {per_layer:g} of {model.experts} routed experts per MoE layer on the GPUs, "
        f"{host_bytes / GIB:.1f} GiB of CPU experts ({settings.method}, all {model.experts} of every MoE layer) "
        "in host RAM"
    )
    return replace(found, offload=offload, notes=(*found.notes, note))
