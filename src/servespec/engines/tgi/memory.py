"""TGI's warm-up sizing (server/text_generation_server/models/flash_causal_lm.py ``warmup``), per release.

Every constant is the release's own (``facts.tgi_memory`` and ``facts.context_default`` of its catalog,
read from its source by scripts/catalog/tgi_memory.py): the wiggle room and whether it cuts the free
memory (2.x) or the total (3.x), ``BLOCK_SIZE`` of the attention the launcher picks, the launcher's
``max_batch_prefill_tokens`` when it is not given (the warm-up prefill whose peak the KV cache is sized after),
the router's warm-up requests (whose KV blocks are allocated first and added back), and that prefill's peak: the
MLP's intermediates, the ``[tokens × vocab]`` logits tensors the release keeps for prefill logprobs (three with a
gathered head), and torch's cached blocks, which the free memory is read with.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from servespec.engines.catalog import TgiMemory, TgiPrefillDefault
from servespec.knowledge.gpus import GpuModel
from servespec.knowledge.memory import (
    CONTEXT_GIB,
    GIB,
    EstimateInput,
    GpuEstimate,
    cuda_total_gib,
    dtype_bytes,
    finish,
    kv_bytes_per_token,
    kv_element_bytes,
    number,
    weights_per_gpu,
)
from servespec.knowledge.models import ModelFacts


def attention(facts: TgiMemory, model: ModelFacts, gpu: GpuModel) -> str:
    """The ``ATTENTION`` the launcher sets when none is given (``resolve_attention``), or on an AMD card the one
    the release's ROCm image sets (Dockerfile_amd ``ENV ATTENTION``), which the launcher takes as given."""
    if gpu.vendor == "amd" and facts.rocm_image_attention:
        return facts.rocm_image_attention
    forced = model.model_type in facts.fallback_model_types
    if facts.flashinfer_head_dims and model.head_dim not in facts.flashinfer_head_dims:
        forced = True
    if not forced:
        return facts.default_attention
    if facts.fallback_attention == "by_capability" and gpu.compute_capability[0] < 8:
        return "paged"
    return "flashdecoding"


def block_size(facts: TgiMemory, model: ModelFacts, gpu: GpuModel) -> int:
    """``BLOCK_SIZE`` (models/globals.py) of the attention in use."""
    return facts.block_sizes.get(attention(facts, model, gpu), facts.block_sizes["paged"])


def _model_flop(model: ModelFacts) -> int | None:
    """``Config::flop``: the launcher's flops per token of a text model (None for a multimodal one)."""
    if model.vision_params or not model.intermediate_size:
        return None
    heads, kv_heads, head, hidden = model.attention_heads, model.kv_heads, model.head_dim, model.hidden_size
    intermediate = model.intermediate_size * (model.active_experts or 1)
    attention_flops = 2 * head * hidden * (4 * heads + 2 * kv_heads)  # q, attn, o + k, v
    return (attention_flops + 2 * 3 * hidden * intermediate) * model.layers


def _vram_maximum(inp: EstimateInput, rule: TgiPrefillDefault, gpu: GpuModel, fraction: float) -> int | None:
    """``vram_maximum``: tokens whose KV and MoE intermediates fit beside the weights (None: not computed)."""
    model = inp.model
    if model.quant_method or not model.intermediate_size or not model.vocab_size or rule.vram_wiggle is None:
        return None
    available = int(gpu.memory_mib * 2**20 * inp.tensor_parallel * fraction * rule.vram_wiggle)
    head, experts = model.head_dim, model.experts or 1
    layer = (
        3 * model.intermediate_size * experts * model.hidden_size
        + (model.attention_heads + 2 * model.kv_heads) * head
        + model.attention_heads * head * model.hidden_size
    )
    weights = (layer * model.layers + 2 * model.hidden_size * model.vocab_size) * 2
    per_token = model.kv_heads * 2 * head * 2 * model.layers
    per_token += (model.intermediate_size + model.intermediate_size // 2) * experts * 2 * 3
    return (available - weights) // per_token if available > weights else None


def _queried(rule: TgiPrefillDefault, gpu: GpuModel) -> bool:
    """Whether the launcher's card query (``compute_type``: ``nvidia-smi``) answers on this GPU: not on an AMD card,
    whose ROCm image has no nvidia-smi (``compute_type`` None: no ``optimal``, no ``vram_maximum``)."""
    return not (rule.card_query == "nvidia-smi" and gpu.vendor != "nvidia")


def _compute_optimal(inp: EstimateInput, rule: TgiPrefillDefault, gpu: GpuModel, fraction: float) -> int:
    if not _queried(rule, gpu):
        value = rule.by_model_type.get(inp.model.model_type, rule.tokens)
        position = inp.model.max_position_embeddings
        return min(value, position) if position else value
    card = rule.card_names.get(gpu.display_name.replace(" ", "-").lower())
    tflops = rule.card_tflops.get(card) if card else None
    flop = _model_flop(inp.model)
    optimal = tflops * 10**12 * inp.tensor_parallel // flop if tflops and flop else 0
    value = optimal if optimal > (rule.min_optimal or 0) else rule.by_model_type.get(inp.model.model_type, rule.tokens)
    if inp.model.max_position_embeddings:
        value = min(value, inp.model.max_position_embeddings)
    vram = _vram_maximum(inp, rule, gpu, fraction)
    return min(value, vram) if vram is not None else value


def prefill_tokens(inp: EstimateInput, facts: TgiMemory, gpu: GpuModel, fraction: float) -> int:
    """``--max-batch-prefill-tokens`` as given, else the launcher's default for the release."""
    given = int(number(inp.options, "max_batch_prefill_tokens", 0))
    if given:
        return given
    rule = facts.prefill_default
    position = inp.model.max_position_embeddings or rule.tokens
    if rule.variant == "input_plus":
        given_input = number(inp.options, "max_input_tokens", 0) or number(inp.options, "max_input_length", 0)
        max_input = int(given_input) or min(position, rule.tokens) - 1
        batch = int(number(inp.options, "max_batch_size", 0))
        return batch * max_input if batch else max_input + (rule.margin or 0)
    if rule.variant == "min_position":
        return min(rule.tokens, position)
    return _compute_optimal(inp, rule, gpu, fraction)


def warmup_batch_tokens(inp: EstimateInput, facts: TgiMemory, prefill: int, block: int) -> int:
    """KV tokens (whole blocks) of the router's warm-up batch, which the warm-up allocates before its prefill and
    adds back to the cache after (``facts.warmup_requests``)."""
    given = int(number(inp.options, "max_input_tokens", 0) or number(inp.options, "max_input_length", 0))
    batch = int(number(inp.options, "max_batch_size", 0))
    unset = inp.context_default is not None and inp.context_default.kv_capacity
    total: int | None = None if unset else inp.max_model_len
    if facts.warmup_requests == "input_steps":
        # the launcher's max_input_tokens when unset: min(max_position_embeddings, max_default) - 1
        rule = facts.prefill_default
        position = inp.model.max_position_embeddings or rule.tokens
        step = given or min(position, rule.tokens) - 1
    else:
        step = given or prefill
    held, sent, requests = 0, 0, 0
    while sent < prefill and step > 0:
        truncate = min(step, prefill - sent)
        tokens = max(total - 1, truncate) if total else truncate  # prompt + max_new_tokens - 1
        held += -(-tokens // block) * block
        sent += step if facts.warmup_requests == "input_steps" else truncate
        requests += 1
        if batch and requests == batch:
            break
    return held


@dataclass(frozen=True)
class WarmupPeak:
    """What the warm-up prefill leaves torch holding when the free memory is read (GiB per GPU)."""

    layers: float
    """The layers' activations at the MLP's peak (freed into torch's cache before the LM head)."""
    logits: float
    """The ``[tokens × vocab]`` tensors live at once at ``log_softmax`` (prefill logprobs)."""
    head_shard: float
    """The gathered LM head's local shard, freed into torch's cache (every later tensor is larger)."""
    held: float
    """What the free-memory reading sees of it."""
    note: str
    shortfall: float = 0.0
    """GiB the largest live set lacks in the room left: the warm-up prefill runs out of memory (TGI: "Not enough
    memory to handle ... prefill tokens")."""


def warmup_peak(inp: EstimateInput, facts: TgiMemory, prefill: int, room: float) -> WarmupPeak:
    """The warm-up prefill's activations as torch's caching allocator holds them when TGI reads the free memory.

    ``room``: the memory left to the activations (after the context, weights and the warm-up batch's KV). TGI
    reads ``mem_get_info`` right after the prefill (``free_read_cached``): blocks torch cached during it still
    count, so the layers' activations and the LM head's tensors add up, being too large to reuse one another's
    blocks. Where that sum does not fit, a ``cudaMalloc`` failed on the way and the caching allocator released
    its unused blocks before retrying (c10 ``CUDACachingAllocator``: ``release_cached_blocks``), so only the
    largest live set remains.
    """
    model = inp.model
    size = dtype_bytes(model, inp.dtype)
    shards = max(inp.tensor_parallel, 1)
    # Assumed, not from TGI: four hidden-size buffers per token beside the MLP's intermediates (residual,
    # normed input, attention output and its norm)
    intermediate = (model.moe_intermediate_size if model.is_moe else model.intermediate_size) or 4 * model.hidden_size
    layers = prefill * (facts.mlp_intermediates * intermediate / shards + 4 * model.hidden_size) * size / GIB
    vocab = model.vocab_size or 0
    one = prefill * vocab * size / GIB
    # TensorParallelHead gathers only when the vocabulary splits evenly over the shards (else the whole head
    # on every shard, a contiguous output)
    gathered = shards > 1 and vocab % shards == 0 and facts.warmup_logits_copies_sharded > 0
    copies = facts.warmup_logits_copies_sharded if gathered else facts.warmup_logits_copies
    logits = copies * one
    head_shard = one / shards if gathered else 0.0
    cached = layers + logits + head_shard
    live = max(layers, logits)
    if live > room:
        note = f"warm-up prefill {prefill} tokens: its largest live set {live:.2f} GiB exceeds the {room:.2f} GiB left"
        return WarmupPeak(layers, logits, head_shard, live, note, live - room)
    if not facts.free_read_cached:
        held, how = 0.0, "the cache emptied before the free memory is read"
    elif cached <= room:
        held, how = cached, "held in torch's cache when the free memory is read"
    else:
        held, how = live, "over the room left: torch's cache released, the largest live set counts"
    note = (
        f"warm-up prefill {prefill} tokens: layers {layers:.2f} GiB, logits {copies} x {one:.2f} GiB"
        + (f" + the head's shard {head_shard:.2f} GiB" if head_shard else "")
        + f"; {how}: {held:.2f} GiB"
    )
    return WarmupPeak(layers, logits, head_shard, held, note)


def estimate(inp: EstimateInput) -> GpuEstimate | None:
    """The KV cache TGI's warm-up sizes; None without a GPU or without the release's memory facts."""
    gpu = inp.gpu
    facts = inp.release.facts.tgi_memory if inp.release is not None else None
    if gpu is None or facts is None or inp.release is None:
        return None  # the release's arithmetic is not known: no answer rather than a guess
    if gpu.vendor != "nvidia" and not facts.rocm_free_memory:
        return None  # the release's source does not show how a ROCm build reads its free memory
    total = cuda_total_gib(gpu)
    fraction = number(inp.options, "cuda_memory_fraction", float(inp.release.default("cuda_memory_fraction") or 1.0))
    prefill = prefill_tokens(inp, facts, gpu, fraction)
    weights = weights_per_gpu(inp)
    kv_inp, kv_notes = per_head_kv_input(inp)
    per_token = kv_bytes_per_token(kv_inp.model, kv_element_bytes(inp), inp.tensor_parallel, inp.pipeline_parallel)
    block = block_size(facts, inp.model, gpu)
    warm_tokens = warmup_batch_tokens(inp, facts, prefill, block)
    warm_kv = warm_tokens * per_token / GIB
    peak = warmup_peak(inp, facts, prefill, total - CONTEXT_GIB - weights - warm_kv)
    # what the warm-up prefill leaves used (its own KV blocks aside: the warm-up adds them back)
    used = CONTEXT_GIB + weights + peak.held
    wiggle = facts.wiggle_room
    if facts.wiggle_of == "free":
        # (free - (1 - fraction) * total) * W // block bytes + warm-up blocks
        kv = wiggle * (fraction * total - used) + (1 - wiggle) * warm_kv
    else:
        kv = fraction * wiggle * total - used
    if peak.shortfall:
        kv = -peak.shortfall  # the warm-up itself fails: no KV cache
    overhead = total - weights - kv
    notes = [
        f"cuda_memory_fraction {fraction}",
        f"TGI_WIGGLE_ROOM {wiggle} of the {facts.wiggle_of} memory",
        f"max_batch_prefill_tokens {prefill}",
        f"the warm-up batch's KV: {warm_tokens} tokens ({facts.warmup_requests})",
        peak.note,
        f"attention {attention(facts, inp.model, gpu)}, BLOCK_SIZE {block}",
        *kv_notes,
    ]
    if gpu.vendor == "amd":
        notes.append(
            "ROCm build: free memory from torch.cuda.mem_get_info (HIP), the CUDA arithmetic"
            + (f"; the ROCm image's ATTENTION={facts.rocm_image_attention}" if facts.rocm_image_attention else "")
        )
    found = finish(kv_inp, total, weights, overhead, kv, block, notes, fraction)
    return _with_default_context(kv_inp, found, (total, weights, overhead, kv, block, notes, fraction))


MLA_HEAD_DEFAULTS = (128, 64)
"""``qk_nope_dim`` and ``qk_rope_dim`` as TGI's model factory reads them for DeepSeek V2/V3: from config keys the
DeepSeek configs do not have (they name ``qk_nope_head_dim``/``qk_rope_head_dim``), so its defaults 128 and 64
(server/text_generation_server/models/__init__.py, DEEPSEEK_V2:
https://github.com/huggingface/text-generation-inference/blob/v2.2.0/server/text_generation_server/models/__init__.py#L483-L501,
DEEPSEEK_V2/V3 in v3.3.7 L661-L713)."""


def per_head_kv_input(inp: EstimateInput) -> tuple[EstimateInput, list[str]]:
    """``inp`` with an MLA model as TGI lays its KV cache out, and a note; other models as they are.

    TGI caches no latent: ``FlashCausalLM`` allocates K and V of ``num_key_value_heads / tp`` heads of
    ``head_size = max(qk_nope_dim + qk_rope_dim, v_head_dim)`` (:data:`MLA_HEAD_DEFAULTS`), the values padded to it
    (flash_deepseek_v2_modeling.py ``head_pad_size``, v2.2.0 L201-L203 and L350; flash_causal_lm.py
    ``init_kv_cache``). Only the KV arithmetic reads the replaced model; the weights are counted from the real one."""
    model = inp.model
    if not model.is_mla:
        return inp, []
    size = max(sum(MLA_HEAD_DEFAULTS), model.v_head_dim or 0)
    expanded = replace(model, kv_lora_rank=None, head_dim=size, full_head_dim=None)
    note = f"MLA cached per head: K and V of {model.kv_heads} KV heads x {size} (TGI caches no latent)"
    return replace(inp, model=expanded), [note]


def _with_default_context(
    inp: EstimateInput, found: GpuEstimate, parts: tuple[float, float, float, float, int, list[str], float]
) -> GpuEstimate:
    fact = inp.context_default
    if fact is None or not fact.kv_capacity:
        return found
    # From 2.4.1 an unset max_total_tokens is what the KV cache holds after warm-up, from 3.0.1
    # at most the model's maximum (the release fact's source: flash_causal_lm.py warmup).
    model_max = inp.model.derived_max_len
    length = min(found.kv_tokens, model_max) if fact.within_model and model_max else found.kv_tokens
    bound = f", the model's maximum {model_max}" if fact.within_model and model_max else ""
    version = inp.release.version if inp.release else inp.engine_version
    basis = f"engine default for {inp.engine} {version}: {length} (min(the KV cache's {found.kv_tokens} tokens{bound}))"
    total, weights, overhead, kv, block, notes, fraction = parts
    return finish(
        replace(inp, max_model_len=max(length, 1), context_basis=basis),
        total,
        weights,
        overhead,
        kv,
        block,
        notes,
        fraction,
    )
