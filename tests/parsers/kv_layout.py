"""Lay out a model's KV cache with a vLLM release's own code (vllm/v1/core/kv_cache_utils.py).

Run INSIDE a vLLM environment made by ``scripts/parser-envs`` (not in the servespec venv)::

    python kv_layout.py CASE.json

``CASE.json`` holds ``{"config": <a model's config.json>, "available_memory": BYTES,
"block_size": N, "max_model_len": N, "max_num_batched_tokens": N}``. The per-layer
``KVCacheSpec`` dict is built from the config as the release's model runner builds it
(``get_kv_cache_spec``: one spec per attention layer: full, sliding-window or MLA; a Gated DeltaNet layer's
``MambaSpec`` from the release's own state calculators, padded to the attention page of the case's
``block_size``, in ``mamba_cache_mode`` ``none`` unless the case says ``align``, with the case's
``num_prefill_checkpoint_blocks``), then the
release's own grouping and block arithmetic lays it out for ``available_memory`` bytes. Prints
one JSON object: ``tokens`` (the figure the release logs as "GPU KV cache size: N tokens",
captured from its own log record), ``num_blocks``, ``block_size`` (of each group), ``groups``
(layers per group) and ``page_size`` (bytes per block per layer, of each group). Exit status 3
when the release has no V1 KV-cache layout code (``vllm.v1.core.kv_cache_utils``).

STAND-IN (labelled): ``VllmConfig`` is a namespace holding only the settings these functions
read (block size, max_model_len, batched tokens, hybrid-manager switch); a real ``VllmConfig``
would load the model's config from the Hub. Every number the layout produces comes from the
release's own functions and spec classes.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import json
import logging
import math
import re
import sys
import types
from pathlib import Path
from types import SimpleNamespace
from typing import Any


def _unloadable_extensions() -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    from parse_argv import _unloadable_extensions as hide  # the same GPU STUB the parser tier uses

    hide()
    if importlib.util.find_spec("llguidance") is None:
        # STAND-IN (labelled): 0.8's kv_cache_utils imports vllm.v1.request, which imports the
        # structured-output backends; one annotates a class with llguidance.LLMatcher at import time
        # and its lock file does not pin llguidance. The layout never touches a grammar.
        absent = types.ModuleType("llguidance")
        absent.__getattr__ = _placeholder  # type: ignore[attr-defined]
        sys.modules["llguidance"] = absent


def _placeholder(name: str) -> type:
    if name.startswith("__"):
        raise AttributeError(name)
    return object


def _layers(config: dict[str, Any]) -> list[tuple[str, int | None]]:
    """(kind, window) per decoder layer, as the release's model file decides it."""
    text = config.get("text_config") or config
    n = int(text["num_hidden_layers"])
    types = text.get("layer_types")
    if types:
        kinds = {"sliding_attention": "sliding", "linear_attention": "linear"}
        return [
            (kinds.get(t, "full"), int(text["sliding_window"]) if t == "sliding_attention" else None) for t in types
        ]
    interval = text.get("full_attention_interval")
    if interval and text.get("linear_num_value_heads"):  # Qwen3-Next: every interval-th layer is full attention
        return [("full", None) if (i + 1) % int(interval) == 0 else ("linear", None) for i in range(n)]
    pattern = text.get("sliding_window_pattern")
    if pattern and text.get("sliding_window"):  # Gemma 3: every pattern-th layer is global
        return [
            ("full", None) if (i + 1) % int(pattern) == 0 else ("sliding", int(text["sliding_window"]))
            for i in range(n)
        ]
    if text.get("kv_lora_rank"):
        return [("mla", None)] * n
    return [("full", None)] * n


def _linear_spec(config: dict[str, Any], case: dict[str, Any], block_size: int, page: int) -> Any:
    """A Gated DeltaNet layer's ``MambaSpec``, its shapes and dtypes from the release's own calculators
    (``MambaStateShapeCalculator.gated_delta_net_state_shape``,
    ``MambaStateDtypeCalculator.gated_delta_net_state_dtype``) and, where the release maps the architecture
    to ``Qwen3_5ForConditionalGenerationConfig``, the recurrent state's dtype that class sets from the config.
    Padded to ``page`` bytes (the attention page the block size gives)."""
    import torch

    iface = importlib.import_module("vllm.v1.kv_cache_interface")
    utils = importlib.import_module("vllm.model_executor.layers.mamba.mamba_utils")
    text = config.get("text_config") or config
    dtype = getattr(torch, str(text.get("torch_dtype") or text.get("dtype") or config.get("dtype") or "bfloat16"))
    cache = SimpleNamespace(mamba_ssm_cache_dtype="auto", mamba_cache_dtype="auto")
    configs = importlib.import_module("vllm.model_executor.models.config")
    verifier = getattr(configs, "MODELS_CONFIG_MAP", {}).get((config.get("architectures") or [""])[0])
    if verifier is not None and "mamba_ssm_dtype" in (verifier.verify_and_update_config.__doc__ or ""):
        stand_in = SimpleNamespace(  # STAND-IN: the two settings that class reads
            cache_config=cache, model_config=SimpleNamespace(hf_text_config=SimpleNamespace(**text))
        )
        verifier.verify_and_update_config(stand_in)
    shapes = utils.MambaStateShapeCalculator.gated_delta_net_state_shape(
        1,
        int(text["linear_num_key_heads"]),
        int(text["linear_num_value_heads"]),
        int(text["linear_key_head_dim"]),
        int(text["linear_value_head_dim"]),
        int(text.get("linear_conv_kernel_dim") or 4),
    )
    calculator = utils.MambaStateDtypeCalculator.gated_delta_net_state_dtype
    if "mamba_ssm_cache_dtype" in inspect.signature(calculator).parameters:
        dtypes = calculator(dtype, cache.mamba_cache_dtype, cache.mamba_ssm_cache_dtype)
    else:  # before 0.17: both states in the model's dtype
        dtypes = calculator(dtype, cache.mamba_cache_dtype)
    fields = iface.MambaSpec.__dataclass_fields__
    extra: dict[str, Any] = {}
    if "mamba_type" in fields:
        extra["mamba_type"] = _gdn_type(fields["mamba_type"].default)
    if "mamba_cache_mode" in fields:
        extra["mamba_cache_mode"] = case.get("mamba_cache_mode", "none")
    if case.get("num_prefill_checkpoint_blocks"):  # 0.33+: what the Qwen GDN layer's spec adds under FlashInfer
        extra["num_prefill_checkpoint_blocks"] = int(case["num_prefill_checkpoint_blocks"])
    return iface.MambaSpec(
        block_size=block_size, shapes=tuple(shapes), dtypes=tuple(dtypes), page_size_padded=page, **extra
    )


def _gdn_type(default: Any) -> Any:
    """The release's mamba_type for Gated DeltaNet: a string (0.10-0.11) or the backend enum's member."""
    if isinstance(default, str):
        return "linear_attention" if default == "mamba2" else default
    enum = type(default)
    return next((member for member in enum if "GDN" in member.name or "GATED" in member.name), default)


def _specs(vllm: Any, config: dict[str, Any], block_size: int, case: dict[str, Any] | None = None) -> dict[str, Any]:
    import torch

    iface = importlib.import_module("vllm.v1.kv_cache_interface")
    text = config.get("text_config") or config
    dtype = getattr(torch, str(text.get("torch_dtype") or config.get("torch_dtype") or text.get("dtype") or "bfloat16"))
    heads = int(text.get("num_key_value_heads") or text["num_attention_heads"])
    head_dim = int(text.get("head_dim") or text["hidden_size"] // text["num_attention_heads"])
    mla_spec = getattr(iface, "MLAAttentionSpec", None)
    specs: dict[str, Any] = {}
    layers = _layers(config)
    # Gemma 4 (model_executor/models/gemma4.py, 0.19.0+): full layers take global_head_dim, and with
    # attention_k_eq_v num_global_key_value_heads; the last num_kv_shared_layers layers set
    # kv_sharing_target_layer_name and get no spec (gpu_model_runner.get_kv_cache_spec skips them)
    owners = len(layers) - int(text.get("num_kv_shared_layers") or 0)
    full_dim = int(text.get("global_head_dim") or head_dim)
    full_heads = int(text.get("num_global_key_value_heads") or heads) if text.get("attention_k_eq_v") else heads
    for i, (kind, window) in enumerate(layers):
        if i >= owners:
            continue
        name = f"model.layers.{i}.self_attn.attn"
        if kind == "mla":
            size = int(text["kv_lora_rank"]) + int(text["qk_rope_head_dim"])
            if mla_spec is not None:  # 0.9+: MLAAttentionSpec (one latent per token)
                specs[name] = mla_spec(block_size=block_size, num_kv_heads=1, head_size=size, dtype=dtype)
            else:  # 0.8: FullAttentionSpec(use_mla=True)
                specs[name] = iface.FullAttentionSpec(
                    block_size=block_size, num_kv_heads=1, head_size=size, dtype=dtype, use_mla=True
                )
            continue
        extra = {"use_mla": False} if "use_mla" in iface.AttentionSpec.__dataclass_fields__ else {}
        common = {"block_size": block_size, "num_kv_heads": heads, "head_size": head_dim, "dtype": dtype, **extra}
        if kind == "linear":
            specs[f"model.layers.{i}.linear_attn"] = _linear_spec(
                config, case or {}, block_size, iface.FullAttentionSpec(**common).page_size_bytes
            )
        elif kind == "sliding":
            specs[name] = iface.SlidingWindowSpec(sliding_window=window, **common)
        else:
            specs[name] = iface.FullAttentionSpec(**{**common, "num_kv_heads": full_heads, "head_size": full_dim})
    return specs


class _Capture(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.tokens: int | None = None

    def emit(self, record: logging.LogRecord) -> None:
        found = re.search(r"KV cache size: ([\d,]+) tokens", record.getMessage())
        if found:
            self.tokens = int(found.group(1).replace(",", ""))


def main(path: str) -> int:
    case = json.loads(Path(path).read_text(encoding="utf-8"))
    _unloadable_extensions()
    import vllm

    if importlib.util.find_spec("vllm.v1") is None or importlib.util.find_spec("vllm.v1.core.kv_cache_utils") is None:
        print(f"no V1 KV-cache layout in vllm {vllm.__version__} (no vllm/v1/core/kv_cache_utils.py)", file=sys.stderr)
        return 3
    try:
        utils = importlib.import_module("vllm.v1.core.kv_cache_utils")
    except ImportError:
        # STAND-IN (labelled): 0.8's kv_cache_utils imports vllm.v1.request for the type of the
        # requests its prefix-cache hashing takes; that module pulls in the multimodal stack, which
        # needs Triton's GPU build. The layout functions never see a request: Request is a placeholder.
        request = types.ModuleType("vllm.v1.request")
        request.Request = object  # type: ignore[attr-defined]
        sys.modules["vllm.v1.request"] = request
        for name in [m for m in sys.modules if m.startswith("vllm.v1.core")]:
            del sys.modules[name]
        utils = importlib.import_module("vllm.v1.core.kv_cache_utils")
    block = int(case["block_size"])
    specs = _specs(vllm, case["config"], block, case)
    config = SimpleNamespace(  # STAND-IN: the VllmConfig settings the layout functions read
        cache_config=SimpleNamespace(block_size=block, num_gpu_blocks_override=None),
        model_config=SimpleNamespace(max_model_len=int(case["max_model_len"])),
        scheduler_config=SimpleNamespace(
            max_num_batched_tokens=int(case["max_num_batched_tokens"]),
            disable_hybrid_kv_cache_manager=bool(case.get("disable_hybrid_kv_cache_manager", False)),
        ),
        parallel_config=SimpleNamespace(
            decode_context_parallel_size=1, tensor_parallel_size=1, pipeline_parallel_size=1
        ),
    )
    if importlib.util.find_spec("vllm.v1.core.kv_cache_planning") is not None:
        # 0.2x+ read more of the config: one engine, no speculative decoding, no KV connector,
        # no HiSparse, a CUDA device, the model's own grouping off (the default grouping).
        from vllm.config.cache import _layout_from_name

        config.cache_config.enable_prefix_caching = True
        config.cache_config.prefix_cache_retention_interval = None
        config.cache_config.mamba_cache_mode = case.get("mamba_cache_mode", "none")
        config.cache_config.get_resolved_kv_cache_layout = lambda: _layout_from_name(case.get("layout", "NHD"))
        config.model_config.original_max_model_len = int(case["max_model_len"])
        config.model_config.supports_kv_cache_grouping = False
        config.scheduler_config.max_num_encoder_input_tokens = int(case["max_num_batched_tokens"])
        config.num_prefill_lookahead_tokens = 0
        # VllmConfig.max_in_flight_tokens: max_concurrent_batches (2 with async scheduling, else the
        # pipeline depth) x max_num_batched_tokens
        config.max_in_flight_tokens = int(case.get("max_in_flight_tokens") or case["max_num_batched_tokens"])
        config.speculative_config = None
        config.kv_transfer_config = None
        config.attention_config = SimpleNamespace(hisparse_config=None)
        config.device_config = SimpleNamespace(device_type="cuda")
    capture = _Capture()
    logging.getLogger("vllm").addHandler(capture)
    memory = int(case["available_memory"])
    planning = importlib.util.find_spec("vllm.v1.core.kv_cache_planning")
    if planning is not None:  # 0.2x+: grouping and sizing moved to kv_cache_planning.py (EngineCore's order)
        plan = importlib.import_module("vllm.v1.core.kv_cache_planning")
        groups = plan.get_global_kv_cache_groups(config, [specs])
        configs = plan.get_kv_cache_configs(config, [specs], [memory], groups)
        found = utils.generate_scheduler_kv_cache_config(configs)
        config.cache_config.block_size = min(g.kv_cache_spec.block_size for g in found.kv_cache_groups)
        utils.update_kv_cache_capacity(config, found)  # logs it (once per process) and stores it:
        capture.tokens = capture.tokens or config.cache_config.kv_cache_size_tokens
    elif hasattr(utils, "get_kv_cache_configs"):  # 0.10+: one config per worker
        found = utils.get_kv_cache_configs(config, [specs], [memory])[0]
    else:  # 0.8-0.9: one worker's config
        found = utils.get_kv_cache_config(config, specs, memory)
    groups = found.kv_cache_groups
    print(
        json.dumps(
            {
                "vllm": vllm.__version__,
                "tokens": capture.tokens,
                "state_bytes": [
                    sum(math.prod(shape) * dtype.itemsize for shape, dtype in zip(s.shapes, s.dtypes, strict=True))
                    for s in specs.values()
                    if hasattr(s, "shapes")
                ][:1],
                "num_blocks": found.num_blocks,
                "block_size": [g.kv_cache_spec.block_size for g in groups],
                "groups": [len(g.layer_names) for g in groups],
                "page_size": [g.kv_cache_spec.page_size_bytes for g in groups],
                "kinds": [type(g.kv_cache_spec).__name__ for g in groups],
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
