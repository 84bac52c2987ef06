"""TGI's token limits, checked before start-up the way its launcher checks them (ENG003).

The launcher requires ``max_input_tokens < max_total_tokens ≤ max_batch_total_tokens`` and
``max_batch_prefill_tokens ≤ max_batch_total_tokens``:
https://github.com/huggingface/text-generation-inference/blob/v3.3.7/launcher/src/main.rs
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from servespec.engines.base import EngineCheck

if TYPE_CHECKING:
    from servespec.engines.base import Known
    from servespec.engines.options import Setting


def _int(setting: Setting | None) -> int | None:
    value = setting.value if setting else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def checks(known: Known) -> Iterator[EngineCheck]:
    """The launcher's token-limit relations, ``max_total_tokens`` being ``model.max_model_len``."""
    found = known.effective
    total = known.deployment.spec.model.max_model_len
    max_input, batch_total, prefill = (
        _int(found.get(key)) for key in ("max_input_tokens", "max_batch_total_tokens", "max_batch_prefill_tokens")
    )
    if max_input is not None and total is not None and max_input >= total:
        yield EngineCheck(
            "ENG003",
            found["max_input_tokens"].path,
            f"max_input_tokens {max_input} must be < max_total_tokens {total} (model.max_model_len)",
        )
    if batch_total is not None and total is not None and total > batch_total:
        yield EngineCheck(
            "ENG003",
            found["max_batch_total_tokens"].path,
            f"max_total_tokens {total} (model.max_model_len) must be ≤ max_batch_total_tokens {batch_total}",
        )
    if prefill is not None and batch_total is not None and prefill > batch_total:
        yield EngineCheck(
            "ENG003",
            found["max_batch_prefill_tokens"].path,
            f"max_batch_prefill_tokens {prefill} must be ≤ max_batch_total_tokens {batch_total}",
        )
