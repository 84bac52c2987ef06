"""XInference's memory: the arithmetic of the engine it runs the model with (vLLM, SGLang).

The forwarded options are the engine's own, with XInference's defaults where the spec sets
none (``_sanitize_model_config``: vLLM ``max_num_seqs`` 256, ``gpu_memory_utilization`` 0.9,
``block_size`` 16; the release file's ``forwarded_defaults``), and the engine release is the
one the image bundles. Other engines (llama.cpp through xllamacpp, Transformers) and releases
whose image bundles no pinned engine have no estimate.
"""

from __future__ import annotations

import dataclasses

from servespec import engines
from servespec.engines.xinference import ENGINE
from servespec.engines.xinference.blocks import BLOCKS, engine_block, forwarded
from servespec.knowledge.memory import EstimateInput, GpuEstimate


def estimate(inp: EstimateInput) -> GpuEstimate | None:
    """The bundled engine's plan on one GPU, or None (no GPU, another engine, nothing bundled)."""
    block = engine_block(inp.options)
    if block not in BLOCKS or inp.release is None:
        return None
    bundled = ENGINE.bundled(inp.release, block)
    if bundled is None or bundled.release is None:
        return None
    other = engines.get(bundled.engine)
    defaults = ENGINE.catalog.forwarded_defaults(inp.release.version, block)
    options = {key: value for key, value in defaults.items() if value is not None}
    options.update(forwarded(inp.options, block))
    sub = dataclasses.replace(
        inp,
        engine=other.name,
        release=bundled.release,
        options=options,
        engine_version=bundled.version,
        kv_cache_dtype_option=other.profile.kv_cache_dtype_option,
        context_default=bundled.release.facts.context_default if inp.context_default is not None else None,
    )
    return other.estimate(sub)
