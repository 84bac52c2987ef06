"""vLLM's own option limits, checked before start-up (ENG002, ENG003)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from servespec.engines.base import EngineCheck

if TYPE_CHECKING:
    from servespec.engines.base import Known

SCHEDULER = "https://github.com/vllm-project/vllm/blob/v0.11.0/vllm/config/scheduler.py"


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def checks(known: Known) -> Iterator[EngineCheck]:
    """Block sizes the CUDA attention backends refuse; a batch budget below the context without chunked prefill."""
    block = known.effective.get("block_size")
    size = _int(block.value) if block else None
    multiple = known.release.facts.block_size_multiple if known.release else None
    if block is not None and size is not None and multiple is not None and size % multiple.value:
        # FlashAttention's get_kv_cache_shape: "Block size must be a multiple of 16." (the fact's source)
        yield EngineCheck(
            "ENG002",
            block.path,
            f"block_size {size} is accepted by the parser but not by vLLM's CUDA attention backends "
            f"(multiple of {multiple.value})",
            hint=f"use a multiple of {multiple.value}, e.g. 16 or 32",
        )
    batched = known.effective.get("max_num_batched_tokens")
    chunked = known.effective.get("enable_chunked_prefill")
    tokens = _int(batched.value) if batched else None
    length = known.deployment.spec.model.max_model_len
    if batched and chunked and chunked.value is False and tokens is not None and length and tokens < length:
        # SchedulerConfig._verify_args (SCHEDULER)
        yield EngineCheck(
            "ENG003",
            batched.path,
            f"max_num_batched_tokens {tokens} is smaller than max_model_len {length} with chunked prefill disabled",
        )
