"""SGLang's recurrent-state pool beside the KV pool of a hybrid linear-attention model (``facts.memory.mamba_split``).

Every SGLang release that runs Qwen3-Next, Qwen3.5 / 3.6 (Gated DeltaNet) takes part of the memory left after
``mem_fraction_static`` for the layers' recurrent states before it sizes the full-attention KV pool
(``profile_max_num_token``; scripts/catalog/sglang_memory.py ``mamba_split`` reads how, per release):

- ``fixed_requests`` (0.5.2-0.5.3.post1): ``--max-mamba-cache-size``, else ``--max-running-requests``, else 512
  requests' states come off the rest;
- ``ratio`` (0.5.3.post2 on): ``max_mamba_cache_size = int(rest × r / (1 + r) GiB // per_req)``
  (``r`` = ``--mamba-full-memory-ratio``) unless the release's explicit sizes apply, and the KV pool gets
  ``rest − max_mamba_cache_size × per_req``; from 0.5.17 (``padding_slot``) ``int((rest × r / (1 + r) GiB − per_req)
  // per_req)`` and ``(max_mamba_cache_size + 1) × per_req`` off the rest; from 0.5.18 a multimodal model's rest
  first keeps ``multimodal_reserve_mb`` back (``mm_runtime_reservation_gb``).

One request's state (``BaseLinearStateParams.mamba_cache_per_req``, configs/mamba_utils.py of 0.5.3.post1 on;
``Qwen3NextConfig.mamba_cache_per_req`` of 0.5.2): per linear layer a conv state of ``conv_dim / tp × (kernel − 1)``
elements in the conv dtype and a temporal state of ``value_heads / tp × value_head_dim × key_head_dim`` elements in
the SSM dtype, with ``conv_dim = value_heads × value_head_dim + 2 × key_heads × key_head_dim``
(``Mamba2StateShape.create`` with ``n_groups`` = the key heads, configs/qwen3_next.py ``mamba2_cache_params``).

Afterwards the release caps ``max_running_requests`` at ``max_mamba_cache_size // ratio``
(``MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO`` = 3 with the radix cache on, 1 with it off, more with the extra
buffers of ``--mamba-scheduler-strategy extra_buffer``: model_runner.py L1657-L1665 at v0.5.4,
model_runner_kv_cache_mixin.py ``_resolve_max_num_reqs`` L853-L857 at v0.5.10; ``min(..., max_mamba_cache_size)`` at
v0.5.2 model_runner.py L1263). The plan's ``max_sequences`` is held to ``max_mamba_cache_size`` only, an upper bound
of that cap (the strategy a release resolves ``auto`` to is not read).

Not modelled (no figure): other linear-attention kinds (Mamba-1/2 of Nemotron-H, Granite, Jamba; Kimi Linear's
KDA; LFM2's short conv), whose SGLang state shapes are not read here; speculative decoding (the draft's
intermediate states come off first); DP attention (the count is split over the ranks); pipeline parallelism;
key heads the TP size does not divide; ``--enable-unified-memory`` (0.5.17+: one buffer for states and KV); a GPU
``--mm-feature-transport`` pool; the pre-capture reserve under ``SGLANG_ENABLE_POST_CAPTURE_KV_SIZING`` (0.5.16+,
off by default; environment variables are not read here); releases whose split is ``unread``."""

from __future__ import annotations

from dataclasses import dataclass

from servespec.engines.catalog import SglangMambaSplit
from servespec.knowledge.memory import GIB, EstimateInput, number
from servespec.knowledge.models import ModelFacts

DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}

KINDS = ("gated_delta_net",)
"""Linear-attention kinds whose SGLang state shape is modelled here."""


@dataclass(frozen=True)
class Split:
    """The states' share of the rest: ``requests`` states of ``per_request`` bytes; ``gib``: all it keeps from the KV
    pool (the states, the padding slot and a multimodal reserve where the release has them)."""

    requests: int
    per_request: int
    gib: float
    note: str


def kind_unmodelled(model: ModelFacts) -> str:
    """'' when SGLang's state pool is modelled for the model's linear-attention layers, else why not."""
    if model.linear_kind not in KINDS:
        return (
            f"SGLang's state shape for {model.linear_kind} layers is not modelled (only Gated DeltaNet: Qwen3-Next, "
            "Qwen3.5/3.6)"
        )
    if not all(model.linear_state):
        return "the model's Gated DeltaNet state shape is not known (no linear_* heads and dims in its facts)"
    return ""


def _ssm_dtype(inp: EstimateInput, fact: SglangMambaSplit) -> str | None:
    """The temporal state's dtype: the option, else (where the release reads it) the config's, else the default."""
    given = inp.options.get(fact.ssm_dtype_option or "mamba_ssm_dtype")
    if isinstance(given, str):
        return given
    configured = inp.model.linear_ssm_dtype
    if fact.ssm_dtype_from_config and configured in DTYPE_BYTES:
        return configured
    return fact.ssm_dtype_default


def state_bytes(inp: EstimateInput, fact: SglangMambaSplit) -> int | str:
    """Bytes of one request's recurrent states on one GPU (every linear layer), or why they are not sized."""
    conv, kernel, v_heads, k_dim, v_dim = inp.model.linear_state
    tp = inp.tensor_parallel
    k_heads = (conv - v_heads * v_dim) // (2 * k_dim) if k_dim else 0
    if not k_heads or k_heads % tp or v_heads % tp or conv % tp:
        return f"{k_heads} key heads / {v_heads} value heads not divided by TP {tp} (SGLang widens the groups)"
    ssm = _ssm_dtype(inp, fact)
    conv_bytes = DTYPE_BYTES.get(fact.conv_dtype or "")
    ssm_bytes = DTYPE_BYTES.get(ssm or "")
    if conv_bytes is None or ssm_bytes is None:
        return f"state dtypes {fact.conv_dtype} / {ssm} not known"
    per_layer = conv // tp * (kernel - 1) * conv_bytes + v_heads // tp * v_dim * k_dim * ssm_bytes
    return per_layer * inp.model.linear_layers


def _explicit(inp: EstimateInput, fact: SglangMambaSplit) -> int | None:
    """The state count the options set (None: the ratio sizes it), as the release orders them."""
    size = int(number(inp.options, fact.size_option or "max_mamba_cache_size", 0)) or None
    running = int(number(inp.options, fact.requests_option or "max_running_requests", 0)) or None
    radix_off = bool(inp.options.get("disable_radix_cache"))
    if fact.variant == "fixed_requests":
        return size or running or fact.fixed_requests
    if fact.explicit_size == "radix_off":
        return (size or running or 512) if radix_off else None
    if fact.explicit_size == "radix_off_or_option":
        return (size or running or 512) if radix_off or size else None
    if size:
        return size
    return running if radix_off and running else None


def split(inp: EstimateInput, fact: SglangMambaSplit | None, rest_gib: float) -> Split | str:
    """The states' share of ``rest_gib`` (the memory left after ``mem_fraction_static``), or why not modelled."""
    if fact is None or fact.variant == "unread":
        where = f" ({fact.source})" if fact is not None else ""
        return f"the release's split between states and KV pool is not read{where}"
    why = kind_unmodelled(inp.model)
    if why:
        return why
    if inp.options.get("speculative_algorithm"):
        return "speculative decoding's intermediate states are not modelled"
    if inp.options.get("enable_dp_attention") or inp.pipeline_parallel > 1:
        return "DP attention / pipeline parallelism split the state pool: not modelled"
    if inp.options.get("enable_unified_memory"):
        return "--enable-unified-memory (one buffer for states and KV) is not modelled"
    reserve = fact.multimodal_reserve_mb if inp.model.vision_params > 0 else None
    if reserve and inp.options.get("mm_feature_transport") in ("cuda_ipc", "cuda_vmm"):
        return "a GPU --mm-feature-transport pool is not modelled"
    per_request = state_bytes(inp, fact)
    if isinstance(per_request, str):
        return per_request
    held = (reserve or 0) / 1024  # GiB a multimodal model's rest keeps back first (0.5.18 on)
    rest_gib -= held
    requests = _explicit(inp, fact)
    how = "set"
    if requests is None:
        ratio = number(inp.options, fact.ratio_option or "mamba_full_memory_ratio", fact.ratio_default or 0.0)
        budget = max(rest_gib, 0.0) * ratio / (1 + ratio) * GIB
        requests = int((budget - per_request) // per_request if fact.padding_slot else budget // per_request)
        how = f"mamba_full_memory_ratio {ratio:g}"
    slots = requests + 1 if fact.padding_slot else requests
    gib = slots * per_request / GIB + held
    note = (
        f"recurrent states of {requests} requests ({how}): {per_request / 2**20:.2f} MiB each"
        + (" (and the pool's padding slot)" if fact.padding_slot else "")
        + (f", {reserve} MiB multimodal reserve" if reserve else "")
        + f", {gib:.2f} GiB before the KV pool (facts.memory.mamba_split)"
    )
    return Split(requests, per_request, gib, note)
