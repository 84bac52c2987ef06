"""llama.cpp's memory: one ``--ctx-size`` KV cache shared by the slots or split among them, layers by count.

llama-server (tools/server/server.cpp) turns ``--parallel`` unset or -1 into the release's
automatic slots (4) sharing one unified KV cache of ``--ctx-size`` tokens: each sequence may
use all of it. ``--parallel N`` without ``--kv-unified`` splits it: each slot gets
``ctx-size / N`` (src/llama-context.cpp, ``n_ctx_seq``), so ``model.max_model_len`` (tokens per
sequence) renders as ``--ctx-size max_model_len × N``. ``--ctx-size`` unset is the model's
``n_ctx_train`` (per stream: ``common/fit.cpp``), and ``--fit`` (on by default) shrinks an unset
context, then the GPU layers, to leave its target free on each device. The release facts
``server_slots`` and ``context_default`` hold these per build.
"""

from __future__ import annotations

from dataclasses import dataclass

from servespec.engines.catalog import EngineRelease
from servespec.engines.gguf import integer
from servespec.knowledge.memory import EstimateInput, GpuEstimate, GpuLayers, KvCells, estimate_gguf

AUTO_SLOTS = 4
"""Slots for a release without the ``server_slots`` fact (the profile's ``batch_default``)."""


@dataclass(frozen=True)
class Slots:
    """How a spec's options lay out llama-server's slots."""

    count: int
    given: bool
    """Whether the spec sets ``--parallel`` (≥ 1); otherwise the build's automatic slots."""
    unified: bool
    """One KV cache shared by every slot (``--kv-unified``, or automatic slots)."""
    pad: int


def slots(options: dict[str, object], release: EngineRelease | None) -> Slots:
    """The slots the build runs with these options."""
    fact = release.facts.server_slots if release else None
    value = integer(options.get("parallel"))
    given = value is not None and value >= 1
    count = value if given and value is not None else (fact.auto_slots if fact else AUTO_SLOTS)
    unified = bool(fact.auto_kv_unified) if fact and not given else False
    chosen = options.get("kv_unified")
    if isinstance(chosen, bool):
        unified = chosen
    return Slots(count, given, unified, fact.pad if fact else 1)


def ctx_size(length: int, layout: Slots, release: EngineRelease | None) -> int:
    """``--ctx-size`` for ``length`` tokens per sequence: the total the build splits among split slots."""
    fact = release.facts.server_slots if release else None
    split = fact.split_per_slot if fact else True
    return length * layout.count if split and not layout.unified else length


def _pad(tokens: int, step: int) -> int:
    return -(-tokens // step) * step if step > 1 else tokens


def kv_cells(inp: EstimateInput) -> KvCells:
    """The KV cells llama-server allocates: one unified cache, or one share per slot."""
    layout = slots(inp.options, inp.release)
    length = _pad(inp.max_model_len, layout.pad)
    auto = "automatic " if not layout.given else ""
    if layout.unified:
        note = f"{layout.count} {auto}slots share one unified KV cache of {length} tokens"
        return KvCells(length, 1, note)
    fact = inp.release.facts.context_default if inp.release else None
    if inp.context_default is not None and (fact is None or fact.fit_min is None):
        # --ctx-size unset without --fit: n_ctx_train cells in all, split among the slots
        length = _pad(inp.max_model_len // layout.count, layout.pad)
    return KvCells(length, layout.count, f"{layout.count} slots × {length} tokens (--ctx-size split per slot)")


def gpu_layers(inp: EstimateInput) -> GpuLayers:
    """``--n-gpu-layers`` as given, else ``auto``: as many as ``--fit`` leaves room for (all without it)."""
    value = inp.options.get("n_gpu_layers")
    count = integer(value)
    if count is not None and count >= 0:
        return GpuLayers("all") if count >= inp.model.layers else GpuLayers("count", count, f"n_gpu_layers {count}")
    if str(value).lower() == "all" or (count is not None and count <= -2):
        return GpuLayers("all")
    fact = inp.release.facts.context_default if inp.release else None
    fit = str(inp.options.get("fit", "on")).lower() not in ("off", "false", "0", "no", "disabled")
    if fact is None or fact.fit_min is None or not fit:
        return GpuLayers("all")
    return GpuLayers(
        "auto",
        reason="--fit on: layers that do not fit stay in host memory",
        margin_gib=fact.fit_margin_mib / 1024,
        fit_context=fact.fit_min if inp.context_default is not None else None,
    )


def estimate(inp: EstimateInput) -> GpuEstimate:
    """llama-server's plan on one GPU (or the host's RAM on CPU hosts)."""
    return estimate_gguf(inp, kv_cells(inp), gpu_layers(inp))
