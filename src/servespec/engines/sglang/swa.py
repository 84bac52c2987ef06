"""SGLang's hybrid SWA pool: a full-attention pool and a sliding-window pool of ``ratio`` × its tokens.

Which models take it, the ratio's default and the token arithmetic are the release's own
(``facts.memory.hybrid_swa``, read by scripts/catalog/sglang_memory.py):

* ``layer_bytes`` (0.5.9 on): ``full = memory / (F × n_full + ratio × S × n_swa)``
  (v0.5.23 model_executor/pool_configurator.py ``HybridSWAPoolConfigurator``);
* ``layer_count`` (0.4.9 .. 0.5.8.post1): ``max_total = memory / cell`` (every layer), then
  ``full = max_total × layers / (ratio × n_swa + n_full)`` (v0.5.1 model_runner.py ``set_num_token_hybrid``);

both page-aligned, ``swa = full × ratio``. The reported ``max_total_num_tokens`` is ``full``: it is what
caps a request (``max_req_len``), so one ``max_model_len`` sequence needs the full layers at its whole
length and the sliding ones at most their window.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from servespec.engines.catalog import SglangHybridSwa, SglangMemory
from servespec.knowledge.memory import (
    EstimateInput,
    KvLayout,
    full_layer_bytes_per_token,
    kv_element_bytes,
    layer_bytes_per_token,
    number,
)

ARCHITECTURES_BY_MODEL_TYPE: dict[str, tuple[str, ...]] = {
    "gpt_oss": ("GptOssForCausalLM",),
    "llama4": ("Llama4ForConditionalGeneration",),
    "llama4_text": ("Llama4ForConditionalGeneration",),
    "gemma2": ("Gemma2ForCausalLM",),
    "gemma3": ("Gemma3ForConditionalGeneration",),
    "gemma3_text": ("Gemma3ForCausalLM", "Gemma3ForConditionalGeneration"),
    "gemma3n": ("Gemma3nForConditionalGeneration",),
    "gemma3n_text": ("Gemma3nForCausalLM", "Gemma3nForConditionalGeneration"),
    "gemma4": ("Gemma4ForConditionalGeneration",),
    "gemma4_text": ("Gemma4ForCausalLM", "Gemma4ForConditionalGeneration"),
    "olmo2": ("Olmo2ForCausalLM",),
    "mimo_v2_flash": ("MiMoV2FlashForCausalLM",),
    "step3p5": ("Step3p5ForCausalLM",),
}
"""Assumed: the ``architectures`` a model type's published configs name (transformers' model classes), for
models whose facts do not keep the config's own entry (catalogued ones). ``gemma3_text`` is the text config of
both Gemma 3 classes; each release lists both or neither, so either gives the same answer."""


@dataclass(frozen=True)
class SwaPool:
    """The two pools of one GPU: tokens of each and the bytes they take."""

    full_tokens: int
    swa_tokens: int
    ratio: float
    full_bytes_per_token: float
    """Bytes one token takes in all full-attention layers of the GPU."""
    swa_bytes_per_token: float
    """Bytes one token takes in all sliding-window layers of the GPU."""
    note: str

    def layout(self, inp: EstimateInput) -> KvLayout:
        context = inp.max_model_len
        window = min(context, inp.model.sliding_window or context)
        one = self.full_bytes_per_token * context + self.swa_bytes_per_token * window
        sequences = min(self.full_tokens / context if context else 0.0, self.swa_tokens / window if window else 0.0)
        return KvLayout(
            tokens=self.full_tokens,
            sequences=sequences,
            one_sequence_bytes=one,
            growing_bytes_per_token=self.full_bytes_per_token,
        )


def _architectures(inp: EstimateInput) -> tuple[str, ...]:
    if inp.model.architecture:
        return (inp.model.architecture,)
    return ARCHITECTURES_BY_MODEL_TYPE.get(inp.model.model_type, ())


def ratio_of(inp: EstimateInput, fact: SglangHybridSwa) -> tuple[float, str] | None:
    """The SWA:full token ratio the release applies to this model, and why; None: one pool as for full attention."""
    model = inp.model
    if fact.selection == "none" or model.is_mla or model.kv_sliding_layers == 0 or model.kv_full_layers == 0:
        return None
    if fact.disable_option and inp.options.get(fact.disable_option) is True:
        return None
    named = any(arch in fact.architectures for arch in _architectures(inp))
    if named and fact.ratio_default is not None:
        given = number(inp.options, fact.ratio_option or "", 0.0)
        ratio = given if 0 < given <= 1 else fact.ratio_default
        where = "its allowlist" if fact.selection == "allowlist" else "a sliding window in its model class"
        return ratio, f"{fact.ratio_option} {ratio:g} ({where})"
    chunked = fact.chunked_ratio_option
    if chunked and model.window_kind == "chunked" and "Llama4ForConditionalGeneration" in _architectures(inp):
        opt_in = number(inp.options, chunked, 0.0)
        chunk = model.sliding_window or 0
        if opt_in > 0 and chunk and inp.max_model_len > chunk:
            ratio = (1 - opt_in) + opt_in * chunk / inp.max_model_len
            return ratio, f"{chunked} {opt_in:g}: SWA:full ratio (1 - r) + r × {chunk} / {inp.max_model_len}"
    return None


def pool(inp: EstimateInput, memory: SglangMemory, kv_gib: float) -> SwaPool | None:
    """The release's hybrid SWA pool for this model in ``kv_gib`` GiB per GPU; None where it uses one pool."""
    fact = memory.hybrid_swa
    if fact is None:
        return None
    chosen = ratio_of(inp, fact)
    if chosen is None:
        return None
    ratio, why = chosen
    model = inp.model
    element = kv_element_bytes(inp)
    pp = inp.pipeline_parallel
    swa_bytes = math.ceil(model.kv_sliding_layers / pp) * layer_bytes_per_token(model, element, inp.tensor_parallel)
    full_bytes = math.ceil(model.kv_full_layers / pp) * full_layer_bytes_per_token(model, element, inp.tensor_parallel)
    page = max(int(number(inp.options, "page_size", 1)), 1)
    available = max(kv_gib, 0.0) * 1024**3
    if fact.arithmetic == "layer_count":
        max_total = int(available // (full_bytes + swa_bytes)) // page * page
        layers = math.ceil(model.kv_sliding_layers / pp) + math.ceil(model.kv_full_layers / pp)
        swa_layers = math.ceil(model.kv_sliding_layers / pp)
        full = int(max_total * layers / (ratio * swa_layers + (layers - swa_layers)))
    else:
        full = int(available / (full_bytes + ratio * swa_bytes))
    full = full // page * page
    swa = int(full * ratio) // page * page
    note = (
        f"hybrid SWA pool: {why}; {full:,} full-layer tokens (reported max_total_num_tokens), "
        f"{swa:,} sliding-layer tokens"
    )
    return SwaPool(full, swa, ratio, full_bytes, swa_bytes, note)
