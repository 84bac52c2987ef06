"""llama.cpp's memory: one ``--ctx-size`` KV cache shared by the slots or split among them, layers by count.

llama-server (tools/server/server.cpp) turns ``--parallel`` unset or -1 into the release's
automatic slots (4) sharing one unified KV cache of ``--ctx-size`` tokens: each sequence may
use all of it. ``--parallel N`` without ``--kv-unified`` splits it: each slot gets
``ctx-size / N`` (src/llama-context.cpp, ``n_ctx_seq``), so ``model.max_model_len`` (tokens per
sequence) renders as ``--ctx-size max_model_len × N``. ``--ctx-size`` unset is the model's
``n_ctx_train`` (per stream: ``common/fit.cpp``), and ``--fit`` (on by default) shrinks an unset
context, then the GPU layers, to leave its target free on each device. The release facts
``server_slots`` and ``context_default`` hold these per build.

Sliding-window (and Llama 4 chunked) layers get their own, smaller cache (src/llama-kv-cache-iswa.cpp):
``pad(min(n_ctx_seq, n_swa × (n_seq_max if unified else 1) + n_ubatch), 256)`` cells per KV stream, unless
``--swa-full``; the release fact ``kv_cache`` holds the rule per build. A build older than the catalog takes the
cells part of it from ``kv_layout_older_builds.json`` (older_builds.py: the trees Ollama vendored, per range of
builds). A build with neither sizes every layer at the full context, and says so in the plan's notes.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path

from servespec.engines.catalog import EngineRelease, KvCacheCells
from servespec.engines.gguf import integer, pad, switched_on
from servespec.engines.llama_cpp.older_builds import OlderLayout, build_number, lookup
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


_pad = pad

V_AT_WIDEST = (
    "flash attention off: llama.cpp keeps V transposed and gives every layer the widest layer's V width "
    "(n_embd_v_gqa = !v_trans ? n_embd_v_gqa(il) : n_embd_v_gqa_max(), v_trans = !flash_attn: "
    "https://github.com/ggml-org/llama.cpp/blob/b9093/src/llama-kv-cache.cpp#L187, "
    "https://github.com/ggml-org/llama.cpp/blob/b11434/src/llama-kv-cache.cpp#L210, "
    "https://github.com/ollama/ollama/blob/0cf7794b16fab8d4561bc5f6379f6d48bd59e101/llama/llama.cpp/src/"
    "llama-kv-cache.cpp#L113 (b7209))"
)
"""Why a model whose layer kinds differ in V width (Gemma 4) takes the widest one in every layer without flash
attention; builds before b7209 predate every such model the catalogue sizes."""


def flash_attention_off(options: dict[str, object]) -> bool:
    """Whether the options turn flash attention off outright (``auto`` and unset leave it to the device)."""
    value = options.get("flash_attn")
    if isinstance(value, bool):
        return not value
    return str(value).strip().lower() in ("0", "false", "off", "no", "disabled")


MLA_V_TABLE = Path(__file__).with_name("mla_v_cache.json")


@cache
def _mla_v_reads() -> tuple[int, int, str]:
    """The last build read with a V cache for an MLA-layout GGUF, the first read without, and the sources."""
    data = json.loads(MLA_V_TABLE.read_text())
    until, since = build_number(data["v_cache_until"]), build_number(data["v_less_from"])
    assert until is not None and since is not None and until < since
    return until, since, "; ".join(f"{read['build']}: {read['source']}" for read in data["reads"])


def mla_v_cache(release: EngineRelease | None, version: str | None) -> bool | None:
    """Whether this build gives a GGUF in llama.cpp's MLA layout a V cache (``mla_v_cache.json``): False for a
    catalogued release (b9093 on, all after PR #19067) and a build from the first read without it; True up to the
    last read with it (and for a build that names no number: the layout before the PR, as Ollama vendored it); None
    for a build between the two reads (not known)."""
    until, since, _ = _mla_v_reads()
    number = build_number(release.version if release else version)
    if release is not None and (number is None or number >= since):
        return False
    if number is None or number <= until:
        return True
    return False if number >= since else None


def kv_cells(inp: EstimateInput) -> KvCells:
    """The KV cells llama-server allocates: one unified cache, or one share per slot; windowed layers apart; an
    MLA-layout GGUF's V cache as the build keeps it (:func:`mla_v_cache`)."""
    cells = _kv_cells(inp)
    if flash_attention_off(inp.options) and not inp.model.uniform_kv and not inp.model.is_mla:
        cells = replace(cells, v_at_widest=True, note=f"{cells.note}; {V_AT_WIDEST}")
    if not inp.model.gguf_mla_latent:
        return cells
    keeps = mla_v_cache(inp.release, inp.engine_version)
    if keeps is False:
        return replace(cells, mla_v_cache=False)
    if keeps is None:
        until, since, _ = _mla_v_reads()
        why = (
            f"llama.cpp {inp.engine_version}: whether it keeps a V cache for an MLA-layout GGUF is not read (b{until} "
            f"does, b{since} does not: mla_v_cache.json); sized with one"
        )
        return replace(cells, note=f"{cells.note}; {why}")
    return cells


def _kv_cells(inp: EstimateInput) -> KvCells:
    layout = slots(inp.options, inp.release)
    length = _pad(inp.max_model_len, layout.pad)
    auto = "automatic " if not layout.given else ""
    if layout.unified:
        note = f"{layout.count} {auto}slots share one unified KV cache of {length} tokens"
        return _windowed(inp, KvCells(length, 1, note), layout)
    fact = inp.release.facts.context_default if inp.release else None
    if inp.context_default is not None and (fact is None or fact.fit_min is None):
        # --ctx-size unset without --fit: n_ctx_train cells in all, split among the slots
        length = _pad(inp.max_model_len // layout.count, layout.pad)
    cells = KvCells(length, layout.count, f"{layout.count} slots × {length} tokens (--ctx-size split per slot)")
    return _windowed(inp, cells, layout)


def _windowed(inp: EstimateInput, cells: KvCells, layout: Slots) -> KvCells:
    """``cells`` with the release's cells per layer: padded full layers, sliding-window layers by their window."""
    model, release = inp.model, inp.release
    fact: KvCacheCells | OlderLayout | None = release.facts.kv_cache if release else None
    older = lookup(inp.engine_version) if fact is None and release is None else None
    if older is not None:
        fact = older.kv_cache
    if fact is None:
        build = release.version if release else inp.engine_version or "(unknown)"
        why = (
            f"build {build} read ({older.why}), its rule not expressible"
            if older is not None
            else f"no kv_cache fact for llama.cpp {build} (neither catalogued nor in kv_layout_older_builds.json)"
        )
        note = (
            ""
            if not model.sliding_layers
            else f"{model.sliding_layers} sliding-window layers counted at the full context: {why}"
        )
        return replace(cells, window_note=note)
    laid = _laid_out(inp, cells, layout, fact)
    if older is None or not laid.window_note:
        return laid
    where = f"llama.cpp {inp.engine_version}: {older.first}-{older.last} in kv_layout_older_builds.json ({older.basis})"
    return replace(laid, window_note=f"{laid.window_note}; {where}")


def _laid_out(inp: EstimateInput, cells: KvCells, layout: Slots, fact: KvCacheCells | OlderLayout) -> KvCells:
    """``cells`` laid out by the build's ``fact``."""
    model, release = inp.model, inp.release
    streams = cells.streams
    # a build whose padding follows flash attention (get_padding: flash_attn ? 256 : 32) pads by the spec's choice
    flash = fact.cell_pad_flash_attn is not None and switched_on(inp.options.get("flash_attn"))
    cell_pad = fact.cell_pad_flash_attn if flash and fact.cell_pad_flash_attn else fact.cell_pad
    full: Callable[[int], int] = lambda context: _pad(context, cell_pad) * streams  # noqa: E731
    cells = replace(cells, full_cells=full)
    swa = fact.swa
    if not (model.sliding_window and model.sliding_layers):
        return cells
    if swa is None or (swa.full_option and switched_on(inp.options.get(swa.full_option))):
        why = "--swa-full" if swa is not None else "this build has no windowed cache"
        return replace(cells, window_note=f"{model.sliding_layers} sliding-window layers at the full context ({why})")
    window = model.sliding_window * (layout.count if layout.unified else 1)
    ubatch = integer(inp.options.get(swa.batch_option)) or swa.batch_default
    batch = integer(inp.options.get("batch_size")) or integer(release.default("batch_size") if release else None)

    def windowed(context: int) -> int:
        n_ctx = context * streams
        # n_ubatch = min(n_batch, n_ubatch), n_batch = min(n_ctx, n_batch) (src/llama-context.cpp)
        step = min(ubatch, batch or ubatch, n_ctx)
        if swa.pad_inside_min:
            return min(context, _pad(window + step, swa.pad)) * streams
        return _pad(min(context, window + step), swa.pad) * streams

    note = (
        f"{model.sliding_layers} sliding-window layers × {windowed(cells.per_sequence)} cells "
        f"(n_swa {model.sliding_window}{f' × {layout.count} slots' if layout.unified else ''} + n_ubatch, "
        f"padded to {swa.pad}: {swa.source.split(' ', 1)[0]})"
    )
    return replace(cells, window_cells=windowed, window_layers=model.sliding_layers, window_note=note)


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
